#include "learner/core/estimators/ppo_clip.h"

#include <utility>

namespace rlvr::learner {
namespace {

class PpoClipEstimator final : public Estimator {
 public:
  PpoClipEstimator(std::string name, double eps_low, double eps_high, Aggregation how,
                   double kl_coef)
      : name_(std::move(name)),
        eps_low_(eps_low),
        eps_high_(eps_high),
        how_(how),
        kl_coef_(kl_coef) {}
  std::string name() const override { return name_; }

  EstimatorOutput Compute(const EstimatorInput& in) const override {
    CheckEstimatorInput(in);
    EstimatorOutput out;
    torch::Tensor a = in.advantages.unsqueeze(1);
    torch::Tensor r = (in.lp_new - in.lp_old).clamp(-kMaxLogRatio, kMaxLogRatio).exp();
    torch::Tensor rd = r.detach();
    torch::Tensor clipped = ((a > 0) & (rd > 1.0 + eps_high_)) | ((a < 0) & (rd < 1.0 - eps_low_));
    torch::Tensor rc = rd.clamp(1.0 - eps_low_, 1.0 + eps_high_);
    torch::Tensor objective = torch::where(clipped, rc * a, r * a);
    out.loss = -Aggregate(objective, in, how_);
    out.ratio = rd;
    out.clipped = clipped.to(in.mask.scalar_type()) * in.mask;
    AddReferenceKl(in, kl_coef_, how_, &out);
    return out;
  }

 private:
  std::string name_;
  double eps_low_;
  double eps_high_;
  Aggregation how_;
  double kl_coef_;
};

}  // namespace

std::unique_ptr<Estimator> MakePpoClipEstimator(std::string name, double eps_low, double eps_high,
                                                Aggregation how, double kl_coef) {
  return std::make_unique<PpoClipEstimator>(std::move(name), eps_low, eps_high, how, kl_coef);
}

bool RegisterPpoClipEstimator(PpoClipDefinition definition) {
  EstimatorFactory make =
      [definition](const LossConfig& loss) -> absl::StatusOr<std::unique_ptr<Estimator>> {
    return MakePpoClipEstimator(
        definition.name, loss.clip_eps, definition.clip_higher ? loss.clip_eps_high : loss.clip_eps,
        definition.aggregation, definition.reference_kl ? loss.kl_coef : 0.0);
  };
  return RegisterEstimator(
      {.name = std::move(definition.name), .traits = definition.traits, .make = std::move(make)});
}

}  // namespace rlvr::learner
