// The policy model: a decoder-only transformer (RMSNorm, rotary position
// embeddings, SwiGLU MLP) in LibTorch, in two layouts:
//  - the built-in model (config.arch == "builtin"): tied input/output
//    embeddings, fused qkv and gate_up projections, no biases;
//  - the Hugging Face architectures llama, qwen2 and qwen3 (hf_config.h):
//    grouped-query attention (n_kv_heads), an explicit head_dim, optional
//    q/k/v, o and MLP biases, Qwen3's per-head q/k RMSNorm before RoPE, llama3
//    RoPE frequency scaling, tied or untied lm_head, computed as HF's
//    modeling_{llama,qwen2,qwen3}.py compute them (docs/policy.md).
//
// Two paths compute the same function:
//  - forward(tokens): the training path over a full [B, L] batch (causal);
//  - ForwardStep(...) with a KvCache: incremental decoding used by
//    Generate() (sampler.h). Rows of different prompt lengths are LEFT-padded
//    to a common length; each row has its own RoPE positions (0 at its first
//    real token) and pad keys are masked out, so a row's logits do not depend
//    on how much padding it got (up to float rounding).
//
// Parameter names (used by weights.h; ParameterLayout lists them).
// Built-in: "embed" [V, D] (also the output projection), per block i
// "layers.<i>.attn_norm" [D], "layers.<i>.qkv" [3D, D], "layers.<i>.out"
// [D, D], "layers.<i>.mlp_norm" [D], "layers.<i>.gate_up" [2F, D],
// "layers.<i>.down" [D, F]; "final_norm" [D]. HF architectures: exactly the
// HF tensor names, "model.embed_tokens.weight", per block
// "model.layers.<i>.self_attn.{q,k,v,o}_proj.{weight,bias}",
// "model.layers.<i>.self_attn.{q,k}_norm.weight",
// "model.layers.<i>.mlp.{gate,up,down}_proj.{weight,bias}",
// "model.layers.<i>.{input,post_attention}_layernorm.weight",
// "model.norm.weight" and "lm_head.weight" when untied. No buffers.
// Parameters are float32 unless the caller converts the module (tests use
// float64; HF models may run in bfloat16: norms, softmax and RoPE angles are
// then computed in float32 as HF does).
//
// Mixed precision (set_compute_dtype): a model with float32 parameters may
// compute in bfloat16 (or float16). Every parameter is then cast to that
// dtype where it is used (differentiably: gradients reach the float32
// parameters in float32), so the forward is the same computation as that of
// the model converted to the compute dtype, which is what an actor holding
// bfloat16 weights runs. This is the learner's scheme instead of LibTorch
// autocast (docs/policy.md, "Devices and dtypes").
//
// Thread safety: like any torch::nn::Module, a model is not safe for
// concurrent mutation; concurrent forward passes under NoGradGuard are safe.
// Methods throw c10::Error on invalid arguments (shape, token ids out of
// vocabulary); callers at module boundaries convert that to absl::Status.
#ifndef RLVR_COMMON_POLICY_MODEL_H_
#define RLVR_COMMON_POLICY_MODEL_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/run_config.h"

namespace rlvr::policy {

// Preallocated key/value storage for incremental decoding of B rows.
// Created by TransformerImpl::NewCache; owned by the caller; one per decode.
struct KvCache {
  std::vector<torch::Tensor> keys;    // Per layer [B, n_kv_heads, capacity, head_dim].
  std::vector<torch::Tensor> values;  // Per layer [B, n_kv_heads, capacity, head_dim].
  torch::Tensor key_bias;             // [B, 1, 1, capacity]: 0 or a large negative (pad keys).
  bool has_key_bias = false;          // False while key_bias is all zero: it is then skipped.
  int64_t length = 0;                 // Positions filled so far.
  int64_t capacity = 0;               // Positions allocated.
};

// The continuous-batching engine's KV cache (engine.h): a pool of fixed
// blocks of positions, allocated once, shared by every row through block
// tables (engine_scheduler.h decides which row holds which block).
// Position p of a row whose block table is `blocks` lives at slot
// blocks[p / block_tokens] * block_tokens + p % block_tokens.
struct KvPool {
  std::vector<torch::Tensor> keys;  // Per layer [num_blocks * block_tokens, n_kv_heads, head_dim].
  std::vector<torch::Tensor> values;  // Same.
  int64_t num_blocks = 0;
  int64_t block_tokens = 0;
  // Bytes of one block over every layer, keys and values.
  int64_t block_bytes() const;
};

// One sequence of a paged pass (HiddenPaged): `count` new tokens at
// positions [past, past + count), attending to the positions [0, past) held
// in its blocks and causally to each other; their keys and values are
// written into its blocks too. `blocks` (borrowed for the call) covers
// positions [0, past + count).
struct PagedSeq {
  int64_t past = 0;
  int64_t count = 0;
  const int* blocks = nullptr;
  int64_t num_blocks = 0;
};

class TransformerImpl : public torch::nn::Module {
 public:
  // Throws c10::Error if the config is inconsistent (ValidateModelConfig,
  // vocab_size < 1, config.vocab_size set and different). With `init_seed`,
  // initialises weights from a torch generator of its own seeded with it
  // (normal, std = config.init_std; norms to 1, biases to 0; the process-wide
  // torch RNG is neither read nor advanced, so models built concurrently are
  // each deterministic); without, the parameters are allocated uninitialised
  // with `empty_options` (dtype, device), for a loader that fills every one.
  TransformerImpl(const rlvr::ModelConfig& config, int vocab_size,
                  std::optional<uint64_t> init_seed,
                  const torch::TensorOptions& empty_options = torch::TensorOptions());

  // tokens [B, L] int64 -> logits [B, L, V] (the compute dtype),
  // causal, positions 0..L-1 in every row.
  torch::Tensor forward(const torch::Tensor& tokens);

  // The general path. tokens [B, S] int64; positions [B, S] int64 (RoPE
  // positions per row, any non-negative value); key_bias [B, 1, 1, K]
  // additive mask over the K keys (K = S without cache, cache->length + S
  // with one; undefined = none). Causality within the S new tokens is always
  // applied. With `cache`, the new keys/values are written at
  // [cache->length, cache->length + S) and cache->length advances (capacity
  // must suffice). Returns logits [B, S, V].
  torch::Tensor ForwardWithPositions(const torch::Tensor& tokens, const torch::Tensor& positions,
                                     const torch::Tensor& key_bias, KvCache* cache);

  // The paged pass of the continuous-batching engine: the sequences' new
  // tokens (`tokens`, sequence after sequence, sum of counts) through the
  // model, keys and values written into `pool`, attention over each
  // sequence's blocks. Returns the final-normed hidden states of each
  // sequence's last token, [seqs.size(), D] in the compute dtype. The same
  // function as ForwardWithPositions up to float rounding. `fused`: allow
  // the CPU float32 loops of decode_kernels.h (false: tensor ops only, any
  // device or dtype; tests compare the two).
  torch::Tensor HiddenPaged(const std::vector<int64_t>& tokens, const std::vector<PagedSeq>& seqs,
                            KvPool& pool, bool fused = true);
  // A pool of `num_blocks` blocks of `block_tokens` positions for this
  // model's layers and key/value heads, on its device in its compute dtype,
  // zero-filled.
  KvPool NewKvPool(int64_t num_blocks, int64_t block_tokens) const;

  // The final-normed hidden states [B, S, D] that ForwardWithPositions
  // projects to logits (same arguments, same cache behaviour): callers that
  // need only some positions' logits project those themselves with
  // OutputWeight() (logprobs.cc does, in chunks).
  torch::Tensor HiddenWithPositions(const torch::Tensor& tokens, const torch::Tensor& positions,
                                    const torch::Tensor& key_bias, KvCache* cache);
  // forward() without the output projection: tokens [B, L] -> [B, L, D].
  torch::Tensor Hidden(const torch::Tensor& tokens);
  // The output projection [V, D]: logits = hidden x OutputWeight()^T (the
  // embedding when tied, lm_head otherwise). The parameter itself: under
  // mixed precision the caller casts it to the hidden states' dtype.
  const torch::Tensor& OutputWeight() const { return lm_head_.defined() ? lm_head_ : embed_; }

  // The dtype the forward computes in: the parameters' dtype unless
  // set_compute_dtype chose another. Hidden states, logits and KV caches
  // have this dtype.
  torch::ScalarType compute_dtype() const;
  // Float32 parameters computing in a reduced dtype (kBFloat16 or kHalf), or
  // the parameters' own dtype (undoes it). Throws c10::Error for any other
  // combination. Not synchronised with forward passes (set it before them).
  void set_compute_dtype(torch::ScalarType dtype);

  // An empty cache for `batch` rows and `capacity` positions, in the
  // compute dtype and the parameters' device ([B, n_kv_heads, capacity, head_dim] per
  // layer); key_bias all zero (the caller marks pad keys and sets
  // has_key_bias).
  KvCache NewCache(int64_t batch, int64_t capacity) const;

  int vocab_size() const { return vocab_size_; }
  const ModelConfig& config() const { return config_; }
  bool is_hf() const { return hf_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t n_kv_heads() const { return n_kv_heads_; }
  // Total number of parameter elements.
  int64_t num_parameters() const;

  // Rows of the RoPE angle table: min(max_seq_len, kMaxRopeTable); positions
  // beyond it are computed (float64) when needed.
  static constexpr int64_t kMaxRopeTable = 8192;

 private:
  struct Layer {
    torch::Tensor attn_norm, mlp_norm;
    torch::Tensor qkv, gate_up;                     // Built-in (fused).
    torch::Tensor q, k, v, q_bias, k_bias, v_bias;  // HF (biases may be undefined).
    torch::Tensor out, out_bias;
    torch::Tensor q_norm, k_norm;                // Qwen3.
    torch::Tensor gate, up, gate_bias, up_bias;  // HF.
    torch::Tensor down, down_bias;
  };
  torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight) const;
  // Layer pieces shared by HiddenWithPositions and HiddenPaged. The query,
  // key and value projections of xn [N, D]: ([N, H*Dh], [N, KV*Dh],
  // [N, KV*Dh]) and, for the built-in model, the fused [N, (H+2KV)*Dh]
  // product they are views of (undefined for HF models).
  struct Qkv {
    torch::Tensor q, k, v, fused;
  };
  Qkv ProjectQkv(const Layer& l, const torch::Tensor& xn) const;
  // attn [N, H*Dh] -> the layer's output x [N, D]: output projection into
  // the residual x, then the MLP block. `fused_norm`: RmsNormRows.
  torch::Tensor FinishLayer(const Layer& l, const torch::Tensor& attn, const torch::Tensor& x,
                            bool fused_norm) const;
  // `param` in the compute dtype: itself unless mixed precision is on
  // (undefined stays undefined).
  torch::Tensor InComputeDtype(const torch::Tensor& param) const;
  // Throws c10::Error unless every id is in [0, vocab_size).
  void CheckTokenRange(const torch::Tensor& tokens) const;
  // (cos, sin) [B, 1, S, head_dim/2] in the compute dtype (float32 for
  // bfloat16 parameters) for positions [B, S]; in_table: every position is in
  // [0, rope_table_ rows) (table lookup).
  std::pair<torch::Tensor, torch::Tensor> RopeAngles(const torch::Tensor& positions,
                                                     bool in_table) const;

  ModelConfig config_;
  int vocab_size_;
  bool hf_;
  int64_t head_dim_;
  int64_t n_kv_heads_;
  torch::Tensor embed_;
  torch::Tensor final_norm_;
  torch::Tensor lm_head_;  // Untied HF models only.
  std::vector<Layer> layers_;
  torch::Tensor inv_freq_;  // [head_dim/2] float64 (llama3-scaled if configured), not a parameter.
  torch::Tensor rope_table_;  // [rows, head_dim] float64: cos | sin of position * inv_freq_.
  // set_compute_dtype's choice when it differs from the parameters' dtype.
  c10::optional<torch::ScalarType> compute_dtype_;
};
TORCH_MODULE(Transformer);

// The parameters a Transformer of this shape registers, in the order of
// named_parameters(), each float32: what sizes its weight blob without
// building one, and the tensors a HF checkpoint must hold (a model test
// checks the two agree).
struct ParameterShape {
  std::string name;
  std::vector<int64_t> dims;
};
std::vector<ParameterShape> ParameterLayout(const rlvr::ModelConfig& config, int vocab_size);

// A validated model: checks `config` (ValidateModelConfig) and vocab_size,
// and constructs it randomly initialised from `init_seed` (the same weights
// for the same seed, whatever else the process draws; LoadHfModel in
// hf_checkpoint.h loads a HF directory).
// InvalidArgument on a bad config.
absl::StatusOr<Transformer> CreateTransformer(const rlvr::ModelConfig& config, int vocab_size,
                                              uint64_t init_seed);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_MODEL_H_
