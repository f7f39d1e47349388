// Hugging Face model directories in and out: config.json (hf_config.h) plus
// safetensors weights (common/safetensors/safetensors.h) <-> a Transformer
// whose parameter names are the HF tensor names (model.h).
//
// Loading maps the files (mmap) and converts tensor by tensor (F32, BF16,
// F16 -> the compute dtype) straight into the model's freshly allocated,
// uninitialised parameters, so the process holds the model plus one mapped
// file, never two full copies in its own memory. Before anything is copied
// the exact set of tensors is checked: a missing tensor, an extra tensor, a
// wrong shape or an unsupported dtype is an InvalidArgument naming the file
// and the tensor. A tied model (tie_word_embeddings) whose files also hold
// lm_head.weight loads it as HF does: the output projection is the embedding
// and the stored lm_head.weight is ignored (not an error).
//
// Thread safety: free functions; the model must not be used concurrently
// while it is being loaded or exported.
#ifndef RLVR_COMMON_POLICY_HF_CHECKPOINT_H_
#define RLVR_COMMON_POLICY_HF_CHECKPOINT_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/policy/model.h"

namespace rlvr::policy {

struct HfLoadOptions {
  // float32 (CPU default) or bfloat16; the model's parameters get this dtype.
  torch::ScalarType dtype = torch::kFloat32;
  // Where the parameters live; CUDA only with a CUDA LibTorch.
  torch::Device device = torch::kCPU;
  // If > 0, overrides config.json's max_position_embeddings as the model's
  // max_seq_len (it only sizes the RoPE table; positions beyond are computed).
  int max_seq_len = 0;
};

// Builds the model described by <dir>/config.json and loads its weights.
absl::StatusOr<Transformer> LoadHfModel(const std::string& dir, const HfLoadOptions& options);

// Loads the weights of <dir> into an existing model of the same config
// (names, shapes), converting dtypes; the model is untouched on error.
absl::Status LoadHfWeights(const std::string& dir, Transformer& model);

// Writes `model` as a HF directory: config.json (from model->config(),
// keeping the other keys of `source_config_json` when given) and
// model.safetensors with every parameter in `dtype` (float32, bfloat16,
// float16), converted one tensor at a time. Tied models write no
// lm_head.weight (as HF's save_pretrained). Atomic per file.
absl::Status ExportHfModel(Transformer& model, const std::string& out_dir, torch::ScalarType dtype,
                           const std::string& source_config_json = "");

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_HF_CHECKPOINT_H_
