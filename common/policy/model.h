// The policy model: a decoder-only transformer (RMSNorm, rotary position
// embeddings, SwiGLU MLP, tied input/output embeddings) in LibTorch.
//
// Two paths compute the same function:
//  - forward(tokens): the training path over a full [B, L] batch (causal);
//  - ForwardStep(...) with a KvCache: incremental decoding used by
//    Generate() (sampler.h). Rows of different prompt lengths are LEFT-padded
//    to a common length; each row has its own RoPE positions (0 at its first
//    real token) and pad keys are masked out, so a row's logits do not depend
//    on how much padding it got (up to float rounding).
//
// Parameter names (used by weights.h): "embed" [V, D] (also the output
// projection), per block i "layers.<i>.attn_norm" [D], "layers.<i>.qkv"
// [3D, D], "layers.<i>.out" [D, D], "layers.<i>.mlp_norm" [D],
// "layers.<i>.gate_up" [2F, D], "layers.<i>.down" [D, F]; "final_norm" [D].
// No biases, no buffers. Parameters are float32 unless the caller converts
// the module (tests use float64).
//
// Thread safety: like any torch::nn::Module, a model is not safe for
// concurrent mutation; concurrent forward passes under NoGradGuard are safe.
// Methods throw c10::Error on invalid arguments (shape, token ids out of
// vocabulary); callers at module boundaries convert that to absl::Status.
#ifndef RLVR_COMMON_POLICY_MODEL_H_
#define RLVR_COMMON_POLICY_MODEL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "common/run_config.h"

namespace rlvr::policy {

// Preallocated key/value storage for incremental decoding of B rows.
// Created by TransformerImpl::NewCache; owned by the caller; one per decode.
struct KvCache {
  std::vector<torch::Tensor> keys;    // Per layer [B, H, capacity, head_dim].
  std::vector<torch::Tensor> values;  // Per layer [B, H, capacity, head_dim].
  torch::Tensor key_bias;             // [B, 1, 1, capacity]: 0 or a large negative (pad keys).
  bool has_key_bias = false;          // False while key_bias is all zero: it is then skipped.
  int64_t length = 0;                 // Positions filled so far.
  int64_t capacity = 0;               // Positions allocated.
};

class TransformerImpl : public torch::nn::Module {
 public:
  // Throws c10::Error if the config is inconsistent (d_model % n_heads != 0,
  // odd head dimension, vocab_size < 1). Initialises weights from the global
  // torch RNG (normal, std = config.init_std; norms to 1).
  TransformerImpl(const rlvr::ModelConfig& config, int vocab_size);

  // tokens [B, L] int64 -> logits [B, L, V] float32 (the parameters' dtype),
  // causal, positions 0..L-1 in every row.
  torch::Tensor forward(const torch::Tensor& tokens);

  // The general path. tokens [B, S] int64; positions [B, S] int64 (RoPE
  // positions per row); key_bias [B, 1, 1, K] additive mask over the K keys
  // (K = S without cache, cache->length + S with one; undefined = none).
  // Causality within the S new tokens is always applied. With `cache`, the
  // new keys/values are written at [cache->length, cache->length + S) and
  // cache->length advances (capacity must suffice). Returns logits [B, S, V].
  torch::Tensor ForwardWithPositions(const torch::Tensor& tokens, const torch::Tensor& positions,
                                     const torch::Tensor& key_bias, KvCache* cache);

  // The final-normed hidden states [B, S, D] that ForwardWithPositions
  // projects to logits (same arguments, same cache behaviour): callers that
  // need only some positions' logits project those themselves with
  // OutputWeight() (logprobs.cc does, in chunks).
  torch::Tensor HiddenWithPositions(const torch::Tensor& tokens, const torch::Tensor& positions,
                                    const torch::Tensor& key_bias, KvCache* cache);
  // forward() without the output projection: tokens [B, L] -> [B, L, D].
  torch::Tensor Hidden(const torch::Tensor& tokens);
  // The output projection [V, D]: logits = hidden x OutputWeight()^T.
  const torch::Tensor& OutputWeight() const { return embed_; }

  // An empty cache for `batch` rows and `capacity` positions, in the
  // parameters' dtype; key_bias all zero (the caller marks pad keys and sets
  // has_key_bias).
  KvCache NewCache(int64_t batch, int64_t capacity) const;

  int vocab_size() const { return vocab_size_; }
  const ModelConfig& config() const { return config_; }
  // Total number of parameter elements.
  int64_t num_parameters() const;

 private:
  struct Layer {
    torch::Tensor attn_norm, qkv, out, mlp_norm, gate_up, down;
  };
  torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight) const;
  // Throws c10::Error unless every id is in [0, vocab_size).
  void CheckTokenRange(const torch::Tensor& tokens) const;
  // (cos, sin) [B, 1, S, head_dim/2] in the parameters' dtype for positions
  // [B, S]; in_table: every position is in [0, max_seq_len) (table lookup).
  std::pair<torch::Tensor, torch::Tensor> RopeAngles(const torch::Tensor& positions,
                                                     bool in_table) const;

  ModelConfig config_;
  int vocab_size_;
  int64_t head_dim_;
  torch::Tensor embed_;
  torch::Tensor final_norm_;
  std::vector<Layer> layers_;
  torch::Tensor inv_freq_;    // [head_dim/2] float64, not a parameter.
  torch::Tensor rope_table_;  // [max_seq_len, head_dim] float64: cos | sin of position * inv_freq_.
};
TORCH_MODULE(Transformer);

// The parameters a Transformer of this shape registers, in the order of
// named_parameters(), each float32: what sizes its weight blob without
// building one (a model test checks the two agree).
struct ParameterShape {
  std::string name;
  std::vector<int64_t> dims;
};
std::vector<ParameterShape> ParameterLayout(const rlvr::ModelConfig& config, int vocab_size);

// A validated model: checks `config` and vocab_size, seeds the global torch
// RNG with `init_seed` and constructs. InvalidArgument on a bad config.
absl::StatusOr<Transformer> CreateTransformer(const rlvr::ModelConfig& config, int vocab_size,
                                              uint64_t init_seed);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_MODEL_H_
