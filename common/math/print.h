// The canonical text of a parsed answer (common/math/expr.h): one plain
// notation whatever the input's spelling, so that a user can see how an
// answer was read. \frac{\sqrt3}{2} -> "sqrt(3)/2", \{2, 1\} -> "{2, 1}",
// 50\% -> "50%", x \geq 3 -> "x >= 3", 2x -> "2*x", \pm -> "+-".
//
// Thread safety: pure functions.
#ifndef RLVR_COMMON_MATH_PRINT_H_
#define RLVR_COMMON_MATH_PRINT_H_

#include <string>

#include "common/math/expr.h"

namespace rlvr::math {

// The canonical text of the whole tree.
std::string Canonical(const Expr& expr);
// The canonical text of the subtree at `node`.
std::string Canonical(const Expr& expr, int node);

}  // namespace rlvr::math

#endif  // RLVR_COMMON_MATH_PRINT_H_
