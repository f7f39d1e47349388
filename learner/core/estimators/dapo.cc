// DAPO (arXiv 2503.14476; docs/algorithms.md "dapo"): GRPO's group-normalised
// advantage (R - mean) / std, clip-higher (clip_eps below, clip_eps_high
// above), token-level loss (token sum, Z = tokens in the step), and dynamic
// sampling (zero-variance groups are always dropped). DAPO has no KL term:
// loss.kl_coef is ignored on purpose.
#include "learner/core/estimators/ppo_clip.h"

namespace rlvr::learner {

[[maybe_unused]] const bool kRegistered =
    RegisterPpoClipEstimator({.name = "dapo",
                              .traits = {.std_normalized_advantages = true,
                                         .dynamic_sampling = true,
                                         .normalizer = StepNormalizerRule::kTokens},
                              .aggregation = Aggregation::kTokenSum,
                              .clip_higher = true,
                              .reference_kl = false});

}  // namespace rlvr::learner
