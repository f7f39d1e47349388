// Dr. GRPO (arXiv 2503.20783; docs/algorithms.md "dr_grpo"): GRPO without its
// two biases: advantages are R - mean(R) (no std unless loss.std_normalize),
// token-level PPO clip with clip_eps, a plain token sum, Z = max_new_tokens x
// rollouts (a constant), optional reference KL.
#include "learner/core/estimator_registry.h"
#include "learner/core/estimators/ppo_clip.h"

namespace rlvr::learner {
namespace {

absl::StatusOr<std::unique_ptr<Estimator>> MakeDrGrpo(const LossConfig& loss) {
  return MakePpoClipEstimator("dr_grpo", loss.clip_eps, loss.clip_eps, Aggregation::kTokenSum,
                              loss.kl_coef);
}

[[maybe_unused]] const bool kRegistered =
    RegisterEstimator({.name = "dr_grpo",
                       .traits = {.std_normalized_advantages = false,
                                  .dynamic_sampling = false,
                                  .normalizer = StepNormalizerRule::kConstant},
                       .make = &MakeDrGrpo});

}  // namespace
}  // namespace rlvr::learner
