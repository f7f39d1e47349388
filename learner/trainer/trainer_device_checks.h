// The trainer's checks on one device (test code, not part of the library):
// a bfloat16 update on the device against float32 on the CPU, a float32
// update on the device against the CPU's, and a checkpoint written on the
// device resumed on the CPU and on the device. The bodies
// (trainer_device_checks.cc) are instantiated per device by one-line files:
// trainer_device_cpu_test.cc in trainer_test (unit) and
// trainer_device_cuda_test.cc in the `gpu`-labelled trainer_gpu_test, whose
// tests skip when LibTorch sees no CUDA device. Measured differences are
// printed as "[figure] ..." lines (scripts/gpu_check/run-checks reads them).
#ifndef RLVR_LEARNER_TRAINER_TRAINER_DEVICE_CHECKS_H_
#define RLVR_LEARNER_TRAINER_TRAINER_DEVICE_CHECKS_H_

#include <gtest/gtest.h>

#include <string>

namespace rlvr::learner::device_checks {

// The parameter is a learner.device value ("cpu", "cuda:0"). SetUp skips
// when it names CUDA and LibTorch has none.
class TrainerOnDevice : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
};

// gtest parameter names: "cpu", "cuda0".
std::string DeviceName(const ::testing::TestParamInfo<std::string>& info);

}  // namespace rlvr::learner::device_checks

#endif  // RLVR_LEARNER_TRAINER_TRAINER_DEVICE_CHECKS_H_
