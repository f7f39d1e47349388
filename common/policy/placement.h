// Where a process's model lives and in which dtype it computes: the run
// config's `learner.device` / `actor.device` (auto | cpu | cuda | cuda:N) and
// `model.compute_dtype` (auto | float32 | bfloat16), resolved once at start-up
// against the CUDA devices this LibTorch can see.
//
//  - device auto: cuda when LibTorch has CUDA and a device is visible, else
//    cpu. cuda (and auto on CUDA): device `rank % device count` (the learner
//    passes its data-parallel rank; the actor and the commands pass 0).
//    cuda:N: device N exactly.
//  - compute_dtype auto: bfloat16 on CUDA, float32 on CPU.
//  - An explicit cuda device where none is visible (a CPU-only LibTorch, or
//    N >= the device count) is a FailedPrecondition naming the config key.
//
// How a placement is applied (factory.h, PlaceModel): a model that trains
// keeps float32 parameters (and so float32 AdamW state) on the device and,
// for bfloat16, computes its forward in bfloat16 from per-use casts of them
// (model.h, set_compute_dtype); a model that only runs inference (the
// actor's, the KL reference) holds its parameters in the compute dtype.
//
// Thread safety: free functions; ResolvePlacement asks LibTorch for the
// device count (thread-safe).
#ifndef RLVR_COMMON_POLICY_PLACEMENT_H_
#define RLVR_COMMON_POLICY_PLACEMENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvr::policy {

enum class ComputeDtype { kFloat32, kBFloat16 };

struct Placement {
  int cuda_device = -1;  // CUDA device ordinal; -1 = the CPU.
  ComputeDtype dtype = ComputeDtype::kFloat32;

  bool is_cuda() const { return cuda_device >= 0; }
  // True for cpu/float32: what every process did before placements existed.
  bool is_default() const { return !is_cuda() && dtype == ComputeDtype::kFloat32; }
  // "cpu/float32", "cuda:1/bfloat16" (for logs).
  std::string ToString() const;
};

// The pure resolution (testable without a GPU): `device` and `compute_dtype`
// as in the header comment, `rank` >= 0, `cuda_devices` the visible count (0
// without CUDA). Errors are InvalidArgument for a malformed value and
// FailedPrecondition for a CUDA device that is not there; both name
// `device_key` (or "model.compute_dtype"). The syntax is
// ParseDeviceSetting's (run_config.h), which LoadRunConfig already checked.
absl::StatusOr<Placement> ResolvePlacementFor(absl::string_view device_key,
                                              absl::string_view device,
                                              absl::string_view compute_dtype, int rank,
                                              int cuda_devices);

// The same against this process: cuda_devices = LibTorch's CUDA device count
// (0 when torch::cuda::is_available() is false).
absl::StatusOr<Placement> ResolvePlacement(absl::string_view device_key, absl::string_view device,
                                           absl::string_view compute_dtype, int rank);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_PLACEMENT_H_
