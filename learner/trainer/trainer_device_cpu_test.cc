// The trainer's device checks (trainer_device_checks.h) on the CPU.
#include "learner/trainer/trainer_device_checks.h"

namespace rlvr::learner::device_checks {

INSTANTIATE_TEST_SUITE_P(Cpu, TrainerOnDevice, ::testing::Values("cpu"), DeviceName);

}  // namespace rlvr::learner::device_checks
