// GSPO (arXiv 2507.18071; docs/algorithms.md "gspo"): sequence ratio
// s_i = exp(mean_t log r_{i,t}) with gradient, sequence-level PPO clip with
// loss.gspo_eps, group-normalised advantages, (1/G_g) per group, Z = groups in
// the step, optional reference KL. A row counts as clipped (all its tokens)
// when the clipped branch is active.
#include "learner/core/estimator.h"
#include "learner/core/estimator_registry.h"

namespace rlvr::learner {
namespace {

class GspoEstimator final : public Estimator {
 public:
  GspoEstimator(double eps, double kl_coef) : eps_(eps), kl_coef_(kl_coef) {}
  std::string name() const override { return "gspo"; }

  EstimatorOutput Compute(const EstimatorInput& in) const override {
    CheckEstimatorInput(in);
    EstimatorOutput out;
    torch::Tensor log_ratio = in.lp_new - in.lp_old;
    out.ratio = log_ratio.detach().exp();
    torch::Tensor s = ((log_ratio * in.mask).sum(1) * InverseLengths(in.mask))
                          .clamp(-kMaxLogRatio, kMaxLogRatio)
                          .exp();
    torch::Tensor sd = s.detach();
    torch::Tensor a = in.advantages;
    torch::Tensor clipped = ((a > 0) & (sd > 1.0 + eps_)) | ((a < 0) & (sd < 1.0 - eps_));
    torch::Tensor objective = torch::where(clipped, sd.clamp(1.0 - eps_, 1.0 + eps_) * a, s * a);
    out.loss = -(objective * RowWeights(in) * InverseGroupSizes(in)).sum() / in.normalizer;
    out.clipped = clipped.to(in.mask.scalar_type()).unsqueeze(1) * in.mask;
    AddReferenceKl(in, kl_coef_, Aggregation::kGroupSeqMean, &out);
    return out;
  }

 private:
  double eps_;
  double kl_coef_;
};

absl::StatusOr<std::unique_ptr<Estimator>> MakeGspo(const LossConfig& loss) {
  return std::unique_ptr<Estimator>(std::make_unique<GspoEstimator>(loss.gspo_eps, loss.kl_coef));
}

[[maybe_unused]] const bool kRegistered =
    RegisterEstimator({.name = "gspo",
                       .traits = {.std_normalized_advantages = true,
                                  .dynamic_sampling = false,
                                  .normalizer = StepNormalizerRule::kGroups},
                       .make = &MakeGspo});

}  // namespace
}  // namespace rlvr::learner
