#include "learner/core/advantage.h"

#include <cmath>

#include "learner/core/estimator_registry.h"

namespace rlvr::learner {

std::vector<double> GroupAdvantages(const std::vector<double>& rewards, bool std_normalize) {
  std::vector<double> adv(rewards.size(), 0.0);
  if (rewards.empty()) return adv;
  double mean = 0.0;
  for (double r : rewards) mean += r;
  mean /= static_cast<double>(rewards.size());
  double var = 0.0;
  for (size_t i = 0; i < rewards.size(); ++i) {
    const double centred = rewards[i] - mean;
    // Zero test on the centred reward, before any normalisation.
    adv[i] = std::fabs(centred) < kZeroVarianceTolerance ? 0.0 : centred;
    var += adv[i] * adv[i];
  }
  if (std_normalize && var > 0.0) {
    const double scale =
        std::sqrt(var / static_cast<double>(rewards.size())) + kStdNormalizeEpsilon;
    for (double& a : adv) a /= scale;
  }
  return adv;
}

bool IsZeroVariance(const std::vector<double>& rewards) {
  for (double a : GroupAdvantages(rewards, /*std_normalize=*/false)) {
    if (a != 0.0) return false;
  }
  return true;
}

bool UsesStdNormalizedAdvantages(const LossConfig& loss) {
  const EstimatorDefinition* definition = FindEstimator(loss.estimator);
  return loss.std_normalize ||
         (definition != nullptr && definition->traits.std_normalized_advantages);
}

}  // namespace rlvr::learner
