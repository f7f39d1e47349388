// Mathematical equivalence of two parsed answers (common/math/parser.h): the
// rules are documented in docs/math-verifier.md ("The math verifier"). In short:
//  - numbers: exact rational equality when both sides are rational; a decimal
//    against an exact value (1/3 vs 0.3333333), or anything irrational (pi,
//    sqrt 2), numerically with `relative_tolerance` (decimals) or
//    `symbolic_tolerance` (exact forms);
//  - expressions with free variables: equal values at deterministic sample
//    points (positive ones, then negative ones where both sides are real);
//  - \pm: the set of both signs; percent: X\% equals X/100 and X; degrees:
//    X^\circ equals X and X*pi/180;
//  - sets and lists: as sets; tuples, matrices: in order; intervals: ends and
//    openness; unions of intervals: as sets of reals (merged);
//  - equations and inequalities: an assignment "x = 3" by its right side; in
//    one variable with constant bounds as the set of its solutions; otherwise
//    when their sides' differences are proportional (by a positive factor for
//    inequalities).
// Every comparison runs under a work budget; past it the result is
// kNotComparable, never a hang.
//
// Thread safety: pure function.
#ifndef RLVR_COMMON_MATH_EQUIVALENCE_H_
#define RLVR_COMMON_MATH_EQUIVALENCE_H_

#include <cstdint>
#include <string>

#include "common/math/expr.h"

namespace rlvr::math {

struct EquivalenceOptions {
  // Relative tolerance when one side is written as a decimal and the other is
  // an exact non-decimal value, or a value is irrational: equal when
  // |a - b| <= tol * max(|a|, |b|) + 1000 * (the first-order estimate of the
  // rounding error of both evaluations; common/math/eval.h). 1e-6:
  // 0.3333333 = 1/3, 0.333 != 1/3, 3.1415927 = pi, 3.14 != pi.
  double relative_tolerance = 1e-6;
  // The same test for two exact forms evaluated in floating point (long
  // double, 64-bit mantissa): \sqrt{12} = 2\sqrt{3}, \sin^2 x + \cos^2 x = 1,
  // but \sqrt{10001} - 100 != 1/200.
  double symbolic_tolerance = 1e-12;
  // Work units (big-integer limb products and expression nodes) a comparison
  // may spend; a few milliseconds at most.
  int64_t work_budget = 2000000;
  // Sample points for expressions with free variables: this many in (0.4, 2.9)
  // (all must agree) and half as many negative ones (those where both sides
  // are real must agree).
  int sample_points = 6;
};

enum class Outcome { kEqual, kDifferent, kNotComparable };

struct Comparison {
  Outcome outcome = Outcome::kNotComparable;
  // Why, e.g. "equal as exact numbers (7/8)", "differ at x=1.2: 2.4 vs 1.44",
  // "not comparable: work budget exhausted".
  std::string reason;
};

// Compares `answer` with `reference` (the order matters only for messages).
Comparison CompareAnswers(const Expr& reference, const Expr& answer,
                          const EquivalenceOptions& options = {});

}  // namespace rlvr::math

#endif  // RLVR_COMMON_MATH_EQUIVALENCE_H_
