// Policy-gradient estimators on plain tensors (ALGORITHMS.md): dfpo (default),
// grpo, dr_grpo, dapo, gspo, plus the optional k3 KL to a reference policy.
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
#include "common/run_config.h"

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
};

struct EstimatorOutput {
  torch::Tensor loss;     // Scalar, differentiable w.r.t. lp_new (and nothing else).
  torch::Tensor ratio;    // [N,T] exp(lp_new - lp_old), no grad (padding undefined; use mask).
  torch::Tensor clipped;  // [N,T] 1 where the token's coefficient came from a clipped
                          // value (see docs/algorithms.md), no grad, 0 on padding.
  torch::Tensor kl_ref;   // [N,T] k3 KL to the reference per token (no grad); undefined if off.
  // dfpo only: transformed weights w~ per row (0 for dropped or zero-variance
  // groups), and sum_g |sum_i w~_i A_i| and sum_g sum_i |w~_i A_i|.
  torch::Tensor sequence_weights;
  double orthogonality_abs = 0.0;
  double orthogonality_scale = 0.0;
  int64_t groups_dropped_trust_region = 0;  // dfpo guard: whole groups dropped.
};

class Estimator {
 public:
  virtual ~Estimator() = default;
  virtual std::string name() const = 0;
  // Computes the micro-batch loss. Throws c10::Error on malformed tensors (the
  // step adapter converts it to a Status).
  virtual EstimatorOutput Compute(const EstimatorInput& input) const = 0;
};

// Selects by loss.estimator. InvalidArgument for an unknown name or
// transform, or negative epsilons.
absl::StatusOr<std::unique_ptr<Estimator>> MakeEstimator(const LossConfig& loss);

// DFPO's in-group weight transform (differentiable; the estimator calls it on
// detached values, which is the stop-gradient of ALGORITHMS.md):
//   "min_replace":    w~_i = min_{j in g(i)} c_j                 (Eq. 17)
//   "adv_orthogonal": w~ = c - (A.c / |A|^2) A, per group         (Eq. 18)
// A group with |A|^2 <= 1e-24 keeps c under adv_orthogonal (no NaN).
// `c`, `advantages`: [N]; `group_ids`: [N] int64 in [0, num_groups).
torch::Tensor DfpoTransform(const torch::Tensor& c, const torch::Tensor& advantages,
                            const torch::Tensor& group_ids, int64_t num_groups,
                            const std::string& transform);

// Per-group max (max=true) or min of x [N] over the group's rows; a group
// without rows gets -inf / +inf. Differentiable.
torch::Tensor GroupReduce(const torch::Tensor& x, const torch::Tensor& group_ids,
                          int64_t num_groups, bool max);

// Sum over rows of each group: out[g] = sum_{i: gid_i = g} x[i] (x: [N] or [N,T]).
torch::Tensor GroupSum(const torch::Tensor& x, const torch::Tensor& group_ids, int64_t num_groups);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_ESTIMATOR_H_
