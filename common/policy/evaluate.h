// Held-out evaluation of a policy: greedy exact-match accuracy and pass@k.
//
// Thread safety: runs the model under NoGradGuard; no concurrent writer of
// the weights. Uses the caller's torch thread setting. Torch-free header.
#ifndef RLVR_COMMON_POLICY_EVALUATE_H_
#define RLVR_COMMON_POLICY_EVALUATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr::policy {

class Transformer;  // model.h

// One prompt's greedy completion and its verdict.
struct GreedyCompletion {
  std::string completion;  // Decoded completion text (EOS not included).
  std::string reason;      // The verifier's reason.
  bool correct = false;    // Reward 1.
};

struct EvalResult {
  double greedy_accuracy = 0.0;          // Fraction of prompts whose greedy completion verifies.
  double pass_at_k = 0.0;                // Fraction with >= 1 of k samples correct (0 if k == 0).
  double sample_accuracy = 0.0;          // Mean reward-1 fraction over all k samples (0 if k == 0).
  int prompts = 0;                       // Prompts evaluated.
  int k = 0;                             // k of pass@k.
  std::vector<GreedyCompletion> greedy;  // One per prompt, in prompt order.
};

// How far an evaluation is: `pass` is "greedy" or "pass@k" (k samples per
// prompt), `prompts_done` of `prompts` prompts are through it.
struct EvalProgress {
  std::string pass;
  int prompts_done = 0;
  int prompts = 0;
};

// Greedy decoding (stop at EOS, max_new_tokens) and k samples per prompt at
// `temperature` (seeded from `seed`, deterministic), scored with
// task.Verify. k == 0 skips pass@k. `on_progress` (may be empty) is called
// from the calling thread after every batch of completions. Errors: a prompt
// the tokenizer cannot encode, a torch error (as Internal).
absl::StatusOr<EvalResult> Evaluate(
    Transformer& model, const Tokenizer& tokenizer, const Task& task,
    const std::vector<Prompt>& prompts, int k, double temperature, int max_new_tokens,
    uint64_t seed, const std::function<void(const EvalProgress&)>& on_progress = nullptr);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_EVALUATE_H_
