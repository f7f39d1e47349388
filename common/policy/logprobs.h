// Per-token log-probabilities of completions under the policy (training path).
//
// Memory: only completion positions are projected to the vocabulary, in
// chunks of rows (a custom autograd function recomputes each chunk's logits
// in backward), so a batch never holds float32 logits [N, L, V]: with a 150k
// vocabulary the peak extra memory is one chunk of logits (~kChunkBytes)
// plus the [V, D] weight gradient, instead of N x L x V x 4 bytes (and as
// much again for autograd's saved softmax). docs/policy.md has the figures.
//
// Thread safety: as the model's forward (see model.h).
#ifndef RLVR_COMMON_POLICY_LOGPROBS_H_
#define RLVR_COMMON_POLICY_LOGPROBS_H_

#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "common/policy/model.h"

namespace rlvr::policy {

struct CompletionLogProbs {
  torch::Tensor logprobs;  // [N, T] carries grad when grad mode is on. 0 where mask=0.
  torch::Tensor entropy;   // [N, T] no grad; undefined unless with_entropy. 0 where mask=0.
  torch::Tensor mask;      // [N, T] float32: 1 = real completion token, 0 = padding.
};

// Bytes of logits one chunk of completion positions may take (the default).
inline constexpr int64_t kLogitChunkBytes = 32 << 20;

// Row n is prompt n followed by completion n (right-padded; positions from 0);
// T is the longest completion. Output column t of row n is
// log pi(completion[n][t] | prompt, completion[n][<t]). Prompt tokens never
// appear in the output. Prompts must be non-empty; completions may be empty
// (row all masked). Pointers are borrowed for the call. Throws c10::Error on
// token ids out of vocabulary or mismatched sizes.
//
// Log-softmax and entropy are computed in float32 (float64 for a float64
// model; bfloat16/float16 logits are widened first); logprobs/entropy have
// that dtype. All outputs (mask too) are on the model's device; a model
// computing in a reduced dtype over float32 parameters (mixed precision,
// model.h) gets float32 outputs and float32 weight gradients. `chunk_rows` positions are projected
// at a time; 0 = as many as fit in kLogitChunkBytes of float32 logits. The result does not depend
// on the chunking beyond float rounding of the weight gradient's summation order.
CompletionLogProbs ComputeCompletionLogProbs(
    Transformer& model, const std::vector<const std::vector<int>*>& prompts,
    const std::vector<const std::vector<int>*>& completions, bool with_entropy,
    int64_t chunk_rows = 0);

// The chunked projection itself: hidden [M, D] (final-normed states),
// weight [V, D], targets [M] int64 -> log softmax(hidden x weight^T)[m,
// targets[m]] as [M] (differentiable with respect to hidden and weight) and,
// when with_entropy, the entropy of each row's distribution [M] (no grad;
// undefined otherwise). Logits exist only one chunk of `chunk_rows` rows at
// a time, in forward and in backward (recomputed there). chunk_rows >= 1.
// A weight of another dtype than hidden (float32 master weights, bfloat16
// states) is cast to hidden's dtype once per pass; its gradient is then
// accumulated in float32 (not rounded to the hidden dtype).
std::pair<torch::Tensor, torch::Tensor> ChunkedTokenLogProbs(const torch::Tensor& hidden,
                                                             const torch::Tensor& weight,
                                                             const torch::Tensor& targets,
                                                             int64_t chunk_rows, bool with_entropy);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_LOGPROBS_H_
