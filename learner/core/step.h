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
#include "common/config/run_config.h"
#include "common/policy/model.h"
#include "learner/core/batcher.h"
#include "learner/core/estimator_registry.h"
#include "learner/core/group.h"
#include "learner/diagnostics/update_diagnostics.h"

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
// log-probs detached (right for the first optimizer step of an update).
// `reference` (nullable) is used only when loss.kl_coef > 0 (then it is
// required). Returns this shard's raw diagnostics (the
// DIAGNOSTIC_REDUCE_SUM/_MAX fields of UpdateDiagnostics,
// learner/diagnostics/update_diagnostics.h), not finalized. An empty shard
// returns zero diagnostics.
absl::StatusOr<UpdateDiagnostics> AccumulateStepGradients(
    policy::Transformer& model, const std::vector<Group>& groups,
    const std::vector<SelectedGroup>& shard, double normalizer, const ParsedEstimator& estimator,
    const BatchingConfig& batching, const OldLogProbs* old, policy::Transformer* reference);

// The same from a bare loss config, parsed on every call (one-off callers and
// tests; a trainer parses once and uses the overload above). Also
// InvalidArgument when `loss` does not parse (ParsedEstimator::Parse).
absl::StatusOr<UpdateDiagnostics> AccumulateStepGradients(
    policy::Transformer& model, const std::vector<Group>& groups,
    const std::vector<SelectedGroup>& shard, double normalizer, const LossConfig& loss,
    const BatchingConfig& batching, const OldLogProbs* old, policy::Transformer* reference);

// Completes an update's diagnostics once its raw fields are merged over the
// optimizer steps and the ranks: sets the once-per-update fields (the plan's
// statistics, the number of optimizer steps, the sum of their pre-clip
// gradient norms and the last step's LR), then the derived means
// (FinalizeDiagnostics). The trainer and the offline loop both end here.
void FinishUpdateDiagnostics(const BatchStats& stats, int64_t optimizer_steps, double grad_norm_sum,
                             double lr, UpdateDiagnostics* diagnostics);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_STEP_H_
