#include "learner/core/estimator.h"

#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "learner/core/estimator_registry.h"

namespace rlvr::learner {

void CheckEstimatorInput(const EstimatorInput& in) {
  TORCH_CHECK(in.lp_new.dim() == 2, "lp_new must be [N,T]");
  TORCH_CHECK(in.lp_old.sizes() == in.lp_new.sizes(), "lp_old shape differs from lp_new");
  TORCH_CHECK(in.mask.sizes() == in.lp_new.sizes(), "mask shape differs from lp_new");
  TORCH_CHECK(in.advantages.dim() == 1 && in.advantages.size(0) == in.lp_new.size(0),
              "advantages must be [N]");
  TORCH_CHECK(in.group_ids.dim() == 1 && in.group_ids.size(0) == in.lp_new.size(0) &&
                  in.group_ids.scalar_type() == torch::kInt64,
              "group_ids must be int64 [N]");
  TORCH_CHECK(in.normalizer > 0.0, "normalizer must be positive");
  TORCH_CHECK(!in.token_weights.defined() || in.token_weights.sizes() == in.lp_new.sizes(),
              "token_weights shape differs from lp_new");
}

torch::Tensor InverseLengths(const torch::Tensor& mask) { return 1.0 / mask.sum(1).clamp_min(1.0); }

torch::Tensor InverseGroupSizes(const EstimatorInput& in) {
  torch::Tensor ones = torch::ones({in.group_ids.size(0)}, in.mask.options());
  return 1.0 / GroupSum(ones, in.group_ids, in.num_groups).index_select(0, in.group_ids);
}

torch::Tensor RowWeights(const EstimatorInput& in) {
  if (!in.token_weights.defined()) return torch::ones({in.mask.size(0)}, in.mask.options());
  torch::Tensor log_w = in.token_weights.detach().clamp_min(1e-30).log() * in.mask;
  return (log_w.sum(1) * InverseLengths(in.mask)).exp();
}

torch::Tensor Aggregate(const torch::Tensor& x, const EstimatorInput& in, Aggregation how) {
  torch::Tensor weighted = in.token_weights.defined() ? x * in.token_weights.detach() : x;
  torch::Tensor per_row = (weighted * in.mask).sum(1);
  if (how == Aggregation::kGroupSeqMean) {
    per_row = per_row * InverseLengths(in.mask) * InverseGroupSizes(in);
  }
  return per_row.sum() / in.normalizer;
}

void AddReferenceKl(const EstimatorInput& in, double kl_coef, Aggregation how,
                    EstimatorOutput* out) {
  if (kl_coef <= 0.0) return;
  TORCH_CHECK(in.lp_ref.defined(), "kl_coef > 0 needs reference log-probs");
  torch::Tensor d = in.lp_ref - in.lp_new;
  torch::Tensor kl = d.exp() - d - 1.0;
  out->loss = out->loss + kl_coef * Aggregate(kl, in, how);
  out->kl_ref = (kl.detach() * in.mask);
}

torch::Tensor GroupReduce(const torch::Tensor& x, const torch::Tensor& group_ids,
                          int64_t num_groups, bool max) {
  // Dense [groups, N] membership: tiny at micro-batch sizes, and avoids the
  // beta index_reduce/scatter_reduce APIs (which log a warning).
  torch::Tensor member =
      torch::arange(num_groups, group_ids.options()).unsqueeze(1) == group_ids.unsqueeze(0);
  const double fill =
      max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  torch::Tensor spread = torch::where(member, x.unsqueeze(0), torch::full({}, fill, x.options()));
  return max ? std::get<0>(spread.max(1)) : std::get<0>(spread.min(1));
}

torch::Tensor GroupSum(const torch::Tensor& x, const torch::Tensor& group_ids, int64_t num_groups) {
  std::vector<int64_t> shape = x.sizes().vec();
  shape[0] = num_groups;
  return torch::zeros(shape, x.options()).index_add(0, group_ids, x);
}

absl::StatusOr<std::unique_ptr<Estimator>> MakeEstimator(const LossConfig& loss) {
  if (loss.clip_eps < 0 || loss.clip_eps_high < 0 || loss.gspo_eps < 0 || loss.kl_coef < 0) {
    return absl::InvalidArgumentError("clip epsilons and kl_coef must be >= 0");
  }
  absl::Status known = CheckEstimatorName(loss.estimator);
  if (!known.ok()) return known;
  return FindEstimator(loss.estimator)->make(loss);
}

}  // namespace rlvr::learner
