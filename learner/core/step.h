// Gradient accumulation for one optimizer step (or one rank's shard of it).
//
// Call order per optimizer step (the trainer's job): zero the grads, call
// AccumulateStepGradients with this rank's ShardStep(...) and the step's Z,
// all-reduce (sum) the grads across ranks, clip, step the optimizer. Because
// Z and every other per-step constant come from the plan, the summed gradient
// equals the single-process, single-pass gradient up to float rounding.
//
// Thread safety: not thread-safe with respect to `model` (mutates .grad).
// Failure: returns a Status (LibTorch errors are caught here); gradients may
// then be partially accumulated and must be discarded by the caller.
#ifndef RLVR_LEARNER_CORE_STEP_H_
#define RLVR_LEARNER_CORE_STEP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/policy/model.h"
#include "common/run_config.h"
#include "learner/core/batcher.h"
#include "learner/core/estimator_registry.h"
#include "learner/core/group.h"

namespace rlvr::learner {

// lp_old per completion token, precomputed once for an update with more than
// one optimizer step (loss.old_logprobs = recompute). logprobs[g][r] belongs
// to rollout r of groups[g]; empty when not computed.
struct OldLogProbs {
  std::vector<std::vector<std::vector<float>>> logprobs;
};

// Log-probs of every rollout in `selection` under `model`, without gradient,
// in micro-batches of whole groups of <= micro_batch_rollouts rollouts.
// The trainer calls it at the start of an update with SelectionForRank(...).
absl::StatusOr<OldLogProbs> ComputeOldLogProbs(policy::Transformer& model,
                                               const std::vector<Group>& groups,
                                               const std::vector<SelectedGroup>& selection,
                                               int micro_batch_rollouts);

// Per-step diagnostics. The raw fields are sums and counts, so the
// diagnostics of micro-batches and of ranks combine with Merge(); Finalize()
// then fills the derived means. Definitions: docs/algorithms.md.
struct StepDiagnostics {
  // Raw sums and counts.
  double loss = 0.0;                 // Sum of micro-batch losses (= the step's loss).
  int64_t groups = 0;                // SelectedGroups trained on.
  int64_t rollouts = 0;              // Rows trained on.
  int64_t tokens = 0;                // Completion tokens trained on.
  int64_t positive_rollouts = 0;     // Rows with advantage > 0.
  int64_t negative_rollouts = 0;     // Rows with advantage < 0.
  double reward_sum = 0.0;           // Sum of rewards of the rows.
  int64_t correct_rollouts = 0;      // Rows with reward >= kCorrectRewardThreshold.
  int64_t clipped_tokens = 0;        // Tokens whose coefficient came from a clipped value.
  double ratio_sum = 0.0;            // Sum over tokens of exp(lp_new - lp_old).
  double ratio_max = 0.0;            // Max over tokens (merged with max).
  double entropy_sum = 0.0;          // Sum over tokens of the policy entropy.
  double kl_behaviour_sum = 0.0;     // Sum over tokens of k3(behav || recomputed).
  int64_t kl_behaviour_tokens = 0;   // Tokens with behaviour log-probs.
  double kl_reference_sum = 0.0;     // Sum over tokens of k3 KL to the reference (kl_coef > 0).
  double orthogonality_abs = 0.0;    // dfpo: sum_g |sum_i w~_i A_i|.
  double orthogonality_scale = 0.0;  // dfpo: sum_g sum_i |w~_i A_i|.
  double cancellation_net = 0.0;     // sum over shared cells |sum_i coeff_i|.
  double cancellation_abs = 0.0;     // sum over shared cells sum_i |coeff_i|.
  int64_t shared_cells = 0;          // Shared (group, position) cells.
  int64_t groups_dropped_trust_region = 0;  // dfpo guard.

  // Derived by Finalize().
  double clip_fraction = 0.0;            // clipped_tokens / tokens.
  double ratio_mean = 0.0;               // ratio_sum / tokens.
  double entropy = 0.0;                  // entropy_sum / tokens.
  double kl_behaviour_recomputed = 0.0;  // kl_behaviour_sum / kl_behaviour_tokens.
  double kl_reference = 0.0;             // kl_reference_sum / tokens.
  double orthogonality_residual = 0.0;   // orthogonality_abs / orthogonality_scale.
  double cancellation_residual = 0.0;    // cancellation_net / cancellation_abs.
  double reward_mean = 0.0;              // reward_sum / rollouts.
  double accuracy = 0.0;                 // correct_rollouts / rollouts.

  // Adds `other`'s raw fields (ratio_max: max). Derived fields are not merged.
  void Merge(const StepDiagnostics& other);
  // Fills the derived fields from the raw ones (0 where a denominator is 0).
  void Finalize();
  // Raw fields as doubles, for transport between ranks (e.g. an all-gather),
  // and back. Unpack fails on a vector of the wrong size.
  std::vector<double> Pack() const;
  static absl::StatusOr<StepDiagnostics> Unpack(const std::vector<double>& packed);
};

// Accumulates into the parameters' .grad the gradient of `estimator`'s loss
// over `shard` (whole SelectedGroups of one optimizer step), with the step's
// normaliser `normalizer`. Runs micro-batches of whole groups with at most
// batching.micro_batch_rollouts rows (a larger group is its own micro-batch):
// log-probs via policy::ComputeCompletionLogProbs, estimator on a detached
// leaf copy of them (whose gradient is the per-token coefficient used by the
// diagnostics), then one backward of the model with those coefficients.
//
// lp_old, by estimator.config().old_logprobs: behaviour -> the rollouts'
// behaviour log-probs; recompute -> `old` if non-null, else the current
// log-probs detached (right for the first optimizer step of an update). `reference` (nullable) is
// used only when loss.kl_coef > 0 (then it is required). Diagnostics are this shard's raw sums, not
// finalized. An empty shard returns zero diagnostics.
absl::StatusOr<StepDiagnostics> AccumulateStepGradients(
    policy::Transformer& model, const std::vector<Group>& groups,
    const std::vector<SelectedGroup>& shard, double normalizer, const ParsedEstimator& estimator,
    const BatchingConfig& batching, const OldLogProbs* old, policy::Transformer* reference);

// The same from a bare loss config, parsed on every call (one-off callers and
// tests; a trainer parses once and uses the overload above). Also
// InvalidArgument when `loss` does not parse (ParsedEstimator::Parse).
absl::StatusOr<StepDiagnostics> AccumulateStepGradients(
    policy::Transformer& model, const std::vector<Group>& groups,
    const std::vector<SelectedGroup>& shard, double normalizer, const LossConfig& loss,
    const BatchingConfig& batching, const OldLogProbs* old, policy::Transformer* reference);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_STEP_H_
