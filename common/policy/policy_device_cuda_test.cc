// The policy's device checks (policy_device_checks.h) on cuda:0; they skip
// when LibTorch sees no CUDA device.
#include "common/policy/policy_device_checks.h"

namespace rlvr::policy::device_checks {

INSTANTIATE_TEST_SUITE_P(Cuda, HfFixtureOnDevice, ::testing::ValuesIn(FixtureCases("cuda:0")),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Cuda, PolicyOnDevice, ::testing::Values(DeviceCase{"cuda:0", ""}),
                         CaseName);

}  // namespace rlvr::policy::device_checks
