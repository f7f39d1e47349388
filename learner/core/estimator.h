// The policy-gradient estimator interface on plain tensors (ALGORITHMS.md),
// plus the optional k3 KL to a reference policy. The estimators themselves
// live one per file in learner/core/estimators/ and are found by name through
// the registry (estimator_registry.h).
//
// An estimator sees one micro-batch of rows (rollouts) laid out as padded
// [N, T] tensors, and the step-level constant Z. Every aggregation is a sum
// over rows or over whole groups, scaled by constants fixed per optimizer step
// (Z from the plan; 1/G_g from the group itself, whose rows are all present),
// so the loss of a step is the sum of its micro-batch losses, whatever the
// split into micro-batches or data-parallel shards.
//
// Works in any floating dtype (float64 for exact tests). Thread-compatible:
// Compute is const and keeps no state.
#ifndef RLVR_LEARNER_CORE_ESTIMATOR_H_
#define RLVR_LEARNER_CORE_ESTIMATOR_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/config/run_config.h"

namespace rlvr::learner {

struct EstimatorInput {
  torch::Tensor lp_new;      // [N,T] log pi_theta of each completion token; gradient flows here.
  torch::Tensor lp_old;      // [N,T] log-probs the ratio is taken against; no gradient.
  torch::Tensor mask;        // [N,T] 1 for real completion tokens, 0 for padding.
  torch::Tensor advantages;  // [N] per-row advantage A_i.
  torch::Tensor group_ids;   // [N] int64 in [0, num_groups); rows of one group share it.
  int64_t num_groups = 0;    // Number of distinct groups in the micro-batch.
  torch::Tensor lp_ref;      // [N,T] reference-policy log-probs (no grad); needed iff kl_coef > 0.
  double normalizer = 1.0;   // Z of the optimizer step (batcher.h StepNormalizer).
  // [N,T] per-token weights of the loss terms, no gradient (the behaviour
  // weights min(pi_prox / pi_behav, cap), loss.behaviour_weight_cap);
  // undefined = all 1. Aggregate applies them; a sequence-level estimator
  // (gspo) weighs each row by the geometric mean of its tokens' weights.
  torch::Tensor token_weights;
};

struct EstimatorOutput {
  torch::Tensor loss;     // Scalar, differentiable w.r.t. lp_new (and nothing else).
  torch::Tensor ratio;    // [N,T] exp(lp_new - lp_old), no grad (padding undefined; use mask).
  torch::Tensor clipped;  // [N,T] 1 where the token's coefficient came from a clipped
                          // value (see docs/algorithms.md), no grad, 0 on padding.
  torch::Tensor kl_ref;   // [N,T] k3 KL to the reference per token (no grad); undefined if off.
  // Estimators with per-row sequence weights w~ (DFPO): w~ per row (0 for
  // dropped or zero-variance groups), and sum_g |sum_i w~_i A_i| and
  // sum_g sum_i |w~_i A_i|; undefined / 0 for the others.
  torch::Tensor sequence_weights;
  double orthogonality_abs = 0.0;
  double orthogonality_scale = 0.0;
  int64_t groups_dropped_trust_region = 0;  // Trust-region guard: whole groups dropped.
};

class Estimator {
 public:
  virtual ~Estimator() = default;
  // The registered name (loss.estimator).
  virtual std::string name() const = 0;
  // Computes the micro-batch loss. Throws c10::Error on malformed tensors (the
  // step adapter converts it to a Status).
  virtual EstimatorOutput Compute(const EstimatorInput& input) const = 0;
};

// The registered estimator named by loss.estimator, built by its factory
// (estimator_registry.h). InvalidArgument for an unknown name, negative
// epsilons or kl_coef, or a knob the estimator rejects (e.g. an unknown
// transform). ParsedEstimator::Parse is the usual entry point; this builds the
// loss alone.
absl::StatusOr<std::unique_ptr<Estimator>> MakeEstimator(const LossConfig& loss);

// Building blocks for the estimators' files.

// Log-ratios entering exp() with gradient are clamped to +-kMaxLogRatio [D]:
// beyond it a token's (unselected) branch would overflow and turn a zero
// gradient into NaN (0 * inf). Irrelevant in any sane training regime.
inline constexpr double kMaxLogRatio = 20.0;

// How an estimator turns per-token terms x[i,t] into a scalar.
enum class Aggregation {
  kTokenSum,      // (1/Z) sum_i sum_t x
  kGroupSeqMean,  // (1/Z) sum_i (1/G_g) (1/T_i) sum_t x   (Z = groups in step)
};

// Checks the shapes and dtypes of `input` (TORCH_CHECK: throws c10::Error).
void CheckEstimatorInput(const EstimatorInput& input);

// Per-row 1/T_i (T_i = real tokens of the row, at least 1). mask: [N,T].
torch::Tensor InverseLengths(const torch::Tensor& mask);

// Per-row weight of a sequence-level estimator: exp of the mean over the row's
// tokens of log token_weights (all 1 when token_weights is undefined). [N]
torch::Tensor RowWeights(const EstimatorInput& input);

// Per-row 1/G_g where G_g is the number of rows of row i's group.
torch::Tensor InverseGroupSizes(const EstimatorInput& input);

// The scalar of per-token terms x [N,T] (masked, and weighted by
// input.token_weights when defined), aggregated `how`.
torch::Tensor Aggregate(const torch::Tensor& x, const EstimatorInput& input, Aggregation how);

// Adds kl_coef times the k3 KL to the reference policy, aggregated `how`, to
// out->loss, and sets out->kl_ref: kl = exp(lp_ref - lp_new) - (lp_ref -
// lp_new) - 1 >= 0. No-op when kl_coef <= 0; needs input.lp_ref otherwise.
void AddReferenceKl(const EstimatorInput& input, double kl_coef, Aggregation how,
                    EstimatorOutput* out);

// Per-group max (max=true) or min of x [N] over the group's rows; a group
// without rows gets -inf / +inf. Differentiable.
torch::Tensor GroupReduce(const torch::Tensor& x, const torch::Tensor& group_ids,
                          int64_t num_groups, bool max);

// Sum over rows of each group: out[g] = sum_{i: gid_i = g} x[i] (x: [N] or [N,T]).
torch::Tensor GroupSum(const torch::Tensor& x, const torch::Tensor& group_ids, int64_t num_groups);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_ESTIMATOR_H_
