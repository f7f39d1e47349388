// The "math" verifier: rewards that judge the mathematics, not the spelling.
//
// The completion's final answer (common/math/extract.h: the last \boxed{},
// else a "final answer is" phrase, else the last math span) and the
// reference (its box, else the text after "####", else all of it) are parsed
// (common/math/parser.h) and compared by value (common/math/equivalence.h).
// A reference that is a single capital letter (A, (C), \text{B}) is a
// multiple-choice answer, compared by letter. What does not parse, or cannot
// be compared within the work budget, falls back to the "boxed" verifier's
// normalised string equality (NormalizeLatexAnswer), and the reason says so.
//
// Reward: 1 when equivalent; format_reward when wrong but well formed (the
// answer came from a box or a final-answer phrase and parses); else 0.
// Reasons start with "correct", "wrong", "wrong (well formed)" or "no answer".
//
// Thread safety: immutable; Verify may be called concurrently.
#ifndef RLVR_COMMON_TASKS_MATH_VERIFIER_H_
#define RLVR_COMMON_TASKS_MATH_VERIFIER_H_

#include <memory>

#include "common/math/equivalence.h"
#include "common/math/parser.h"
#include "common/tasks/verifier.h"

namespace rlvr {

struct MathVerifierOptions {
  // Reward of a wrong but well-formed answer, in [0, 1).
  double format_reward = 0.0;
  // Tolerances and the work budget (defaults in common/math/equivalence.h).
  math::EquivalenceOptions equivalence;
  // Input limits of the parser (defaults in common/math/parser.h).
  math::ParseOptions parse;
};

// The verifier MakeVerifier("math", ...) returns; options are not checked
// here (MakeVerifier does).
std::unique_ptr<Verifier> MakeMathVerifier(const MathVerifierOptions& options);

}  // namespace rlvr

#endif  // RLVR_COMMON_TASKS_MATH_VERIFIER_H_
