// The answer parser: LaTeX and plain-text math to an expression tree
// (common/math/expr.h). The grammar is documented in docs/math-verifier.md ("The math
// verifier"); in short:
//
//   answer   := item (sep item)*            sep: , ; "and" "or" \text{and}
//   item     := union (relop union)*        = \ne < > \le \ge \approx \in
//   union    := sum (\cup sum)*
//   sum      := term ((+ | - | \pm | \mp) term)*
//   term     := unary ((* \cdot \times / \div | implicit) unary)*  [unit words]
//   unary    := (- | + | \pm | \mp) unary | power
//   power    := postfix (^ exponent)?        right associative
//   postfix  := primary (! | \% | ^\circ)*
//   primary  := number | letter | \pi | e | i | \infty | (..) | [..] | (..] | [..) | \{..\}
//             | {..} | |..| | \frac | \sqrt[n] | \binom | function | matrix | \text{..}
//
// Numbers: integers, decimals, ".5", thousands separators ("1,000" outside
// brackets, "1{,}000", "1,\!000", "1\,000"), scientific notation ("1.5e3"),
// repeating decimals ("0.\overline{3}"), mixed numbers ("2\frac{1}{2}",
// "4 4/9") and base numerals ("204_5"). Spacing commands, \left/\right,
// \displaystyle, \mathbf and other style commands, "$" and "\$" are ignored;
// Unicode operators (×, ÷, −, ±, ≤, ≥, ≠, ≈, √, π, ∞, °, ², ³) are read as their
// LaTeX forms.
//
// Thread safety: pure functions.
#ifndef RLVR_COMMON_MATH_PARSER_H_
#define RLVR_COMMON_MATH_PARSER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/math/expr.h"

namespace rlvr::math {

struct ParseOptions {
  // Longer input is not parsed (ResourceExhausted).
  int max_chars = 4096;
  // Deepest nesting of brackets, fractions, powers and function arguments.
  int max_depth = 64;
  // Most expression nodes a parse may create.
  int max_nodes = 4096;
};

// Parses one answer (the content of a box, a reference, ...). Surrounding math
// delimiters ($..$, \(..\), \[..\]), a \boxed{..} around everything, and
// trailing sentence punctuation are removed first. InvalidArgument (with the
// offending position) for what is not in the grammar; ResourceExhausted for
// input past the options' limits.
absl::StatusOr<Expr> ParseAnswer(absl::string_view text, const ParseOptions& options = {});

// The letter of a multiple-choice answer: "C", "(C)", "\text{(C)}",
// "\textbf{C}". With `lenient` (for a completion's answer when the reference
// is a letter) also "c", "(C) 12", "C)", "C.", "option C", "choice (C)".
std::optional<char> ParseChoice(absl::string_view text, bool lenient);

}  // namespace rlvr::math

#endif  // RLVR_COMMON_MATH_PARSER_H_
