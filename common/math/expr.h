// The expression tree of a parsed math answer (common/math/parser.h builds it,
// equivalence.h compares two, print.h writes its canonical form).
//
// Nodes live in one arena (Expr::nodes) and refer to their children by index,
// so a tree is one allocation-friendly value that copies and moves cheaply.
// Invariants: children precede nothing in particular, but every index is in
// range and the graph is a tree rooted at Expr::root.
#ifndef RLVR_COMMON_MATH_EXPR_H_
#define RLVR_COMMON_MATH_EXPR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/math/bigint.h"

namespace rlvr::math {

enum class Kind : uint8_t {
  // ---- scalars
  kNumber,       // number (exact); decimal: written with a point or exponent
  kConstant,     // name: "pi", "e", "i", "inf"
  kVariable,     // name: "x", "x_1", "\alpha"
  kAdd,          // kids: terms (n >= 2)
  kMul,          // kids: factors (n >= 2)
  kDiv,          // kids: numerator, denominator
  kNeg,          // kids: operand
  kPow,          // kids: base, exponent
  kPlusMinus,    // kids: operand; the value is +operand or -operand
  kFunction,     // name: sqrt, root, sin, ..., log, ln, exp, abs, floor, ceil, factorial, binom;
                 // kids: arguments (root: radicand, index; log with a base: argument, base)
  kPercent,      // kids: operand (value operand/100, or operand as written)
  kDegree,       // kids: operand in degrees
  kBaseNumeral,  // name: digits; base: the base (204_5)
  // ---- structures
  kTuple,     // kids: elements (n >= 2); parenthesised (a, b) may also be an open interval
  kSet,       // kids: elements (n >= 0): \{a, b\}
  kList,      // kids: answers separated by ',', ';', "and", "or"
  kInterval,  // kids: low, high; left_open, right_open
  kUnion,     // kids: sets, intervals, tuples (n >= 2)
  kRelation,  // kids: operands (n >= 2); ops: the n-1 relations between them
  kMatrix,    // kids: entries row-major; rows x cols
  kText,      // name: words (a text answer such as "Evelyn")
  kChoice,    // name: the letter of a multiple-choice answer ("C")
  kEllipsis,  // "\ldots" in a list
};

enum class RelOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kApprox, kIn };

struct Node {
  Kind kind = Kind::kNumber;
  bool decimal = false;     // kNumber: written as a decimal or in scientific notation.
  bool left_open = false;   // kInterval
  bool right_open = false;  // kInterval
  bool call = false;        // kMul: "f(x)" written as a name directly followed by '('.
  int rows = 0;             // kMatrix
  int cols = 0;             // kMatrix
  int base = 0;             // kBaseNumeral
  std::string name;         // see Kind
  Rational value;           // kNumber
  std::vector<int> kids;
  std::vector<RelOp> ops;  // kRelation
};

struct Expr {
  std::vector<Node> nodes;
  int root = -1;

  const Node& at(int i) const { return nodes[static_cast<size_t>(i)]; }
  Node& at(int i) { return nodes[static_cast<size_t>(i)]; }
  int Add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }
};

// Whether `kind` is a scalar expression kind (kNumber .. kBaseNumeral).
inline bool IsScalarKind(Kind kind) { return kind <= Kind::kBaseNumeral; }

}  // namespace rlvr::math

#endif  // RLVR_COMMON_MATH_EXPR_H_
