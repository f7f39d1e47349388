#include "learner/core/advantage.h"

#include <cmath>

namespace rlvr::learner {

std::vector<double> GroupAdvantages(const std::vector<double>& rewards, bool std_normalize) {
  std::vector<double> adv(rewards.size(), 0.0);
  if (rewards.empty()) return adv;
  double mean = 0.0;
  for (double r : rewards) mean += r;
  mean /= static_cast<double>(rewards.size());
  double var = 0.0;
  for (size_t i = 0; i < rewards.size(); ++i) {
    adv[i] = rewards[i] - mean;
    var += adv[i] * adv[i];
  }
  if (std_normalize) {
    const double scale = std::sqrt(var / static_cast<double>(rewards.size())) + kStdNormalizeEpsilon;
    for (double& a : adv) a /= scale;
  }
  return adv;
}

bool IsZeroVariance(const std::vector<double>& rewards) {
  for (double a : GroupAdvantages(rewards, /*std_normalize=*/false)) {
    if (std::fabs(a) >= kZeroVarianceTolerance) return false;
  }
  return true;
}

bool UsesStdNormalizedAdvantages(const LossConfig& loss) {
  return loss.std_normalize || loss.estimator == "grpo" || loss.estimator == "gspo";
}

}  // namespace rlvr::learner
