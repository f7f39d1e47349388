#include "common/policy/factory.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/policy/hf_checkpoint.h"
#include "common/policy/hf_config.h"
#include "common/policy/model.h"
#include "common/policy/placement.h"
#include "common/tokenizer/hf_tokenizer.h"

namespace rlvr::policy {

bool IsHfPolicy(const ModelConfig& config) { return !config.hf_path.empty(); }

absl::StatusOr<ResolvedPolicy> ResolvePolicy(const ModelConfig& config) {
  ResolvedPolicy out;
  if (!IsHfPolicy(config)) {
    out.model = config;
    out.tokenizer = MakeCharTokenizer();
    ASSIGN_OR_RETURN(out.vocab_size, ModelVocabSize(config, out.tokenizer->vocab_size()));
    return out;
  }
  const std::string& dir = config.hf_path;
  if (!std::filesystem::exists(std::filesystem::path(dir) / "config.json")) {
    return absl::NotFoundError(
        absl::StrCat("model.hf_path ", dir,
                     ": no config.json (a Hugging Face model directory is expected; "
                     "configs/tiny-qwen3.yaml's is made by `bash scripts/make-tiny-qwen3`)"));
  }
  ASSIGN_OR_RETURN(HfModelInfo info, ReadHfModelInfo(dir));
  out.model = info.config;
  // model.max_seq_len stays the run's cap on prompt + completion tokens
  // (config.json's max_position_embeddings is the model's own limit).
  out.model.max_seq_len = std::min(config.max_seq_len, info.config.max_seq_len);
  out.model.compute_dtype = config.compute_dtype;  // A run setting, not config.json's.
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = LoadTokenizer(dir);
  if (!tokenizer.ok()) {
    return absl::Status(
        tokenizer.status().code(),
        absl::StrCat("model.hf_path ", dir, ": the tokenizer: ", tokenizer.status().message()));
  }
  out.tokenizer = std::move(*tokenizer);
  ASSIGN_OR_RETURN(out.vocab_size, ModelVocabSize(out.model, out.tokenizer->vocab_size()));
  return out;
}

namespace {

torch::ScalarType TorchDtype(ComputeDtype dtype) {
  return dtype == ComputeDtype::kBFloat16 ? torch::kBFloat16 : torch::kFloat32;
}

torch::Device TorchDevice(const Placement& placement) {
  return placement.is_cuda()
             ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(placement.cuda_device))
             : torch::Device(torch::kCPU);
}

// The parameters' dtype for `use`.
torch::ScalarType ParameterDtype(const Placement& placement, PolicyUse use) {
  return use == PolicyUse::kInference ? TorchDtype(placement.dtype) : torch::kFloat32;
}

}  // namespace

absl::Status PlaceModel(const Placement& placement, PolicyUse use, Transformer& model) {
  try {
    const torch::Device device = TorchDevice(placement);
    const torch::ScalarType params = ParameterDtype(placement, use);
    const torch::Tensor& probe = model->OutputWeight();
    if (probe.device() != device || probe.scalar_type() != params) model->to(device, params);
    model->set_compute_dtype(TorchDtype(placement.dtype));
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("placing the model on ", placement.ToString(), ": ",
                                            e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Transformer> CreateEmptyPolicy(const ModelConfig& model, int vocab_size,
                                              const Placement& placement, PolicyUse use) {
  if (absl::Status valid = ValidateModelConfig(model); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("model: ", valid.message()));
  }
  try {
    Transformer out(model, vocab_size, /*init_seed=*/std::nullopt,
                    torch::TensorOptions()
                        .dtype(ParameterDtype(placement, use))
                        .device(TorchDevice(placement)));
    out->set_compute_dtype(TorchDtype(placement.dtype));
    return out;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("model on ", placement.ToString(), ": ", e.what_without_backtrace()));
  }
}

absl::StatusOr<Transformer> CreateInitialPolicy(const ModelConfig& model, int vocab_size,
                                                uint64_t init_seed, const Placement& placement,
                                                PolicyUse use) {
  if (!IsHfPolicy(model)) {
    ASSIGN_OR_RETURN(Transformer created, CreateTransformer(model, vocab_size, init_seed));
    RETURN_IF_ERROR(PlaceModel(placement, use, created));
    return created;
  }
  HfLoadOptions options;
  options.max_seq_len = model.max_seq_len;
  options.dtype = ParameterDtype(placement, use);
  options.device = TorchDevice(placement);
  ASSIGN_OR_RETURN(Transformer loaded, LoadHfModel(model.hf_path, options));
  RETURN_IF_ERROR(PlaceModel(placement, use, loaded));
  if (loaded->vocab_size() != vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("model.hf_path ", model.hf_path, ": vocabulary ",
                                                   loaded->vocab_size(), " != expected ",
                                                   vocab_size));
  }
  return loaded;
}

}  // namespace rlvr::policy
