// The policy's checks on one device (test code, not part of the library):
// the Hugging Face fixtures' log-probs in float32 and bfloat16, greedy
// tokens, KV-cache decoding against the cache-free path, bfloat16 generation
// against the training forward, and placement / weight blobs across devices.
// The bodies (policy_device_checks.cc) are written once and instantiated per
// device by a one-line file: policy_device_cpu_test.cc in the unit suite
// (policy_test) and policy_device_cuda_test.cc in the `gpu`-labelled
// policy_gpu_test, whose tests skip when LibTorch sees no CUDA device.
//
// Figures (measured differences) are printed as
// "[figure] <test>/<param>: <name>=<value>" lines, which
// scripts/gpu_check/run-checks collects into its report.
#ifndef RLVR_COMMON_POLICY_POLICY_DEVICE_CHECKS_H_
#define RLVR_COMMON_POLICY_POLICY_DEVICE_CHECKS_H_

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace rlvr::policy::device_checks {

// A device ("cpu", "cuda:0") and, for the fixture tests, a fixture name.
struct DeviceCase {
  std::string device;
  std::string fixture;  // Empty for the tests that take no fixture.
};

// "cuda:0/qwen2_f32_tied" in gtest's messages and test lists.
void PrintTo(const DeviceCase& c, std::ostream* os);

// Every fixture on `device`.
std::vector<DeviceCase> FixtureCases(const std::string& device);
// gtest parameter names: "<fixture>" (or "default" without one).
std::string CaseName(const ::testing::TestParamInfo<DeviceCase>& info);

// Skips (SetUp) when the device is CUDA and LibTorch has none.
class OnDevice : public ::testing::TestWithParam<DeviceCase> {
 protected:
  void SetUp() override;
};
class HfFixtureOnDevice : public OnDevice {};
class PolicyOnDevice : public OnDevice {};

}  // namespace rlvr::policy::device_checks

#endif  // RLVR_COMMON_POLICY_POLICY_DEVICE_CHECKS_H_
