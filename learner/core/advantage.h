// Group-relative advantages (ALGORITHMS.md, "Notation").
//
// Torch-free. Thread-compatible: pure functions.
#ifndef RLVR_LEARNER_CORE_ADVANTAGE_H_
#define RLVR_LEARNER_CORE_ADVANTAGE_H_

#include <vector>

#include "common/config/run_config.h"

namespace rlvr::learner {

// A centred reward |R_i - mean(R)| below this is rounding noise, not signal:
// a group whose centred rewards are all below it is "zero-variance", and a
// single rollout below it has advantage exactly 0. Tested on R - mean(R),
// before any std normalisation (which would blow the noise up to ~1e-11).
inline constexpr double kZeroVarianceTolerance = 1e-12;

// Added to std(R) when advantages are std-normalised (ALGORITHMS.md).
inline constexpr double kStdNormalizeEpsilon = 1e-6;

// A_i = R_i - mean(R); if `std_normalize`, divided by std(R) + 1e-6 where std
// is the population standard deviation (divide by G) [D]. An A_i with
// |R_i - mean(R)| < kZeroVarianceTolerance is exactly 0 (so a zero-variance
// group, e.g. eight rewards of 0.1, gets all-zero advantages whatever the
// normalisation). Keeps sum_i A_i = 0 up to rounding. Empty input gives an
// empty result.
std::vector<double> GroupAdvantages(const std::vector<double>& rewards, bool std_normalize);

// True when every |R_i - mean(R)| < kZeroVarianceTolerance (all rewards equal
// up to rounding).
bool IsZeroVariance(const std::vector<double>& rewards);

// Whether the configured estimator uses std-normalised advantages: when its
// registered traits say so (how its paper defines it), or loss.std_normalize
// [D]. False for an unregistered name unless loss.std_normalize. The batcher
// asks its ParsedEstimator (estimator_registry.h); this is the same answer
// from a bare config.
bool UsesStdNormalizedAdvantages(const LossConfig& loss);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_ADVANTAGE_H_
