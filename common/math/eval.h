// Evaluation of scalar expression trees (common/math/expr.h): exactly, as
// complex rationals, where every step is rational (numbers, + - * /, integer
// powers, perfect roots, factorials, i); otherwise numerically in complex long
// double at given values of the free variables.
//
// Conventions: \log and \ln are natural logarithms (\log_b with a base);
// trigonometric functions take radians, and an argument in degrees (30^\circ)
// is converted; a negative real base to a rational power p/q with q odd is the
// real root (\sqrt[3]{-8} = (-8)^{1/3} = -2); other powers and roots of
// negative numbers take the principal complex value; 0^0 = 1.
//
// Thread safety: pure functions of their arguments; a context belongs to one
// thread.
#ifndef RLVR_COMMON_MATH_EVAL_H_
#define RLVR_COMMON_MATH_EVAL_H_

#include <complex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/math/bigint.h"
#include "common/math/expr.h"

namespace rlvr::math {

using Complex = std::complex<long double>;

// An exact complex rational re + im i.
struct ExactValue {
  Rational re;
  Rational im;
  bool is_real() const { return im.is_zero(); }
};

// Why an evaluation gave no value.
enum class EvalFailure {
  kNone,
  kNotExact,   // EvalExact only: a step is not rational (pi, sqrt(2), a variable).
  kUndefined,  // division by zero, a domain error, a non-integer factorial.
  kBudget,     // the work budget or the size bound ran out.
};

struct EvalContext {
  WorkBudget* budget = nullptr;  // Required.
  // Free variables and their values (numeric evaluation), sorted by name.
  std::vector<std::pair<std::string, Complex>> variables;
  int pm_sign = 1;                           // Branch of every \pm (and the opposite for \mp).
  bool percent_as_written = false;           // X\% evaluates to X instead of X/100.
  bool degrees_as_radians = false;           // X^\circ evaluates to X*pi/180 instead of X.
  EvalFailure failure = EvalFailure::kNone;  // Set by a failed evaluation.
};

// The exact value of scalar node `node`, or nullopt (context.failure says why).
std::optional<ExactValue> EvalExact(const Expr& expr, int node, EvalContext* context);

// A numeric value and a first-order estimate of its absolute rounding error
// (each step's rounding, propagated through the derivatives of the
// operations): what a comparison must tolerate besides its tolerance (sin(pi)
// evaluates to ~1e-19, not 0).
struct NumericValue {
  Complex value;
  long double error = 0;
};

// The numeric value of scalar node `node` (variables from the context; a
// missing one is kUndefined), or nullopt. Non-finite results are returned
// as they are (inf for \infty); the caller decides.
std::optional<NumericValue> EvalNumeric(const Expr& expr, int node, EvalContext* context);

// Properties of the subtree at `node`.
struct ScalarTraits {
  std::set<std::string> variables;
  bool decimal = false;     // a number written as a decimal
  bool plus_minus = false;  // \pm or \mp
  bool percent = false;     // a \% outside any function argument
  bool degree = false;      // a degree sign outside trigonometric arguments
  bool infinity = false;    // \infty
  bool base_numeral = false;
  int nodes = 0;
};
ScalarTraits TraitsOf(const Expr& expr, int node);

}  // namespace rlvr::math

#endif  // RLVR_COMMON_MATH_EVAL_H_
