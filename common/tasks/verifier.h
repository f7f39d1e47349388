// Verifiers: score a completion's text against a reference answer.
//
// A Verifier extracts the completion's final answer, normalises both sides
// and compares them. The reward is 1 for a correct answer; for a wrong one it
// is `format_reward` when the completion is well formed (it carries an answer
// in the verifier's expected form, defined per verifier below), else 0.
//
// Verifiers (MakeVerifier names):
//  - "final_answer": the arithmetic task's verifier (VerifyFinalAnswer).
//    Well formed: some answer was extracted.
//  - "gsm8k": reference = the text after the last "####" (all of it when
//    there is none). Completion's answer = the first number after the last
//    "####", else the first number after the last "answer is"
//    (case-insensitive), else the last number. Numbers are normalised
//    (NormalizeGsm8kNumber) and compared as exact decimal strings, so any
//    length works. Well formed: a number follows a "####".
//  - "boxed": the content of the last complete \boxed{...} or \fbox{...}
//    (balanced braces; an unbalanced one is ignored), normalised with
//    NormalizeLatexAnswer and compared exactly or, when both sides are
//    numbers, as exact rationals (0.5 = \frac{1}{2} = 1/2 = \frac12).
//    Well formed: a complete, non-empty box.
//  - "exact": both sides trimmed of surrounding whitespace and compared
//    byte for byte. Well formed: a non-empty completion.
//  - "math": mathematical equivalence (common/tasks/math_verifier.h): the
//    last \boxed{}, else a "final answer is" phrase, else the last math span,
//    parsed and compared with the reference by value (fractions, radicals,
//    sets, intervals, equations, ...), falling back to the "boxed"
//    normalised string equality for what does not parse. Well formed: the
//    answer came from a box or a final-answer phrase and parses.
//
// Thread safety: a Verifier is immutable; Verify is const and may be called
// concurrently. Verify never fails and does no unbounded arithmetic: numbers
// of any length are compared as strings or, below 19 digits, as rationals
// with 128-bit cross products.
#ifndef RLVR_COMMON_TASKS_VERIFIER_H_
#define RLVR_COMMON_TASKS_VERIFIER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvr {

struct Verdict {
  double reward = 0.0;  // In [0, 1]: 1 correct, format_reward or 0 otherwise.
  std::string reason;   // Short, human-readable: "correct", "wrong: got 45, want 46", ...
};

// A verdict with what the verifier saw, for `rlvr verify`.
struct VerdictDetail {
  Verdict verdict;
  // The completion's answer as the verifier extracted it ("" when none).
  std::string extracted;
  // Whether the answer is in the verifier's expected form (see above).
  bool well_formed = false;
  // The verifier's normal form of the extracted answer and of the reference
  // (math: the canonical form of the parse); nullopt when there is none.
  std::optional<std::string> parsed_completion;
  std::optional<std::string> parsed_answer;
};

class Verifier {
 public:
  virtual ~Verifier() = default;
  // The name MakeVerifier was given.
  virtual std::string name() const = 0;
  // Scores `completion_text` (the decoded completion without its stop token)
  // against the reference `answer`. Pure function of its arguments.
  Verdict Verify(absl::string_view answer, absl::string_view completion_text) const {
    return Score(answer, completion_text, nullptr);
  }
  // The same verdict with the extracted answer and both normal forms.
  VerdictDetail Explain(absl::string_view answer, absl::string_view completion_text) const {
    VerdictDetail detail;
    detail.verdict = Score(answer, completion_text, &detail);
    return detail;
  }

 protected:
  // The verdict; fills `detail` (all but its verdict) when it is not null.
  virtual Verdict Score(absl::string_view answer, absl::string_view completion_text,
                        VerdictDetail* detail) const = 0;
};

// How MakeVerifier configures a verifier.
struct VerifierOptions {
  // The reward of a wrong but well-formed answer, in [0, 1).
  double format_reward = 0.0;
  // math: relative tolerance between a decimal and an exact value (and for
  // irrational values), in (0, 0.1]. See docs/tasks.md.
  double math_relative_tolerance = 1e-6;
};

// The verifier called `name` (see above). InvalidArgument for an unknown name
// or options out of range (format_reward outside [0, 1), ...).
absl::StatusOr<std::unique_ptr<Verifier>> MakeVerifier(absl::string_view name,
                                                       const VerifierOptions& options);
// The same with only a format reward.
absl::StatusOr<std::unique_ptr<Verifier>> MakeVerifier(absl::string_view name,
                                                       double format_reward = 0.0);

// The names MakeVerifier knows, for messages: "final_answer, gsm8k, boxed, exact, math".
std::string KnownVerifierNames();

// --- final_answer (the arithmetic task's verifier) ---

// Extracts the final answer from `completion_text`: the content of the last
// \boxed{...} if any, otherwise the last number (optional sign, digits with
// optional 3-digit comma groups, optional decimals). Both sides are
// normalised (whitespace and commas removed, leading '+' and leading zeros
// dropped, "-0" -> "0", trailing decimal zeros dropped) and compared exactly.
// Reward 1 if equal, else 0, with the reason.
Verdict VerifyFinalAnswer(absl::string_view answer, absl::string_view completion_text);

// The normalised form used by VerifyFinalAnswer: for a number, its canonical
// text ("-001,234.50" -> "-1234.5"); otherwise the text with all whitespace
// removed. Exposed for tests.
std::string NormalizeAnswer(absl::string_view text);

// The extracted final answer of `completion_text` (unnormalised), or nullopt
// when there is none. Exposed for tests.
std::optional<std::string> ExtractFinalAnswer(absl::string_view completion_text);

// --- gsm8k ---

// The completion's answer as the gsm8k verifier extracts it (unnormalised),
// or nullopt.
std::optional<std::string> ExtractGsm8kAnswer(absl::string_view completion_text);

// "$1,234.00" -> "1234", " -5. " -> "-5", "50%" -> "50", "007" -> "7":
// spaces, '$', thousands commas, a trailing '.', a trailing '%' and trailing
// decimal zeros removed, leading zeros and '+' dropped. Not a number: the
// text with whitespace removed.
std::string NormalizeGsm8kNumber(absl::string_view text);

// --- boxed ---

// The content of the last complete \boxed{...} / \fbox{...} in `text`.
std::optional<std::string> LastBoxedContent(absl::string_view text);

// Normalises a LaTeX answer: whitespace, \left, \right, \!, \, \; \: removed;
// \dfrac and \tfrac -> \frac; \frac12 -> \frac{1}{2}; ^\circ, ^{\circ}, \%, %,
// \$, $ removed; a trailing '.' removed; \text{X} / \mbox{X} / \mathrm{X} ->
// X, except that a unit after a number ("5\text{ cm}") is dropped; thousands
// commas in a plain integer removed ("1,000" -> "1000", "1,2" kept).
std::string NormalizeLatexAnswer(absl::string_view text);

// Whether two normalised LaTeX answers are equal: as strings, or as exact
// rationals when both parse as numbers (integer, decimal, a/b, \frac{a}{b},
// with an optional leading '-').
bool LatexAnswersEqual(const std::string& a, const std::string& b);

}  // namespace rlvr

#endif  // RLVR_COMMON_TASKS_VERIFIER_H_
