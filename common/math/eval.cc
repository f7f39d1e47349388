#include "common/math/eval.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>

namespace rlvr::math {
namespace {

constexpr long double kPi = 3.141592653589793238462643383279502884L;
constexpr long double kE = 2.718281828459045235360287471352662498L;

// ------------------------------------------------------------------ exact

class Exact {
 public:
  Exact(const Expr& expr, EvalContext* ctx) : expr_(expr), ctx_(ctx) {}

  std::optional<ExactValue> Eval(int node, bool in_trig) {
    if (!ctx_->budget->Spend(1)) return Fail(EvalFailure::kBudget);
    const Node& n = expr_.at(node);
    switch (n.kind) {
      case Kind::kNumber:
        return ExactValue{n.value, Rational()};
      case Kind::kConstant:
        if (n.name == "i") return ExactValue{Rational(), Rational(1)};
        return Fail(EvalFailure::kNotExact);
      case Kind::kVariable:
        return Fail(EvalFailure::kNotExact);
      case Kind::kAdd: {
        ExactValue sum{Rational(), Rational()};
        for (int k : n.kids) {
          auto v = Eval(k, in_trig);
          if (!v.has_value()) return std::nullopt;
          auto s = Add(sum, *v);
          if (!s.has_value()) return std::nullopt;
          sum = std::move(*s);
        }
        return sum;
      }
      case Kind::kMul: {
        ExactValue prod{Rational(1), Rational()};
        for (int k : n.kids) {
          auto v = Eval(k, in_trig);
          if (!v.has_value()) return std::nullopt;
          auto p = Mul(prod, *v);
          if (!p.has_value()) return std::nullopt;
          prod = std::move(*p);
        }
        return prod;
      }
      case Kind::kDiv: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a.has_value()) return std::nullopt;
        auto b = Eval(n.kids[1], in_trig);
        if (!b.has_value()) return std::nullopt;
        return Div(*a, *b);
      }
      case Kind::kNeg: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a.has_value()) return std::nullopt;
        return ExactValue{a->re.Negated(), a->im.Negated()};
      }
      case Kind::kPlusMinus: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a.has_value()) return std::nullopt;
        const int sign = ctx_->pm_sign * (n.name == "mp" ? -1 : 1);
        if (sign > 0) return a;
        return ExactValue{a->re.Negated(), a->im.Negated()};
      }
      case Kind::kPercent: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a.has_value() || ctx_->percent_as_written) return a;
        return Div(*a, ExactValue{Rational(100), Rational()});
      }
      case Kind::kDegree:
        if (in_trig || ctx_->degrees_as_radians) return Fail(EvalFailure::kNotExact);
        return Eval(n.kids[0], in_trig);
      case Kind::kPow:
        return Pow(n, in_trig);
      case Kind::kFunction:
        return Function(n, in_trig);
      default:
        return Fail(EvalFailure::kUndefined);
    }
  }

 private:
  std::nullopt_t Fail(EvalFailure f) {
    if (ctx_->failure == EvalFailure::kNone || f == EvalFailure::kBudget) ctx_->failure = f;
    return std::nullopt;
  }
  template <typename T>
  std::optional<T> Checked(std::optional<T> v) {
    if (!v.has_value()) Fail(EvalFailure::kBudget);
    return v;
  }

  std::optional<ExactValue> Add(const ExactValue& a, const ExactValue& b) {
    auto re = Checked(Rational::Add(a.re, b.re, ctx_->budget));
    if (!re.has_value()) return std::nullopt;
    if (a.im.is_zero() && b.im.is_zero()) return ExactValue{std::move(*re), Rational()};
    auto im = Checked(Rational::Add(a.im, b.im, ctx_->budget));
    if (!im.has_value()) return std::nullopt;
    return ExactValue{std::move(*re), std::move(*im)};
  }

  std::optional<ExactValue> Mul(const ExactValue& a, const ExactValue& b) {
    WorkBudget* w = ctx_->budget;
    if (a.im.is_zero() && b.im.is_zero()) {
      auto re = Checked(Rational::Mul(a.re, b.re, w));
      if (!re.has_value()) return std::nullopt;
      return ExactValue{std::move(*re), Rational()};
    }
    auto ac = Checked(Rational::Mul(a.re, b.re, w));
    auto bd = Checked(Rational::Mul(a.im, b.im, w));
    auto ad = Checked(Rational::Mul(a.re, b.im, w));
    auto bc = Checked(Rational::Mul(a.im, b.re, w));
    if (!ac || !bd || !ad || !bc) return std::nullopt;
    auto re = Checked(Rational::Sub(*ac, *bd, w));
    auto im = Checked(Rational::Add(*ad, *bc, w));
    if (!re || !im) return std::nullopt;
    return ExactValue{std::move(*re), std::move(*im)};
  }

  std::optional<ExactValue> Div(const ExactValue& a, const ExactValue& b) {
    WorkBudget* w = ctx_->budget;
    if (b.re.is_zero() && b.im.is_zero()) return Fail(EvalFailure::kUndefined);
    if (b.im.is_zero()) {
      auto re = Checked(Rational::Div(a.re, b.re, w));
      auto im = Checked(Rational::Div(a.im, b.re, w));
      if (!re || !im) return std::nullopt;
      return ExactValue{std::move(*re), std::move(*im)};
    }
    // a / b = a * conj(b) / |b|^2.
    auto rr = Checked(Rational::Mul(b.re, b.re, w));
    auto ii = Checked(Rational::Mul(b.im, b.im, w));
    if (!rr || !ii) return std::nullopt;
    auto norm = Checked(Rational::Add(*rr, *ii, w));
    if (!norm) return std::nullopt;
    auto num = Mul(a, ExactValue{b.re, b.im.Negated()});
    if (!num) return std::nullopt;
    auto re = Checked(Rational::Div(num->re, *norm, w));
    auto im = Checked(Rational::Div(num->im, *norm, w));
    if (!re || !im) return std::nullopt;
    return ExactValue{std::move(*re), std::move(*im)};
  }

  std::optional<ExactValue> IntPow(const ExactValue& base, int64_t e) {
    if (base.im.is_zero()) {
      if (base.re.is_zero() && e < 0) return Fail(EvalFailure::kUndefined);
      auto r = Checked(Rational::Pow(base.re, e, ctx_->budget));
      if (!r) return std::nullopt;
      return ExactValue{std::move(*r), Rational()};
    }
    if (e < 0) {
      auto p = IntPow(base, -e);
      if (!p) return std::nullopt;
      return Div(ExactValue{Rational(1), Rational()}, *p);
    }
    if (e > 100000) return Fail(EvalFailure::kBudget);
    ExactValue result{Rational(1), Rational()}, b = base;
    while (e > 0) {
      if (e & 1) {
        auto r = Mul(result, b);
        if (!r) return std::nullopt;
        result = std::move(*r);
      }
      e >>= 1;
      if (e == 0) break;
      auto sq = Mul(b, b);
      if (!sq) return std::nullopt;
      b = std::move(*sq);
    }
    return result;
  }

  // base^(p/q) for a real rational base when both parts are perfect q-th powers.
  std::optional<ExactValue> RationalRoot(const Rational& base, const BigInt& p, const BigInt& q) {
    auto q64 = q.ToInt64();
    auto p64 = p.ToInt64();
    if (!q64 || !p64 || *q64 > 64 || *p64 > 100000 || *p64 < -100000) {
      return Fail(EvalFailure::kNotExact);
    }
    if (base.negative() && *q64 % 2 == 0) return Fail(EvalFailure::kNotExact);
    auto rn = BigInt::ExactRoot(base.num(), static_cast<int>(*q64), ctx_->budget);
    auto rd =
        rn ? BigInt::ExactRoot(base.den(), static_cast<int>(*q64), ctx_->budget) : std::nullopt;
    if (ctx_->budget->exhausted()) return Fail(EvalFailure::kBudget);
    if (!rn || !rd) return Fail(EvalFailure::kNotExact);
    auto root = Checked(Rational::Make(*rn, *rd, ctx_->budget));
    if (!root) return std::nullopt;
    return IntPow(ExactValue{std::move(*root), Rational()}, *p64);
  }

  std::optional<ExactValue> Pow(const Node& n, bool in_trig) {
    auto base = Eval(n.kids[0], in_trig);
    if (!base) return std::nullopt;
    auto e = Eval(n.kids[1], in_trig);
    if (!e) return std::nullopt;
    if (!e->im.is_zero()) return Fail(EvalFailure::kNotExact);
    if (base->re.is_zero() && base->im.is_zero()) {
      if (e->re.is_zero()) return ExactValue{Rational(1), Rational()};
      if (e->re.negative()) return Fail(EvalFailure::kUndefined);
      return ExactValue{Rational(), Rational()};
    }
    if (e->re.is_integer()) {
      auto k = e->re.num().ToInt64();
      if (!k || *k > 1000000 || *k < -1000000) {
        // |base| = 1 stays exact; anything else is past the size bound.
        if (base->im.is_zero() && (base->re == Rational(1) || base->re == Rational(-1)) && k) {
          return IntPow(*base, *k % 2 == 0 ? 2 : 1);
        }
        return Fail(EvalFailure::kBudget);
      }
      return IntPow(*base, *k);
    }
    if (!base->im.is_zero()) return Fail(EvalFailure::kNotExact);
    return RationalRoot(base->re, e->re.num(), e->re.den());
  }

  std::optional<ExactValue> Function(const Node& n, bool in_trig) {
    const std::string& f = n.name;
    if (f == "sqrt" || f == "root") {
      auto a = Eval(n.kids[0], in_trig);
      if (!a) return std::nullopt;
      int64_t index = 2;
      if (f == "root") {
        auto idx = Eval(n.kids[1], in_trig);
        if (!idx) return std::nullopt;
        if (!idx->is_real() || !idx->re.is_integer()) return Fail(EvalFailure::kNotExact);
        auto v = idx->re.num().ToInt64();
        if (!v || *v < 2 || *v > 64) return Fail(EvalFailure::kNotExact);
        index = *v;
      }
      if (!a->is_real()) return Fail(EvalFailure::kNotExact);
      if (index == 2 && a->re.negative()) {
        // sqrt(-4) = 2i.
        auto r = RationalRoot(a->re.Negated(), BigInt(1), BigInt(2));
        if (!r) return std::nullopt;
        return ExactValue{Rational(), r->re};
      }
      return RationalRoot(a->re, BigInt(1), BigInt(index));
    }
    if (f == "abs") {
      auto a = Eval(n.kids[0], in_trig);
      if (!a) return std::nullopt;
      if (!a->is_real()) {
        if (a->re.is_zero())
          return ExactValue{a->im.negative() ? a->im.Negated() : a->im, Rational()};
        return Fail(EvalFailure::kNotExact);
      }
      return ExactValue{a->re.negative() ? a->re.Negated() : a->re, Rational()};
    }
    if (f == "floor" || f == "ceil") {
      auto a = Eval(n.kids[0], in_trig);
      if (!a) return std::nullopt;
      if (!a->is_real()) return Fail(EvalFailure::kUndefined);
      auto qr = BigInt::DivMod(a->re.num(), a->re.den(), ctx_->budget);
      if (!qr) return Fail(EvalFailure::kBudget);
      BigInt q = qr->first;
      if (!qr->second.is_zero()) {
        const bool neg = a->re.negative();
        if (f == "floor" && neg) q = *BigInt::Sub(q, BigInt(1), nullptr);
        if (f == "ceil" && !neg) q = *BigInt::Add(q, BigInt(1), nullptr);
      }
      auto r = Checked(Rational::Make(q, BigInt(1), ctx_->budget));
      if (!r) return std::nullopt;
      return ExactValue{std::move(*r), Rational()};
    }
    if (f == "factorial") {
      auto a = Eval(n.kids[0], in_trig);
      if (!a) return std::nullopt;
      if (!a->is_real() || !a->re.is_integer() || a->re.negative()) {
        return Fail(EvalFailure::kUndefined);
      }
      auto v = a->re.num().ToInt64();
      if (!v || *v > 2000) return Fail(EvalFailure::kBudget);
      BigInt acc(1);
      for (int64_t k = 2; k <= *v; ++k) {
        auto m = BigInt::Mul(acc, BigInt(k), ctx_->budget);
        if (!m || m->bits() > kMaxBits) return Fail(EvalFailure::kBudget);
        acc = std::move(*m);
      }
      return ExactValue{*Rational::Make(acc, BigInt(1), nullptr), Rational()};
    }
    if (f == "binom") {
      auto a = Eval(n.kids[0], in_trig);
      auto b = a ? Eval(n.kids[1], in_trig) : std::nullopt;
      if (!a || !b) return std::nullopt;
      if (!a->is_real() || !b->is_real() || !a->re.is_integer() || !b->re.is_integer()) {
        return Fail(EvalFailure::kNotExact);
      }
      auto nn = a->re.num().ToInt64();
      auto kk = b->re.num().ToInt64();
      if (!nn || !kk) return Fail(EvalFailure::kBudget);
      if (*kk < 0 || (*nn >= 0 && *kk > *nn)) return ExactValue{Rational(), Rational()};
      if (*kk > 100000) return Fail(EvalFailure::kBudget);
      // n (n-1) ... (n-k+1) / k!, exact for negative n too.
      Rational acc(1);
      for (int64_t i = 0; i < *kk; ++i) {
        auto m = Checked(Rational::Mul(acc, Rational(*nn - i), ctx_->budget));
        if (!m) return std::nullopt;
        auto d = Checked(Rational::Div(*m, Rational(i + 1), ctx_->budget));
        if (!d) return std::nullopt;
        acc = std::move(*d);
      }
      return ExactValue{std::move(acc), Rational()};
    }
    if (f == "gcd" || f == "lcm") {
      BigInt acc;
      bool first = true;
      for (int k : n.kids) {
        auto a = Eval(k, in_trig);
        if (!a) return std::nullopt;
        if (!a->is_real() || !a->re.is_integer()) return Fail(EvalFailure::kUndefined);
        const BigInt v = a->re.num().Abs();
        if (first) {
          acc = v;
          first = false;
          continue;
        }
        auto g = BigInt::Gcd(acc, v, ctx_->budget);
        if (!g) return Fail(EvalFailure::kBudget);
        if (f == "gcd") {
          acc = std::move(*g);
        } else if (g->is_zero()) {
          acc = BigInt();
        } else {
          auto q = BigInt::DivMod(acc, *g, ctx_->budget);
          auto m = q ? BigInt::Mul(q->first, v, ctx_->budget) : std::nullopt;
          if (!m || m->bits() > kMaxBits) return Fail(EvalFailure::kBudget);
          acc = std::move(*m);
        }
      }
      return ExactValue{*Rational::Make(acc, BigInt(1), nullptr), Rational()};
    }
    // exp(0) = 1, ln(1) = 0 and trigonometric functions of 0 are the only
    // rational values of the transcendental functions worth special-casing.
    if (n.kids.size() == 1) {
      auto a = Eval(n.kids[0], f == "sin" || f == "cos" || f == "tan" || in_trig);
      if (!a) return std::nullopt;
      const bool zero = a->re.is_zero() && a->im.is_zero();
      const bool one = a->im.is_zero() && a->re == Rational(1);
      if (zero && (f == "sin" || f == "tan" || f == "arcsin" || f == "arctan" || f == "sinh" ||
                   f == "tanh")) {
        return ExactValue{Rational(), Rational()};
      }
      if (zero && (f == "cos" || f == "exp" || f == "cosh"))
        return ExactValue{Rational(1), Rational()};
      if (one && (f == "ln" || f == "log")) return ExactValue{Rational(), Rational()};
    }
    return Fail(EvalFailure::kNotExact);
  }

  const Expr& expr_;
  EvalContext* ctx_;
};

// ---------------------------------------------------------------- numeric

bool IsTrig(const std::string& f) {
  return f == "sin" || f == "cos" || f == "tan" || f == "sec" || f == "csc" || f == "cot";
}

bool IsReal(const Complex& z) {
  return z.imag() == 0 || std::fabs(z.imag()) <= 1e-15L * std::max(1.0L, std::fabs(z.real()));
}

constexpr long double kEps = LDBL_EPSILON;

// A value and a first-order estimate of its absolute rounding error.
struct Val {
  Complex v;
  long double err = 0;
};

class Numeric {
 public:
  Numeric(const Expr& expr, EvalContext* ctx) : expr_(expr), ctx_(ctx) {}

  std::optional<Val> Eval(int node, bool in_trig) {
    if (!ctx_->budget->Spend(1)) return Fail(EvalFailure::kBudget);
    auto v = EvalNode(node, in_trig);
    if (v) v->err += std::abs(v->v) * kEps;  // this step's own rounding
    return v;
  }

 private:
  std::nullopt_t Fail(EvalFailure f) {
    if (ctx_->failure == EvalFailure::kNone || f == EvalFailure::kBudget) ctx_->failure = f;
    return std::nullopt;
  }

  // The exact value of an exponent or root index, when it has one.
  std::optional<ExactValue> ExactOf(int node) {
    EvalContext sub;
    sub.budget = ctx_->budget;
    sub.pm_sign = ctx_->pm_sign;
    sub.percent_as_written = ctx_->percent_as_written;
    sub.degrees_as_radians = ctx_->degrees_as_radians;
    Exact exact(expr_, &sub);
    auto v = exact.Eval(node, false);
    if (sub.failure == EvalFailure::kBudget) ctx_->failure = EvalFailure::kBudget;
    return v;
  }

  static Val Scaled(const Val& a, const Complex& factor) {
    return Val{a.v * factor, a.err * std::abs(factor)};
  }

  std::optional<Val> EvalNode(int node, bool in_trig) {
    const Node& n = expr_.at(node);
    switch (n.kind) {
      case Kind::kNumber:
        return Val{Complex(n.value.ToLongDouble(), 0), 0};
      case Kind::kConstant:
        if (n.name == "pi") return Val{Complex(kPi, 0), 0};
        if (n.name == "e") return Val{Complex(kE, 0), 0};
        if (n.name == "i") return Val{Complex(0, 1), 0};
        return Val{Complex(HUGE_VALL, 0), 0};
      case Kind::kVariable: {
        for (const auto& [name, value] : ctx_->variables) {
          if (name == n.name) return Val{value, 0};
        }
        return Fail(EvalFailure::kUndefined);
      }
      case Kind::kAdd: {
        Val sum{0, 0};
        for (int k : n.kids) {
          auto v = Eval(k, in_trig);
          if (!v) return std::nullopt;
          sum.v += v->v;
          sum.err += v->err + std::abs(sum.v) * kEps;
        }
        return sum;
      }
      case Kind::kMul: {
        std::vector<Val> f;
        for (int k : n.kids) {
          auto v = Eval(k, in_trig);
          if (!v) return std::nullopt;
          f.push_back(*v);
        }
        Val prod{1, 0};
        for (const Val& x : f) prod.v = RealAware(prod.v, x.v);
        // d(prod) = sum_k err_k * prod_{j != k} |v_j|.
        for (size_t k = 0; k < f.size(); ++k) {
          long double others = 1;
          for (size_t j = 0; j < f.size(); ++j) {
            if (j != k) others *= std::abs(f[j].v);
          }
          prod.err += f[k].err * others;
        }
        return prod;
      }
      case Kind::kDiv: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a) return std::nullopt;
        auto b = Eval(n.kids[1], in_trig);
        if (!b) return std::nullopt;
        if (b->v == Complex(0, 0)) return Fail(EvalFailure::kUndefined);
        const Complex q = (a->v.imag() == 0 && b->v.imag() == 0)
                              ? Complex(a->v.real() / b->v.real(), 0)
                              : a->v / b->v;
        return Val{q, (a->err + std::abs(q) * b->err) / std::abs(b->v)};
      }
      case Kind::kNeg: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a) return std::nullopt;
        return Val{-a->v, a->err};
      }
      case Kind::kPlusMinus: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a) return std::nullopt;
        const bool plus = ctx_->pm_sign * (n.name == "mp" ? -1 : 1) > 0;
        return Val{plus ? a->v : -a->v, a->err};
      }
      case Kind::kPercent: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a) return std::nullopt;
        return ctx_->percent_as_written ? *a : Scaled(*a, Complex(0.01L, 0));
      }
      case Kind::kDegree: {
        auto a = Eval(n.kids[0], in_trig);
        if (!a) return std::nullopt;
        return (in_trig || ctx_->degrees_as_radians) ? Scaled(*a, Complex(kPi / 180.0L, 0)) : *a;
      }
      case Kind::kPow:
        return Pow(n, in_trig);
      case Kind::kFunction:
        return Function(n, in_trig);
      default:
        return Fail(EvalFailure::kUndefined);
    }
  }

  static Complex RealAware(const Complex& a, const Complex& b) {
    if (a.imag() == 0 && b.imag() == 0) return Complex(a.real() * b.real(), 0);
    return a * b;
  }

  std::optional<Val> Pow(const Node& n, bool in_trig) {
    auto base = Eval(n.kids[0], in_trig);
    if (!base) return std::nullopt;
    auto e = Eval(n.kids[1], in_trig);
    if (!e) return std::nullopt;
    const Complex b = base->v, x = e->v;
    if (b == Complex(0, 0)) {
      if (x == Complex(0, 0)) return Val{Complex(1, 0), 0};
      if (x.real() < 0) return Fail(EvalFailure::kUndefined);
      return Val{Complex(0, 0), base->err};
    }
    std::optional<Complex> r;
    if (b.imag() == 0 && x.imag() == 0) {
      const long double br = b.real(), xr = x.real();
      if (br > 0 || xr == std::floor(xr)) {
        r = Complex(std::pow(br, xr), 0);
      } else if (auto exact = ExactOf(n.kids[1]); exact && exact->is_real()) {
        // A negative base: the real root for an exact exponent p/q with q odd.
        auto q = exact->re.den().ToInt64();
        auto p = exact->re.num().ToInt64();
        if (q && p && *q % 2 == 1) {
          const long double mag = std::pow(-br, xr);
          r = Complex((*p % 2 == 0) ? mag : -mag, 0);
        }
      }
    }
    if (!r && x.imag() == 0 && x.real() == std::floor(x.real()) && std::fabs(x.real()) <= 64) {
      // Integer powers of complex numbers by multiplication (i^2 = -1 exactly).
      const long long k = static_cast<long long>(x.real());
      Complex acc = 1, m = k < 0 ? Complex(1, 0) / b : b;
      for (long long c = k < 0 ? -k : k; c > 0; --c) acc *= m;
      r = acc;
    }
    if (!r) r = std::pow(b, x);
    const long double mag = std::abs(*r);
    const long double err =
        mag == 0 ? 0
                 : mag * (std::abs(x) * base->err / std::abs(b) + std::abs(std::log(b)) * e->err);
    return Val{*r, err};
  }

  std::optional<Val> Function(const Node& n, bool in_trig) {
    const std::string& f = n.name;
    const bool trig = IsTrig(f);
    std::vector<Val> args;
    for (int k : n.kids) {
      auto v = Eval(k, in_trig || trig);
      if (!v) return std::nullopt;
      args.push_back(*v);
    }
    const Complex& x = args[0].v;
    const long double ex = args[0].err;
    auto value = FunctionValue(n, args);
    if (!value) return std::nullopt;
    const Complex r = *value;
    const long double ar = std::abs(r), ax = std::abs(x);
    long double err = ex;  // |f'| ~ 1: sin, cos, arctan, abs
    if (f == "sqrt") {
      err = ar > 0 ? ex / (2 * ar) : std::sqrt(ex);
    } else if (f == "root") {
      err = ar > 0 ? ar * ex / (ax * std::abs(args[1].v)) : ex;
    } else if (f == "exp" || f == "sinh" || f == "cosh") {
      err = std::max(ar, 1.0L) * ex;
    } else if (f == "log" || f == "ln") {
      err = ax > 0 ? ex / ax : HUGE_VALL;
      if (args.size() == 2)
        err = (err + ar * args[1].err / std::abs(args[1].v)) /
              std::max(std::abs(std::log(args[1].v)), kEps);
    } else if (f == "tan" || f == "sec" || f == "csc" || f == "cot") {
      err = (1 + ar * ar) * ex;
    } else if (f == "arcsin" || f == "arccos" || f == "arcsec" || f == "arccsc") {
      const long double d = std::sqrt(std::abs(Complex(1, 0) - x * x));
      err = d > 0 ? ex / d : std::sqrt(ex);
    } else if (f == "factorial" || f == "binom" || f == "gcd" || f == "lcm" || f == "floor" ||
               f == "ceil") {
      err = 0;
    }
    return Val{r, err};
  }

  std::optional<Complex> FunctionValue(const Node& n, const std::vector<Val>& argv) {
    const std::string& f = n.name;
    std::vector<Complex> args;
    for (const Val& a : argv) args.push_back(a.v);
    const Complex& x = args[0];
    const bool real = x.imag() == 0;
    const long double r = x.real();
    if (f == "sqrt") {
      if (real && r >= 0) return Complex(std::sqrt(r), 0);
      return std::sqrt(x);
    }
    if (f == "root") {
      auto idx = ExactOf(n.kids[1]);
      if (!idx || !idx->is_real() || !idx->re.is_integer()) return std::pow(x, 1.0L / args[1]);
      auto k = idx->re.num().ToInt64();
      if (!k || *k == 0) return Fail(EvalFailure::kUndefined);
      if (real && r < 0 && *k % 2 != 0) return Complex(-std::pow(-r, 1.0L / *k), 0);
      if (real && r >= 0) return Complex(std::pow(r, 1.0L / *k), 0);
      return std::pow(x, Complex(1.0L / *k, 0));
    }
    if (f == "abs") return Complex(std::abs(x), 0);
    if (f == "floor" || f == "ceil") {
      if (!IsReal(x)) return Fail(EvalFailure::kUndefined);
      return Complex(f == "floor" ? std::floor(r) : std::ceil(r), 0);
    }
    if (f == "factorial") {
      if (!IsReal(x) || r < 0 || std::fabs(r - std::round(r)) > 1e-9L) {
        return Fail(EvalFailure::kUndefined);
      }
      if (r > 5000) return Complex(HUGE_VALL, 0);
      return Complex(std::tgamma(std::round(r) + 1), 0);
    }
    if (f == "binom") {
      const Complex& k = args[1];
      if (!IsReal(x) || !IsReal(k)) return Fail(EvalFailure::kUndefined);
      const long double kr = std::round(k.real());
      if (std::fabs(k.real() - kr) > 1e-9L || kr > 100000) return Fail(EvalFailure::kUndefined);
      if (kr < 0) return Complex(0, 0);
      long double acc = 1;
      for (long double i = 0; i < kr; ++i) acc = acc * (r - i) / (i + 1);
      return Complex(acc, 0);
    }
    if (f == "gcd" || f == "lcm") {
      long long acc = 0;
      bool first = true;
      for (const Complex& a : args) {
        if (!IsReal(a) || std::fabs(a.real()) > 9e18L || a.real() != std::floor(a.real())) {
          return Fail(EvalFailure::kUndefined);
        }
        const long long v = std::llabs(static_cast<long long>(a.real()));
        if (first) {
          acc = v;
          first = false;
        } else if (f == "gcd") {
          acc = std::gcd(acc, v);
        } else {
          const long long g = std::gcd(acc, v);
          acc = g == 0 ? 0 : acc / g * v;
        }
      }
      return Complex(static_cast<long double>(acc), 0);
    }
    if (f == "log" || f == "ln") {
      if (x == Complex(0, 0)) return Fail(EvalFailure::kUndefined);
      Complex v = (real && r > 0) ? Complex(std::log(r), 0) : std::log(x);
      if (args.size() == 2) {
        const Complex& b = args[1];
        Complex lb = (b.imag() == 0 && b.real() > 0) ? Complex(std::log(b.real()), 0) : std::log(b);
        if (lb == Complex(0, 0)) return Fail(EvalFailure::kUndefined);
        v = (v.imag() == 0 && lb.imag() == 0) ? Complex(v.real() / lb.real(), 0) : v / lb;
      }
      return v;
    }
    if (real) {
      if (f == "exp") return Complex(std::exp(r), 0);
      if (f == "sin") return Complex(std::sin(r), 0);
      if (f == "cos") return Complex(std::cos(r), 0);
      if (f == "tan") return Complex(std::tan(r), 0);
      if (f == "sec") return Complex(1 / std::cos(r), 0);
      if (f == "csc") return Complex(1 / std::sin(r), 0);
      if (f == "cot") return Complex(1 / std::tan(r), 0);
      if (f == "arctan") return Complex(std::atan(r), 0);
      if (f == "arccot") return Complex(std::atan(1 / r), 0);
      if (f == "sinh") return Complex(std::sinh(r), 0);
      if (f == "cosh") return Complex(std::cosh(r), 0);
      if (f == "tanh") return Complex(std::tanh(r), 0);
      if ((f == "arcsin" || f == "arccos") && r >= -1 && r <= 1) {
        return Complex(f == "arcsin" ? std::asin(r) : std::acos(r), 0);
      }
      if ((f == "arcsec" || f == "arccsc") && (r <= -1 || r >= 1)) {
        return Complex(f == "arcsec" ? std::acos(1 / r) : std::asin(1 / r), 0);
      }
    }
    if (f == "exp") return std::exp(x);
    if (f == "sin") return std::sin(x);
    if (f == "cos") return std::cos(x);
    if (f == "tan") return std::tan(x);
    if (f == "sec") return Complex(1, 0) / std::cos(x);
    if (f == "csc") return Complex(1, 0) / std::sin(x);
    if (f == "cot") return Complex(1, 0) / std::tan(x);
    if (f == "arcsin") return std::asin(x);
    if (f == "arccos") return std::acos(x);
    if (f == "arctan") return std::atan(x);
    if (f == "arccot") return std::atan(Complex(1, 0) / x);
    if (f == "arcsec") return std::acos(Complex(1, 0) / x);
    if (f == "arccsc") return std::asin(Complex(1, 0) / x);
    if (f == "sinh") return std::sinh(x);
    if (f == "cosh") return std::cosh(x);
    if (f == "tanh") return std::tanh(x);
    return Fail(EvalFailure::kUndefined);
  }

  const Expr& expr_;
  EvalContext* ctx_;
};

void CollectTraits(const Expr& expr, int node, bool in_function, bool in_trig, ScalarTraits* t) {
  const Node& n = expr.at(node);
  ++t->nodes;
  switch (n.kind) {
    case Kind::kNumber:
      t->decimal = t->decimal || n.decimal;
      break;
    case Kind::kConstant:
      t->infinity = t->infinity || n.name == "inf";
      break;
    case Kind::kVariable:
      t->variables.insert(n.name);
      break;
    case Kind::kPlusMinus:
      t->plus_minus = true;
      break;
    case Kind::kPercent:
      t->percent = t->percent || !in_function;
      break;
    case Kind::kDegree:
      t->degree = t->degree || !in_trig;
      break;
    case Kind::kBaseNumeral:
      t->base_numeral = true;
      break;
    default:
      break;
  }
  const bool function = n.kind == Kind::kFunction;
  const bool trig = function && IsTrig(n.name);
  for (int k : n.kids) CollectTraits(expr, k, in_function || function, in_trig || trig, t);
}

}  // namespace

std::optional<ExactValue> EvalExact(const Expr& expr, int node, EvalContext* context) {
  Exact exact(expr, context);
  return exact.Eval(node, false);
}

std::optional<NumericValue> EvalNumeric(const Expr& expr, int node, EvalContext* context) {
  Numeric numeric(expr, context);
  auto v = numeric.Eval(node, false);
  if (!v) return std::nullopt;
  return NumericValue{v->v, v->err};
}

ScalarTraits TraitsOf(const Expr& expr, int node) {
  ScalarTraits t;
  CollectTraits(expr, node, false, false, &t);
  return t;
}

}  // namespace rlvr::math
