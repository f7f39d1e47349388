// The trainer's device checks (trainer_device_checks.h) on cuda:0; they skip
// when LibTorch sees no CUDA device.
#include "learner/trainer/trainer_device_checks.h"

namespace rlvr::learner::device_checks {

INSTANTIATE_TEST_SUITE_P(Cuda, TrainerOnDevice, ::testing::Values("cuda:0"), DeviceName);

}  // namespace rlvr::learner::device_checks
