// DFPO (the default; docs/algorithms.md "dfpo"): value-only geometric-mean
// sequence ratio, symmetric clip with clip_eps, in-group transform
// (loss.dfpo_transform), stop-gradient, token sum / Z with Z from
// loss.normalizer; advantages std-normalised only with loss.std_normalize.
// Optional trust-region guard (loss.dfpo_max_abs_log_ratio) and reference KL.
#include "learner/core/estimators/dfpo.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "learner/core/estimator.h"
#include "learner/core/estimator_registry.h"

namespace rlvr::learner {
namespace {

class DfpoEstimator final : public Estimator {
 public:
  DfpoEstimator(std::string transform, double eps, double max_abs_log_ratio, double kl_coef)
      : transform_(std::move(transform)),
        eps_(eps),
        max_abs_log_ratio_(max_abs_log_ratio),
        kl_coef_(kl_coef) {}
  std::string name() const override { return "dfpo"; }

  EstimatorOutput Compute(const EstimatorInput& in) const override {
    CheckEstimatorInput(in);
    EstimatorOutput out;
    torch::Tensor weights;
    {
      torch::NoGradGuard no_grad;
      torch::Tensor log_ratio = in.lp_new.detach() - in.lp_old;
      out.ratio = log_ratio.exp();
      // [D] geometric mean over the rollout's tokens: value only, never differentiated.
      torch::Tensor seq_log_ratio = (log_ratio * in.mask).sum(1) * InverseLengths(in.mask);
      torch::Tensor w = seq_log_ratio.exp();
      // [D] symmetric clip, the same rule for both signs of A.
      torch::Tensor c = w.clamp(1.0 - eps_, 1.0 + eps_);
      torch::Tensor outside = (w < 1.0 - eps_) | (w > 1.0 + eps_);
      out.clipped = outside.to(in.mask.scalar_type()).unsqueeze(1) * in.mask;
      weights = DfpoTransform(c, in.advantages, in.group_ids, in.num_groups, transform_);

      // Groups that contribute nothing: zero variance (max |A| < 1e-12), and,
      // with the trust-region guard on, any group with a rollout whose
      // |mean log ratio| exceeds the limit (the whole group is dropped).
      torch::Tensor keep_group =
          GroupReduce(in.advantages.abs(), in.group_ids, in.num_groups, /*max=*/true) >= 1e-12;
      if (max_abs_log_ratio_ > 0.0) {
        torch::Tensor bad_row =
            (seq_log_ratio.abs() > max_abs_log_ratio_).to(in.mask.scalar_type());
        torch::Tensor bad_group = GroupSum(bad_row, in.group_ids, in.num_groups) > 0;
        out.groups_dropped_trust_region = (bad_group & keep_group).sum().item<int64_t>();
        keep_group = keep_group & bad_group.logical_not();
      }
      weights = weights * keep_group.index_select(0, in.group_ids).to(weights.scalar_type());
      torch::Tensor wa = weights * in.advantages;
      out.orthogonality_abs = GroupSum(wa, in.group_ids, in.num_groups).abs().sum().item<double>();
      out.orthogonality_scale = wa.abs().sum().item<double>();
      out.sequence_weights = weights;
    }
    // Every token of row i gets the coefficient -w~_i A_i / Z: no 1/T_i.
    torch::Tensor coef = (weights * in.advantages).unsqueeze(1);
    out.loss = -Aggregate(coef * in.lp_new, in, Aggregation::kTokenSum);
    AddReferenceKl(in, kl_coef_, Aggregation::kTokenSum, &out);
    return out;
  }

 private:
  std::string transform_;
  double eps_;
  double max_abs_log_ratio_;
  double kl_coef_;
};

absl::StatusOr<std::unique_ptr<Estimator>> MakeDfpo(const LossConfig& loss) {
  if (loss.dfpo_transform != "min_replace" && loss.dfpo_transform != "adv_orthogonal") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown loss.dfpo_transform: ", loss.dfpo_transform));
  }
  return std::unique_ptr<Estimator>(std::make_unique<DfpoEstimator>(
      loss.dfpo_transform, loss.clip_eps, loss.dfpo_max_abs_log_ratio, loss.kl_coef));
}

[[maybe_unused]] const bool kRegistered =
    RegisterEstimator({.name = "dfpo",
                       .traits = {.std_normalized_advantages = false,
                                  .dynamic_sampling = false,
                                  .normalizer = StepNormalizerRule::kConfigured},
                       .make = &MakeDfpo});

}  // namespace

torch::Tensor DfpoTransform(const torch::Tensor& c, const torch::Tensor& advantages,
                            const torch::Tensor& group_ids, int64_t num_groups,
                            const std::string& transform) {
  if (transform == "min_replace") {
    torch::Tensor mins = GroupReduce(c, group_ids, num_groups, /*max=*/false);
    return mins.index_select(0, group_ids);
  }
  TORCH_CHECK(transform == "adv_orthogonal", "unknown dfpo transform ", transform);
  torch::Tensor dot = GroupSum(advantages * c, group_ids, num_groups);
  torch::Tensor norm2 = GroupSum(advantages * advantages, group_ids, num_groups);
  torch::Tensor ok = norm2 > 1e-24;
  torch::Tensor coef = torch::where(ok, dot / torch::where(ok, norm2, torch::ones_like(norm2)),
                                    torch::zeros_like(norm2));
  return c - coef.index_select(0, group_ids) * advantages;
}

}  // namespace rlvr::learner
