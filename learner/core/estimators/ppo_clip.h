// The token-level PPO clip that several estimators share (grpo, dr_grpo,
// dapo): per token min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) with
// r = exp(lp_new - lp_old), aggregated `how`, plus the reference KL.
//
// A token is "clipped" when the clipped branch is the active one, i.e. its
// gradient is zero: A > 0 and r > 1 + eps_high, or A < 0 and r < 1 - eps_low.
//
// Thread-compatible: the estimator is immutable.
#ifndef RLVR_LEARNER_CORE_ESTIMATORS_PPO_CLIP_H_
#define RLVR_LEARNER_CORE_ESTIMATORS_PPO_CLIP_H_

#include <memory>
#include <string>

#include "learner/core/estimator.h"

namespace rlvr::learner {

// `name` is what Estimator::name() reports. kl_coef 0 = no KL term.
std::unique_ptr<Estimator> MakePpoClipEstimator(std::string name, double eps_low, double eps_high,
                                                Aggregation how, double kl_coef);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_ESTIMATORS_PPO_CLIP_H_
