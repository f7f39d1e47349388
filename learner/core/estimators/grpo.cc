// GRPO (arXiv 2402.03300; docs/algorithms.md "grpo"): group-normalised
// advantages, token-level PPO clip with clip_eps on both sides, each row's
// tokens averaged (1/T_i) and each group's rows averaged (1/G_g), Z = groups in
// the step (the mean over groups is rlvr's [D]), optional reference KL.
#include "learner/core/estimators/ppo_clip.h"

namespace rlvr::learner {

[[maybe_unused]] const bool kRegistered =
    RegisterPpoClipEstimator({.name = "grpo",
                              .traits = {.std_normalized_advantages = true,
                                         .dynamic_sampling = false,
                                         .normalizer = StepNormalizerRule::kGroups},
                              .aggregation = Aggregation::kGroupSeqMean,
                              .clip_higher = false,
                              .reference_kl = true});

}  // namespace rlvr::learner
