// Fused CPU loops for the no-grad decoding path of the transformer.
//
// A batch-1 decode step of a small model is a few hundred tiny tensor ops,
// and dispatch, not arithmetic, sets its cost. These replace the longest
// chains (RMSNorm: 6 ops; rotary embedding of queries and keys plus the KV
// cache writes: ~15 ops per layer) with one pass each. They compute the same
// function as the tensor-op path in model.cc up to float rounding; the
// decode-vs-training-forward test covers both.
//
// Preconditions (checked with TORCH_CHECK): CPU, float32, contiguous, no
// autograd (callers use them only under NoGradGuard). Thread safety: pure
// functions of their inputs, except the cache tensors they write.
#ifndef RLVR_COMMON_POLICY_DECODE_KERNELS_H_
#define RLVR_COMMON_POLICY_DECODE_KERNELS_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace rlvr::policy {

// Rows of x [N, D]: x * rsqrt(mean(x^2) + eps) * weight [D].
torch::Tensor RmsNormRows(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// Splits the fused projection qkv [B*S, 3 * H * Dh] (per row: q heads, k
// heads, v heads), rotates queries and keys by the rotary table rows of
// `positions` [B, S] (table [P, Dh] float64: cos of the Dh/2 angles, then
// their sin; the pairs rotated are (i, i + Dh/2)), writes keys and values
// into cache_keys/cache_values [B, H, capacity, Dh] at positions
// [past, past + S), and returns the rotated queries times `query_scale` as
// [B, H, S, Dh].
torch::Tensor RotateIntoCache(const torch::Tensor& qkv, const torch::Tensor& positions,
                              const torch::Tensor& table, int64_t heads, int64_t past,
                              double query_scale, torch::Tensor& cache_keys,
                              torch::Tensor& cache_values);

// The general form, for grouped-query attention and per-head q/k norms:
// qkv [B*S, (heads + 2 * kv_heads) * Dh] (per row: q heads, k heads, v
// heads); the cache is [B, kv_heads, capacity, Dh]. If q_norm / k_norm
// ([Dh] float32) are defined, each query / key head is first RMS-normalised
// over Dh (eps `norm_eps`) and scaled by them, before the rotation (Qwen3).
torch::Tensor RotateIntoCache(const torch::Tensor& qkv, const torch::Tensor& positions,
                              const torch::Tensor& table, int64_t heads, int64_t kv_heads,
                              int64_t past, double query_scale, const torch::Tensor& q_norm,
                              const torch::Tensor& k_norm, double norm_eps,
                              torch::Tensor& cache_keys, torch::Tensor& cache_values);

// RotateIntoCache for the paged KV pool (model.h, KvPool): token n of qkv
// [N, (heads + 2 * kv_heads) * Dh] at positions[n] has its key and value
// written at slot slots[n] of pool_keys / pool_values [slots, kv_heads, Dh];
// returns the rotated, scaled queries as [N, heads, Dh]. positions and slots
// are int64 CPU [N].
torch::Tensor RotateIntoPool(const torch::Tensor& qkv, const torch::Tensor& positions,
                             const torch::Tensor& slots, const torch::Tensor& table, int64_t heads,
                             int64_t kv_heads, double query_scale, const torch::Tensor& q_norm,
                             const torch::Tensor& k_norm, double norm_eps, torch::Tensor& pool_keys,
                             torch::Tensor& pool_values);

// Attention of single-token queries over the paged pool, in two halves
// around a softmax the caller takes (ATen's, vectorised): query n of q
// [N, heads, Dh] (already scaled) attends to the first lengths[n] positions
// of the block table blocks[n] (block_tokens positions per block) in
// pool_keys [slots, kv_heads, Dh]; query head h reads key/value head
// h / (heads / kv_heads).
//  - PagedScores fills scores [N, heads, max length] with q . k, and -inf
//    past each query's length;
//  - PagedWeightedSum writes out [N, heads * Dh] = probs x values.
// Float32 CPU tensors, contiguous; parallel over (query, key/value head).
void PagedScores(const torch::Tensor& q, const torch::Tensor& pool_keys,
                 const std::vector<const int*>& blocks, const std::vector<int64_t>& lengths,
                 int64_t block_tokens, torch::Tensor& scores);
void PagedWeightedSum(const torch::Tensor& probs, const torch::Tensor& pool_values,
                      const std::vector<const int*>& blocks, const std::vector<int64_t>& lengths,
                      int64_t block_tokens, torch::Tensor& out);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_DECODE_KERNELS_H_
