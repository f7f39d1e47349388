#include "common/policy/hf_checkpoint.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/policy/hf_config.h"
#include "common/safetensors/safetensors.h"

namespace rlvr::policy {
namespace {

namespace st = ::rlvr::safetensors;

torch::ScalarType TorchDtype(st::Dtype d) {
  switch (d) {
    case st::Dtype::kF32:
      return torch::kFloat32;
    case st::Dtype::kBF16:
      return torch::kBFloat16;
    case st::Dtype::kF16:
      return torch::kHalf;
  }
  return torch::kFloat32;
}

std::string ShapeText(c10::IntArrayRef shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

// Tensors HF itself ignores when loading: older Llama checkpoints saved the
// RoPE inverse frequencies as a buffer.
bool IgnoredByHf(const std::string& name) {
  return absl::EndsWith(name, ".self_attn.rotary_emb.inv_freq");
}

}  // namespace

absl::Status LoadHfWeights(const std::string& dir, Transformer& model) {
  ASSIGN_OR_RETURN(st::Checkpoint ckpt, st::Checkpoint::Open(dir));
  const bool tied = !model->is_hf() || model->config().tie_embeddings;
  auto params = model->named_parameters(/*recurse=*/true);
  // Validate the whole set first: the model is untouched on error.
  std::set<std::string> expected;
  for (const auto& p : params) {
    const st::Checkpoint::Entry* e = ckpt.Find(p.key());
    if (e == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(ckpt.source(), ": missing tensor '", p.key(),
                                                     "' (shape ", ShapeText(p.value().sizes()),
                                                     ")"));
    }
    if (c10::IntArrayRef(e->info->shape) != p.value().sizes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          e->file->path(), ": tensor '", p.key(), "' has shape ", ShapeText(e->info->shape),
          ", the model (config.json) expects ", ShapeText(p.value().sizes())));
    }
    expected.insert(p.key());
  }
  for (const auto& [name, e] : ckpt.tensors()) {
    if (expected.count(name) || IgnoredByHf(name)) continue;
    // Tied: HF computes the output with the embedding and ignores a stored
    // lm_head.weight.
    if (tied && name == "lm_head.weight") continue;
    return absl::InvalidArgumentError(absl::StrCat(e.file->path(), ": unexpected tensor '", name,
                                                   "' (not a parameter of this ",
                                                   model->config().arch, " model)"));
  }
  torch::NoGradGuard no_grad;
  for (auto& p : params) {
    const st::Checkpoint::Entry* e = ckpt.Find(p.key());
    const absl::string_view bytes = e->file->Data(*e->info);
    const torch::ScalarType src_dtype = TorchDtype(e->info->dtype);
    const int elem = st::DtypeBytes(e->info->dtype);
    torch::Tensor src;
    if (reinterpret_cast<uintptr_t>(bytes.data()) % elem == 0) {
      src = torch::from_blob(const_cast<char*>(bytes.data()), e->info->shape,
                             torch::TensorOptions().dtype(src_dtype));
    } else {
      // A header length that is not a multiple of 8 misaligns the data.
      src = torch::empty(e->info->shape, torch::TensorOptions().dtype(src_dtype));
      std::memcpy(src.data_ptr(), bytes.data(), bytes.size());
    }
    p.value().copy_(src);
    e->file->Release(*e->info);
  }
  return absl::OkStatus();
}

absl::StatusOr<Transformer> LoadHfModel(const std::string& dir, const HfLoadOptions& options) {
  ASSIGN_OR_RETURN(HfModelInfo info, ReadHfModelInfo(dir));
  if (options.max_seq_len > 0) info.config.max_seq_len = options.max_seq_len;
  if (options.dtype != torch::kFloat32 && options.dtype != torch::kBFloat16 &&
      options.dtype != torch::kFloat64) {
    return absl::InvalidArgumentError("LoadHfModel: dtype must be float32, bfloat16 or float64");
  }
  Transformer model(nullptr);
  try {
    model = Transformer(info.config, info.config.vocab_size, /*init_seed=*/std::nullopt,
                        torch::TensorOptions().dtype(options.dtype).device(options.device));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "/config.json: ", e.what()));
  }
  RETURN_IF_ERROR(LoadHfWeights(dir, model));
  return model;
}

absl::Status ExportHfModel(Transformer& model, const std::string& out_dir, torch::ScalarType dtype,
                           const std::string& source_config_json) {
  std::string dtype_name;
  st::Dtype st_dtype;
  if (dtype == torch::kFloat32) {
    dtype_name = "float32";
    st_dtype = st::Dtype::kF32;
  } else if (dtype == torch::kBFloat16) {
    dtype_name = "bfloat16";
    st_dtype = st::Dtype::kBF16;
  } else if (dtype == torch::kHalf) {
    dtype_name = "float16";
    st_dtype = st::Dtype::kF16;
  } else {
    return absl::InvalidArgumentError("export: dtype must be float32, bfloat16 or float16");
  }
  if (!model->is_hf()) {
    return absl::InvalidArgumentError("export: the built-in model has no Hugging Face layout");
  }
  ModelConfig config = model->config();
  config.vocab_size = model->vocab_size();
  config.hf_path.clear();
  ASSIGN_OR_RETURN(std::string config_json,
                   WriteHfModelConfigJson(config, dtype_name, source_config_json));
  auto params = model->named_parameters(/*recurse=*/true);
  std::vector<st::TensorSpec> specs;
  for (const auto& p : params) {
    specs.push_back({p.key(), st_dtype, p.value().sizes().vec()});
  }
  torch::Tensor holder;
  auto bytes = [&](size_t i) -> absl::StatusOr<absl::string_view> {
    torch::NoGradGuard no_grad;
    holder = params[i].value().detach().to(torch::kCPU, dtype).contiguous();
    return absl::string_view(static_cast<const char*>(holder.data_ptr()), holder.nbytes());
  };
  const std::filesystem::path dir(out_dir);
  RETURN_IF_ERROR(
      st::WriteSafetensors((dir / "model.safetensors").string(), specs, bytes, {{"format", "pt"}}));
  return st::WriteTextFileAtomic((dir / "config.json").string(), config_json);
}

}  // namespace rlvr::policy
