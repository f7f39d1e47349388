// Per-token log-probabilities of completions under the policy (training path).
//
// Thread safety: as the model's forward (see model.h).
#ifndef RLVR_COMMON_POLICY_LOGPROBS_H_
#define RLVR_COMMON_POLICY_LOGPROBS_H_

#include <vector>

#include <torch/torch.h>

#include "common/policy/model.h"

namespace rlvr::policy {

struct CompletionLogProbs {
  torch::Tensor logprobs;  // [N, T] float32; carries grad when grad mode is on. 0 where mask=0.
  torch::Tensor entropy;   // [N, T] no grad; undefined unless with_entropy. 0 where mask=0.
  torch::Tensor mask;      // [N, T] float32: 1 = real completion token, 0 = padding.
};

// Row n is prompt n followed by completion n (right-padded; positions from 0);
// T is the longest completion. Output column t of row n is
// log pi(completion[n][t] | prompt, completion[n][<t]). Prompt tokens never
// appear in the output. Prompts must be non-empty; completions may be empty
// (row all masked). Pointers are borrowed for the call. Throws c10::Error on
// token ids out of vocabulary or mismatched sizes.
CompletionLogProbs ComputeCompletionLogProbs(Transformer& model,
                                             const std::vector<const std::vector<int>*>& prompts,
                                             const std::vector<const std::vector<int>*>& completions,
                                             bool with_entropy);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_LOGPROBS_H_
