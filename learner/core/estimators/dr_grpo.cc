// Dr. GRPO (arXiv 2503.20783; docs/algorithms.md "dr_grpo"): GRPO without its
// two biases: advantages are R - mean(R) (no std unless loss.std_normalize),
// token-level PPO clip with clip_eps, a plain token sum, Z = max_new_tokens x
// rollouts (a constant), optional reference KL.
#include "learner/core/estimators/ppo_clip.h"

namespace rlvr::learner {

[[maybe_unused]] const bool kRegistered =
    RegisterPpoClipEstimator({.name = "dr_grpo",
                              .traits = {.std_normalized_advantages = false,
                                         .dynamic_sampling = false,
                                         .normalizer = StepNormalizerRule::kConstant},
                              .aggregation = Aggregation::kTokenSum,
                              .clip_higher = false,
                              .reference_kl = true});

}  // namespace rlvr::learner
