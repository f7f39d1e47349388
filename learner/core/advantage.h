// Group-relative advantages (ALGORITHMS.md, "Notation").
//
// Torch-free. Thread-compatible: pure functions.
#ifndef RLVR_LEARNER_CORE_ADVANTAGE_H_
#define RLVR_LEARNER_CORE_ADVANTAGE_H_

#include <vector>

#include "common/run_config.h"

namespace rlvr::learner {

// A group whose centred advantages are all below this in absolute value carries
// no learning signal ("zero-variance" group).
inline constexpr double kZeroVarianceTolerance = 1e-12;

// Added to std(R) when advantages are std-normalised (ALGORITHMS.md).
inline constexpr double kStdNormalizeEpsilon = 1e-6;

// A_i = R_i - mean(R); if `std_normalize`, divided by std(R) + 1e-6 where std
// is the population standard deviation (divide by G) [D]. Both keep
// sum_i A_i = 0 up to rounding. Empty input gives an empty result.
std::vector<double> GroupAdvantages(const std::vector<double>& rewards, bool std_normalize);

// True when every |R_i - mean(R)| < kZeroVarianceTolerance (all rewards equal).
bool IsZeroVariance(const std::vector<double>& rewards);

// Whether the configured estimator uses std-normalised advantages: grpo and
// gspo always do (that is how those papers define them); dfpo, dr_grpo and
// dapo follow loss.std_normalize [D] (default false).
bool UsesStdNormalizedAdvantages(const LossConfig& loss);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_ADVANTAGE_H_
