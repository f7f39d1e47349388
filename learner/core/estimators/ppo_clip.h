// The token-level PPO clip that several estimators share (grpo, dr_grpo,
// dapo): per token min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) with
// r = exp(lp_new - lp_old), aggregated `how`, plus the reference KL. Such an
// estimator is defined by a PpoClipDefinition and registered with
// RegisterPpoClipEstimator, in its own file (docs/algorithms.md, "Adding an
// estimator").
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
#include "learner/core/estimator_registry.h"

namespace rlvr::learner {

// `name` is what Estimator::name() reports. kl_coef 0 = no KL term.
std::unique_ptr<Estimator> MakePpoClipEstimator(std::string name, double eps_low, double eps_high,
                                                Aggregation how, double kl_coef);

// What tells one PPO-clip estimator from another: its registry entry (name,
// traits) and how it reads the loss config. The ratio is always bounded
// below by 1 - loss.clip_eps.
struct PpoClipDefinition {
  std::string name;  // The loss.estimator value (EstimatorDefinition::name).
  EstimatorTraits traits;
  Aggregation aggregation = Aggregation::kTokenSum;
  // true: bounded above by 1 + loss.clip_eps_high (clip-higher); false: by
  // 1 + loss.clip_eps, symmetric.
  bool clip_higher = false;
  // true: loss.kl_coef weighs the reference KL; false: the method has no KL
  // term and loss.kl_coef is ignored.
  bool reference_kl = true;
};

// RegisterEstimator (estimator_registry.h) with a factory that builds
// MakePpoClipEstimator(name, loss.clip_eps, loss.clip_eps or
// loss.clip_eps_high, aggregation, loss.kl_coef or 0) as `definition` says.
// Meant for a namespace-scope initialiser in the estimator's own file:
//   [[maybe_unused]] const bool kRegistered = RegisterPpoClipEstimator({...});
// Aborts like RegisterEstimator. Returns true.
bool RegisterPpoClipEstimator(PpoClipDefinition definition);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_ESTIMATORS_PPO_CLIP_H_
