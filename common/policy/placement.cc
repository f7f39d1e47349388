#include "common/policy/placement.h"

#include <torch/torch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/config/run_config.h"

namespace rlvr::policy {

std::string Placement::ToString() const {
  return absl::StrCat(is_cuda() ? absl::StrCat("cuda:", cuda_device) : "cpu", "/",
                      dtype == ComputeDtype::kBFloat16 ? "bfloat16" : "float32");
}

absl::StatusOr<Placement> ResolvePlacementFor(absl::string_view device_key,
                                              absl::string_view device,
                                              absl::string_view compute_dtype, int rank,
                                              int cuda_devices) {
  ASSIGN_OR_RETURN(DeviceSetting setting, ParseDeviceSetting(device_key, device));
  Placement out;
  using Kind = DeviceSetting::Kind;
  if (setting.kind == Kind::kCuda && cuda_devices <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "config key '", device_key, "': ", device,
        " requested, but CUDA is not available to this process (a CPU-only LibTorch or no "
        "visible GPU); use auto or cpu"));
  }
  if (setting.kind == Kind::kCuda && setting.index >= cuda_devices) {
    return absl::FailedPreconditionError(absl::StrCat("config key '", device_key, "': ", device,
                                                      " requested, but only ", cuda_devices,
                                                      " CUDA device(s) are visible"));
  }
  if (setting.kind == Kind::kCuda || (setting.kind == Kind::kAuto && cuda_devices > 0)) {
    out.cuda_device = setting.index >= 0 ? setting.index : std::max(0, rank) % cuda_devices;
  }
  if (compute_dtype == "bfloat16" || (compute_dtype == "auto" && out.is_cuda())) {
    out.dtype = ComputeDtype::kBFloat16;
  } else if (compute_dtype != "float32" && compute_dtype != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("config key 'model.compute_dtype': expected auto, float32 or bfloat16, got '",
                     compute_dtype, "'"));
  }
  return out;
}

absl::StatusOr<Placement> ResolvePlacement(absl::string_view device_key, absl::string_view device,
                                           absl::string_view compute_dtype, int rank) {
  const int devices =
      torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  return ResolvePlacementFor(device_key, device, compute_dtype, rank, devices);
}

}  // namespace rlvr::policy
