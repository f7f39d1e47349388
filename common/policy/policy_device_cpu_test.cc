// The policy's device checks (policy_device_checks.h) on the CPU.
#include "common/policy/policy_device_checks.h"

namespace rlvr::policy::device_checks {

INSTANTIATE_TEST_SUITE_P(Cpu, HfFixtureOnDevice, ::testing::ValuesIn(FixtureCases("cpu")),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Cpu, PolicyOnDevice, ::testing::Values(DeviceCase{"cpu", ""}), CaseName);

}  // namespace rlvr::policy::device_checks
