// The batcher: turns the complete groups of one learner update into the
// optimizer steps of that update (ALGORITHMS.md, "Batching").
//
// Pipeline, in order:
//   1. advantages per group (R - mean(R), std-normalised when the estimator's
//      traits say so or loss.std_normalize; estimator_registry.h);
//   2. dynamic sampling: all-equal-reward groups are dropped and counted
//      (batching.dynamic_sampling, forced on by an estimator whose traits
//      include it, and implied by downsample);
//   3. reward balancing (batching.reward_balance): `downsample` keeps
//      k = min(n+, n-) rollouts of each advantage sign per group (seeded), and
//      recomputes the advantages on the kept subset when
//      batching.recompute_advantage (iterated until the kept subset's own
//      signs balance: n+ = n- for any reward distribution); `pack` keeps
//      everything and assigns whole groups to mini-batches minimising the
//      worst |U+ - U-| (in batching.balance_unit; packing.h); `none` keeps
//      everything;
//   4. per epoch, a seeded shuffle of the groups split into
//      batching.mini_batches optimizer steps of whole groups (query-preserved);
//      with batching.query_preserved = false the *rollouts* are shuffled across
//      groups instead (ablation; see docs/algorithms.md);
//   5. per step, the loss normaliser Z (the estimator's StepNormalizer),
//      fixed before any micro-batching or sharding.
//
// Torch-free. Thread-compatible: pure functions; results depend only on the
// arguments (same inputs and seed give the same plan on every machine).
#ifndef RLVR_LEARNER_CORE_BATCHER_H_
#define RLVR_LEARNER_CORE_BATCHER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/run_config.h"
#include "learner/core/estimator_registry.h"
#include "learner/core/group.h"

namespace rlvr::learner {

// A reward at or above this counts as a correct answer for `accuracy`.
inline constexpr double kCorrectRewardThreshold = 0.5;

// The part of one input group that an optimizer step trains on.
struct SelectedGroup {
  int group = 0;                   // Index into the PlanUpdate input vector.
  std::vector<int> rollouts;       // Kept rollout indices, ascending.
  std::vector<double> advantages;  // One per kept rollout (same order).
  int64_t tokens = 0;              // Completion tokens of the kept rollouts (filled by PlanUpdate;
                                   // informational, never needed by ShardStep).
};

// One optimizer step: whole groups (fragments only when query_preserved=false).
struct OptimizerStep {
  std::vector<SelectedGroup> groups;
  // Z: the loss normaliser of the step, computed once here from the whole step
  // (StepNormalizer) and shared by every micro-batch and every rank.
  double normalizer = 1.0;
  int64_t tokens = 0;    // Completion tokens of the kept rollouts.
  int64_t rollouts = 0;  // Kept rollouts.
};

// What happened to the update's data. Counts are per update (not per epoch).
struct BatchStats {
  int64_t groups_in = 0;                     // Input groups.
  int64_t groups_zero_variance = 0;          // Input groups with all-equal rewards.
  int64_t groups_dropped_zero_variance = 0;  // Of those, dropped (dynamic sampling).
  int64_t groups_dropped_balance = 0;        // Dropped because balancing kept nothing.
  int64_t groups_used = 0;                   // Groups that reach the steps.
  int64_t rollouts_in = 0;                   // Input rollouts.
  int64_t rollouts_used = 0;                 // Rollouts kept (once per update).
  int64_t rollouts_dropped_balance = 0;      // Rollouts removed by downsample.
  int64_t positive_rollouts = 0;             // Kept rollouts with advantage > 0.
  int64_t negative_rollouts = 0;             // Kept rollouts with advantage < 0.
  double reward_mean = 0.0;                  // Over all input rollouts.
  double accuracy = 0.0;                     // Input rollouts with reward >= 0.5.
  double zero_variance_fraction = 0.0;       // groups_zero_variance / groups_in.
  // max over steps of |U+ - U-| / (U+ + U-), U in batching.balance_unit
  // (0 when a step has no signed rollouts).
  double max_step_imbalance = 0.0;
};

struct UpdatePlan {
  std::vector<OptimizerStep> steps;  // Epoch-major: epochs x (<= mini_batches), in order.
  BatchStats stats;
};

// Builds the update's optimizer steps for the parsed `estimator`. Empty steps
// are never emitted: an epoch has min(mini_batches, groups used) steps (or
// rollouts used when query_preserved=false), and `steps` is empty when nothing
// survives. Errors: InvalidArgument for a group with < 2 rollouts, an empty
// completion, unknown enum strings, non-positive counts, or pack with
// query_preserved=false.
absl::StatusOr<UpdatePlan> PlanUpdate(const std::vector<Group>& groups,
                                      const BatchingConfig& batching,
                                      const ParsedEstimator& estimator, int max_new_tokens,
                                      uint64_t seed);

// The same from a bare loss config, parsed on every call (one-off callers and
// tests; a trainer parses once and uses the overload above). Also
// InvalidArgument when `loss` does not parse (ParsedEstimator::Parse).
absl::StatusOr<UpdatePlan> PlanUpdate(const std::vector<Group>& groups,
                                      const BatchingConfig& batching, const LossConfig& loss,
                                      int max_new_tokens, uint64_t seed);

// Z for a step of `loss`'s estimator (ParsedEstimator::StepNormalizer; the
// rules per estimator are in docs/algorithms.md, "The normaliser Z" [D]).
// Always >= 1; 1 when `loss` does not parse.
double StepNormalizer(const LossConfig& loss, int64_t groups, int64_t rollouts, int64_t tokens,
                      int max_new_tokens);

// The share of `step` that data-parallel `rank` of `world_size` trains on:
// whole SelectedGroups, balanced by rollout count (largest first onto the
// least loaded rank, ties to the lower rank), returned in the step's order.
// Uses only `group` and `rollouts`, so ranks that received the plan through a
// codec that drops SelectedGroup::tokens still agree on the split. (Rows, not
// tokens: the forward pass pads each micro-batch to its longest row anyway.) The
// union over ranks is the step, with no overlap. Deterministic. A rank may get
// nothing when the step has fewer groups than ranks.
std::vector<SelectedGroup> ShardStep(const OptimizerStep& step, int rank, int world_size);

// Everything `rank` trains on across all steps of `plan` (union of its shards,
// one entry per input group, rollouts merged and ascending; advantages of the
// first occurrence). For precomputing old log-probs (step.h).
std::vector<SelectedGroup> SelectionForRank(const UpdatePlan& plan, int rank, int world_size);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_BATCHER_H_
