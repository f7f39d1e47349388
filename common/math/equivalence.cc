#include "common/math/equivalence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/splitmix.h"
#include "common/math/eval.h"
#include "common/math/print.h"

namespace rlvr::math {
namespace {

struct Ref {
  const Expr* e = nullptr;
  int n = -1;
  const Node& node() const { return e->at(n); }
  Ref kid(size_t k) const { return Ref{e, node().kids[k]}; }
};

Comparison Equal(std::string why) { return {Outcome::kEqual, std::move(why)}; }
Comparison Different(std::string why) { return {Outcome::kDifferent, std::move(why)}; }
Comparison NotComparable(std::string why) {
  return {Outcome::kNotComparable, absl::StrCat("not comparable: ", why)};
}

std::string Show(Ref r) {
  std::string s = Canonical(*r.e, r.n);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string Num(long double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.10Lg", v);
  return buf;
}
std::string Num(const Complex& z) {
  if (z.imag() == 0) return Num(z.real());
  return absl::StrCat(Num(z.real()), z.imag() < 0 ? " - " : " + ", Num(std::fabs(z.imag())), "i");
}

std::string ExactText(const ExactValue& v) {
  if (v.im.is_zero()) return v.re.ToString();
  return absl::StrCat(v.re.ToString(), " + (", v.im.ToString(), ")i");
}

bool IsVariableFree(Ref r) { return TraitsOf(*r.e, r.n).variables.empty(); }

// A scalar or one of its \pm branches.
struct Branch {
  Ref ref;
  int pm = 1;
};

enum class Shape { kScalar, kTuple, kFinite, kReal, kRelation, kMatrix, kText, kChoice, kEllipsis };

Shape ShapeOf(Ref r) {
  const Node& n = r.node();
  switch (n.kind) {
    case Kind::kTuple:
      return Shape::kTuple;
    case Kind::kList: {
      // Inequalities joined by "and" / "or": a relation.
      bool relations = true, inequality = false;
      for (int k : n.kids) {
        const Node& kid = r.e->at(k);
        relations = relations && kid.kind == Kind::kRelation;
        if (kid.kind == Kind::kRelation) {
          for (RelOp op : kid.ops) {
            inequality =
                inequality || (op != RelOp::kEq && op != RelOp::kApprox && op != RelOp::kIn);
          }
        }
      }
      return relations && inequality ? Shape::kRelation : Shape::kFinite;
    }
    case Kind::kSet:
      return Shape::kFinite;
    case Kind::kInterval:
      return Shape::kReal;
    case Kind::kUnion:
      for (int k : n.kids) {
        if (r.e->at(k).kind != Kind::kSet) return Shape::kReal;
      }
      return Shape::kFinite;
    case Kind::kRelation:
      return Shape::kRelation;
    case Kind::kMatrix:
      return Shape::kMatrix;
    case Kind::kText:
      return Shape::kText;
    case Kind::kChoice:
      return Shape::kChoice;
    case Kind::kEllipsis:
      return Shape::kEllipsis;
    default:
      return Shape::kScalar;
  }
}

const char* ShapeName(Shape s) {
  switch (s) {
    case Shape::kScalar:
      return "a number or expression";
    case Shape::kTuple:
      return "a tuple";
    case Shape::kFinite:
      return "a set or list";
    case Shape::kReal:
      return "an interval";
    case Shape::kRelation:
      return "an equation or inequality";
    case Shape::kMatrix:
      return "a matrix";
    case Shape::kText:
      return "text";
    case Shape::kChoice:
      return "a choice letter";
    case Shape::kEllipsis:
      return "an ellipsis";
  }
  return "?";
}

// A relation after collapsing chains: "x = 5+5+1 = 11" -> x = 11 (the last
// exact side; a trailing "\approx ..." is dropped), "x \approx 3" -> x = 3.
struct RelView {
  std::vector<Ref> operands;
  std::vector<RelOp> ops;
};

RelView Collapse(Ref r) {
  RelView v;
  const Node& n = r.node();
  for (size_t k = 0; k < n.kids.size(); ++k) v.operands.push_back(r.kid(k));
  v.ops = n.ops;
  // Drop everything from the first \approx that follows another relation.
  for (size_t k = 1; k < v.ops.size(); ++k) {
    if (v.ops[k] == RelOp::kApprox) {
      v.ops.resize(k);
      v.operands.resize(k + 1);
      break;
    }
  }
  bool all_eq = true;
  for (RelOp op : v.ops) all_eq = all_eq && (op == RelOp::kEq || op == RelOp::kApprox);
  if (all_eq) {
    v.operands = {v.operands.front(), v.operands.back()};
    v.ops = {RelOp::kEq};
  }
  return v;
}

// A name being given a value: x, x_1, f(x), (x, y).
bool IsTarget(Ref r) {
  const Node& n = r.node();
  if (n.kind == Kind::kVariable) return true;
  if (n.kind == Kind::kTuple) {
    for (size_t k = 0; k < n.kids.size(); ++k) {
      if (r.e->at(n.kids[k]).kind != Kind::kVariable) return false;
    }
    return true;
  }
  return n.kind == Kind::kMul && n.call && n.kids.size() == 2 &&
         r.e->at(n.kids[0]).kind == Kind::kVariable;
}

struct Assignment {
  Ref target;
  Ref value;
};

std::optional<Assignment> AsAssignment(Ref r) {
  if (r.node().kind != Kind::kRelation) return std::nullopt;
  RelView v = Collapse(r);
  if (v.ops.size() != 1) return std::nullopt;
  if (v.ops[0] == RelOp::kEq) {
    if (IsTarget(v.operands[0])) return Assignment{v.operands[0], v.operands[1]};
    if (IsTarget(v.operands[1]) && IsVariableFree(v.operands[0])) {
      return Assignment{v.operands[1], v.operands[0]};
    }
  }
  if (v.ops[0] == RelOp::kIn && IsTarget(v.operands[0])) {
    return Assignment{v.operands[0], v.operands[1]};
  }
  return std::nullopt;
}

// One piece of a set of reals.
struct Piece {
  std::optional<Ref> lo, hi;  // nullopt: infinite
  long double lo_v = -HUGE_VALL, hi_v = HUGE_VALL;
  bool lo_closed = false, hi_closed = false;
};

class Comparer {
 public:
  explicit Comparer(const EquivalenceOptions& options)
      : opt_(options), budget_(options.work_budget) {}

  Comparison Compare(Ref a, Ref b) {
    if (++depth_ > 64) {
      --depth_;
      return NotComparable("nested too deeply");
    }
    Comparison c = CompareImpl(a, b);
    --depth_;
    if (budget_.exhausted() && c.outcome != Outcome::kDifferent) {
      return NotComparable("work budget exhausted");
    }
    return c;
  }

 private:
  Comparison CompareImpl(Ref a, Ref b) {
    if (budget_.exhausted()) return NotComparable("work budget exhausted");
    std::optional<Assignment> aa = AsAssignment(a), ab = AsAssignment(b);
    if (aa && ab) {
      const bool same_target =
          Canonical(*aa->target.e, aa->target.n) == Canonical(*ab->target.e, ab->target.n);
      if (same_target || (IsVariableFree(aa->value) && IsVariableFree(ab->value))) {
        return Compare(aa->value, ab->value);
      }
      return CompareRelations(a, b);
    }
    const Shape sa0 = ShapeOf(a), sb0 = ShapeOf(b);
    if (aa && sb0 != Shape::kRelation) return Compare(aa->value, b);
    if (ab && sa0 != Shape::kRelation) return Compare(a, ab->value);

    const Shape sa = sa0, sb = sb0;
    if (sa == Shape::kRelation || sb == Shape::kRelation) {
      if (sa == sb) return CompareRelations(a, b);
      const Shape other = sa == Shape::kRelation ? sb : sa;
      const Ref other_ref = sa == Shape::kRelation ? b : a;
      const bool open_pair = other == Shape::kTuple && other_ref.node().name == "()" &&
                             other_ref.node().kids.size() == 2;
      if (other == Shape::kReal || other == Shape::kFinite || open_pair) {
        return CompareAsRealSets(a, b);
      }
      return Different(absl::StrCat(ShapeName(sa), " vs ", ShapeName(sb)));
    }
    if (sa == Shape::kText || sb == Shape::kText) {
      if (sa != sb) return NotComparable("text against math");
      return CompareText(a, b);
    }
    if (sa == Shape::kChoice || sb == Shape::kChoice) {
      if (sa != sb) return Different(absl::StrCat(ShapeName(sa), " vs ", ShapeName(sb)));
      if (a.node().name == b.node().name)
        return Equal(absl::StrCat("same choice (", a.node().name, ")"));
      return Different(absl::StrCat("choice ", b.node().name, " vs ", a.node().name));
    }
    if (sa == Shape::kEllipsis || sb == Shape::kEllipsis) {
      if (sa == sb) return Equal("both ellipses");
      return Different("an ellipsis vs a value");
    }
    if (sa == Shape::kMatrix || sb == Shape::kMatrix) return CompareMatrices(a, b, sa, sb);
    if (sa == Shape::kTuple && sb == Shape::kTuple) return CompareOrdered(a, b);
    if (sa == Shape::kTuple || sb == Shape::kTuple) {
      const Ref t = sa == Shape::kTuple ? a : b;
      const Ref o = sa == Shape::kTuple ? b : a;
      const Shape so = sa == Shape::kTuple ? sb : sa;
      if (so == Shape::kFinite && o.node().kind == Kind::kList) return CompareOrdered(a, b);
      if (so == Shape::kReal && t.node().name == "()" && t.node().kids.size() == 2) {
        return CompareAsRealSets(a, b);
      }
      return Different(absl::StrCat(ShapeName(sa), " vs ", ShapeName(sb)));
    }
    if (sa == Shape::kReal || sb == Shape::kReal) {
      if (sa == Shape::kScalar || sb == Shape::kScalar) {
        return Different(absl::StrCat(ShapeName(sa), " vs ", ShapeName(sb)));
      }
      return CompareAsRealSets(a, b);
    }
    if (sa == Shape::kFinite || sb == Shape::kFinite) return CompareSets(a, b);
    return CompareScalars(a, b);
  }

  // ---------------------------------------------------------------- text

  static std::string NormalText(const std::string& s) {
    std::vector<std::string> words =
        absl::StrSplit(absl::AsciiStrToLower(s), ' ', absl::SkipWhitespace());
    return absl::StrJoin(words, " ");
  }

  Comparison CompareText(Ref a, Ref b) {
    if (NormalText(a.node().name) == NormalText(b.node().name)) return Equal("same text");
    return Different(absl::StrCat("text \"", b.node().name, "\" vs \"", a.node().name, "\""));
  }

  // ------------------------------------------------------- ordered, sets

  // Elements of a tuple, list or matrix in order.
  Comparison CompareOrdered(Ref a, Ref b) {
    const auto& ka = a.node().kids;
    const auto& kb = b.node().kids;
    if (ka.size() != kb.size()) {
      return Different(absl::StrCat(kb.size(), " elements vs ", ka.size()));
    }
    for (size_t k = 0; k < ka.size(); ++k) {
      Comparison c = Compare(a.kid(k), b.kid(k));
      if (c.outcome != Outcome::kEqual) {
        c.reason = absl::StrCat("element ", k + 1, ": ", c.reason);
        return c;
      }
    }
    return Equal(absl::StrCat("equal in order (", ka.size(), " elements)"));
  }

  Comparison CompareMatrices(Ref a, Ref b, Shape sa, Shape sb) {
    auto vector_like = [](Ref m) {
      const Node& n = m.node();
      return n.kind == Kind::kMatrix && (n.rows == 1 || n.cols == 1);
    };
    if (sa == Shape::kMatrix && sb == Shape::kMatrix) {
      if (a.node().rows != b.node().rows || a.node().cols != b.node().cols) {
        return Different(absl::StrCat("a ", b.node().rows, "x", b.node().cols, " matrix vs ",
                                      a.node().rows, "x", a.node().cols));
      }
      return CompareOrdered(a, b);
    }
    // A column or row vector against a tuple.
    const Ref m = sa == Shape::kMatrix ? a : b;
    const Shape other = sa == Shape::kMatrix ? sb : sa;
    if (other == Shape::kTuple && vector_like(m)) return CompareOrdered(a, b);
    return Different(absl::StrCat(ShapeName(sa), " vs ", ShapeName(sb)));
  }

  // The elements of a set or list: assignments unwrapped (x = 2 or x = 3),
  // \pm expanded, unions of finite sets flattened.
  bool Elements(Ref r, std::vector<Branch>* out) {
    if (out->size() > 256) return false;
    const Node& n = r.node();
    if (n.kind == Kind::kSet || n.kind == Kind::kList || n.kind == Kind::kUnion) {
      for (size_t k = 0; k < n.kids.size(); ++k) {
        if (!Elements(r.kid(k), out)) return false;
      }
      return true;
    }
    if (auto as = AsAssignment(r);
        as && (ShapeOf(as->value) == Shape::kScalar || ShapeOf(as->value) == Shape::kFinite)) {
      return Elements(as->value, out);
    }
    if (ShapeOf(r) == Shape::kScalar && TraitsOf(*r.e, r.n).plus_minus) {
      out->push_back({r, 1});
      out->push_back({r, -1});
      return true;
    }
    out->push_back({r, 1});
    return true;
  }

  // A list of assignments to distinct names (x = 1, y = 2): a system.
  std::optional<std::vector<Assignment>> System(Ref r) {
    if (r.node().kind != Kind::kList) return std::nullopt;
    std::vector<Assignment> out;
    std::set<std::string> names;
    for (size_t k = 0; k < r.node().kids.size(); ++k) {
      auto as = AsAssignment(r.kid(k));
      if (!as) return std::nullopt;
      if (!names.insert(Canonical(*as->target.e, as->target.n)).second) return std::nullopt;
      out.push_back(*as);
    }
    return out;
  }

  Comparison CompareSystems(const std::vector<Assignment>& a, const std::vector<Assignment>& b) {
    if (a.size() != b.size()) return Different(absl::StrCat(b.size(), " values vs ", a.size()));
    for (const Assignment& x : a) {
      const std::string name = Canonical(*x.target.e, x.target.n);
      const Assignment* match = nullptr;
      for (const Assignment& y : b) {
        if (Canonical(*y.target.e, y.target.n) == name) match = &y;
      }
      if (match == nullptr) return Different(absl::StrCat("no value for ", name));
      Comparison c = Compare(x.value, match->value);
      if (c.outcome != Outcome::kEqual) {
        c.reason = absl::StrCat(name, ": ", c.reason);
        return c;
      }
    }
    return Equal(absl::StrCat("same values of ", a.size(), " names"));
  }

  Comparison CompareElements(const Branch& x, const Branch& y) {
    if (ShapeOf(x.ref) == Shape::kScalar && ShapeOf(y.ref) == Shape::kScalar) {
      return CompareScalarBranches(x, y);
    }
    return Compare(x.ref, y.ref);
  }

  Comparison CompareSets(Ref a, Ref b) {
    auto sys_a = System(a), sys_b = System(b);
    if (sys_a && sys_b) return CompareSystems(*sys_a, *sys_b);
    std::vector<Branch> ea, eb;
    if (!Elements(a, &ea) || !Elements(b, &eb)) return NotComparable("more than 256 elements");
    return CompareBranchSets(ea, eb);
  }

  Comparison CompareBranchSets(const std::vector<Branch>& ea, const std::vector<Branch>& eb) {
    // Every element of each side must equal some element of the other.
    bool unknown = false;
    auto covered = [&](const std::vector<Branch>& from, const std::vector<Branch>& in,
                       bool from_answer) -> std::optional<size_t> {
      for (size_t i = 0; i < from.size(); ++i) {
        bool found = false;
        for (const Branch& y : in) {
          Comparison c = from_answer ? CompareElements(y, from[i]) : CompareElements(from[i], y);
          if (c.outcome == Outcome::kEqual) {
            found = true;
            break;
          }
          if (c.outcome == Outcome::kNotComparable) unknown = true;
          if (budget_.exhausted()) return std::nullopt;
        }
        if (!found) return i;
      }
      return std::nullopt;
    };
    if (auto missing = covered(eb, ea, true)) {
      if (unknown || budget_.exhausted()) return NotComparable("could not compare the elements");
      return Different(absl::StrCat(BranchText(eb[*missing]), " is not in the reference"));
    }
    if (auto missing = covered(ea, eb, false)) {
      if (unknown || budget_.exhausted()) return NotComparable("could not compare the elements");
      return Different(absl::StrCat(BranchText(ea[*missing]), " is missing"));
    }
    return Equal(absl::StrCat("equal as sets (", ea.size(), " vs ", eb.size(), " elements)"));
  }

  std::string BranchText(const Branch& b) {
    std::string s = Show(b.ref);
    if (TraitsOf(*b.ref.e, b.ref.n).plus_minus) absl::StrAppend(&s, b.pm > 0 ? " (+)" : " (-)");
    return s;
  }

  // ------------------------------------------------------------- scalars

  Comparison CompareScalars(Ref a, Ref b) {
    const ScalarTraits ta = TraitsOf(*a.e, a.n), tb = TraitsOf(*b.e, b.n);
    const bool base_a = a.node().kind == Kind::kBaseNumeral;
    const bool base_b = b.node().kind == Kind::kBaseNumeral;
    if (base_a || base_b) {
      if (base_a && base_b) {
        if (a.node().base == b.node().base && a.node().name == b.node().name) {
          return Equal("same numeral");
        }
        return Different(absl::StrCat(Show(b), " vs ", Show(a)));
      }
      return Different("a numeral in another base vs a number");
    }
    if (ta.base_numeral || tb.base_numeral) return NotComparable("arithmetic on base numerals");
    if (ta.plus_minus || tb.plus_minus) {
      std::vector<Branch> ea = {{a, 1}}, eb = {{b, 1}};
      if (ta.plus_minus) ea.push_back({a, -1});
      if (tb.plus_minus) eb.push_back({b, -1});
      return CompareBranchSets(ea, eb);
    }
    return CompareScalarBranches({a, 1}, {b, 1});
  }

  // Percent and degree readings: the natural one first, then the others.
  Comparison CompareScalarBranches(const Branch& a, const Branch& b) {
    const ScalarTraits ta = TraitsOf(*a.ref.e, a.ref.n), tb = TraitsOf(*b.ref.e, b.ref.n);
    struct Mode {
      bool pa = false, pb = false, da = false, db = false;
    };
    std::vector<Mode> modes = {Mode{}};
    if (ta.percent && !tb.percent) modes.push_back({true, false, false, false});
    if (tb.percent && !ta.percent) modes.push_back({false, true, false, false});
    if (ta.degree && !tb.degree) modes.push_back({false, false, true, false});
    if (tb.degree && !ta.degree) modes.push_back({false, false, false, true});
    Comparison first;
    for (size_t m = 0; m < modes.size(); ++m) {
      const Mode& mode = modes[m];
      Comparison c = CompareValues(a, b, ta, tb, mode.pa, mode.pb, mode.da, mode.db);
      if (c.outcome == Outcome::kEqual) {
        if (mode.pa || mode.pb) absl::StrAppend(&c.reason, ", the percentage read as its number");
        if (mode.da || mode.db) absl::StrAppend(&c.reason, ", degrees read as radians");
        return c;
      }
      if (m == 0) first = std::move(c);
      if (budget_.exhausted()) break;
    }
    return first;
  }

  // |x - y| <= tol * max(|x|, |y|) + the rounding error both may carry (with a
  // safety factor: the estimate is first order).
  static bool Close(const Complex& x, const Complex& y, long double error, double tol) {
    const long double m = std::max(std::abs(x), std::abs(y));
    return std::abs(x - y) <= static_cast<long double>(tol) * m + 1000 * error;
  }

  EvalContext Context(int pm, bool percent_written, bool degrees_radians) {
    EvalContext ctx;
    ctx.budget = &budget_;
    ctx.pm_sign = pm;
    ctx.percent_as_written = percent_written;
    ctx.degrees_as_radians = degrees_radians;
    return ctx;
  }

  Comparison CompareValues(const Branch& a, const Branch& b, const ScalarTraits& ta,
                           const ScalarTraits& tb, bool pa, bool pb, bool da, bool db) {
    std::set<std::string> vars = ta.variables;
    vars.insert(tb.variables.begin(), tb.variables.end());
    const bool decimal = ta.decimal || tb.decimal;
    const double tol = decimal ? opt_.relative_tolerance : opt_.symbolic_tolerance;
    EvalContext ca = Context(a.pm, pa, da), cb = Context(b.pm, pb, db);
    if (vars.empty()) {
      auto xa = EvalExact(*a.ref.e, a.ref.n, &ca);
      auto xb = xa ? EvalExact(*b.ref.e, b.ref.n, &cb) : std::nullopt;
      if (budget_.exhausted()) return NotComparable("work budget exhausted");
      if (xa && xb) {
        if (xa->re == xb->re && xa->im == xb->im) {
          return Equal(absl::StrCat("equal as exact numbers (", ExactText(*xa), ")"));
        }
        const Complex va(xa->re.ToLongDouble(), xa->im.ToLongDouble());
        const Complex vb(xb->re.ToLongDouble(), xb->im.ToLongDouble());
        if (ta.decimal != tb.decimal) {
          // A decimal approximating an exact value.
          if (Close(va, vb, 0, opt_.relative_tolerance)) {
            return Equal(absl::StrCat("equal within relative tolerance ", opt_.relative_tolerance,
                                      " (", Num(vb), " vs ", ExactText(*xa), ")"));
          }
          return Different(absl::StrCat(Num(vb), " vs ", ExactText(*xa),
                                        ": not within relative tolerance ",
                                        opt_.relative_tolerance));
        }
        return Different(
            absl::StrCat("exact values differ: ", ExactText(*xb), " vs ", ExactText(*xa)));
      }
      if (ca.failure == EvalFailure::kUndefined || cb.failure == EvalFailure::kUndefined) {
        return NotComparable("undefined value (division by zero or a domain error)");
      }
      EvalContext na_ctx = Context(a.pm, pa, da), nb_ctx = Context(b.pm, pb, db);
      auto na = EvalNumeric(*a.ref.e, a.ref.n, &na_ctx);
      auto nb = EvalNumeric(*b.ref.e, b.ref.n, &nb_ctx);
      if (budget_.exhausted()) return NotComparable("work budget exhausted");
      if (!na || !nb) return NotComparable("undefined value (division by zero or a domain error)");
      const bool fa = std::isfinite(na->value.real()) && std::isfinite(na->value.imag());
      const bool fb = std::isfinite(nb->value.real()) && std::isfinite(nb->value.imag());
      if (!fa || !fb) {
        // Only \infty itself (a real infinity) is compared; overflow is not.
        auto real_infinity = [](const NumericValue& v, bool has_infinity) {
          return has_infinity && std::isinf(v.value.real()) && v.value.imag() == 0;
        };
        const bool ia = real_infinity(*na, ta.infinity), ib = real_infinity(*nb, tb.infinity);
        if (ia && ib) {
          if (std::signbit(na->value.real()) == std::signbit(nb->value.real())) {
            return Equal("both the same infinity");
          }
          return Different("different infinities");
        }
        if ((ia && fb) || (ib && fa)) return Different("infinite vs finite");
        return NotComparable("value out of range");
      }
      if (!std::isfinite(na->error + nb->error)) return NotComparable("value out of range");
      if (Close(na->value, nb->value, na->error + nb->error, tol)) {
        return Equal(absl::StrCat("equal numerically (", Num(nb->value), ", ",
                                  decimal ? "relative" : "symbolic", " tolerance ", tol, ")"));
      }
      return Different(
          absl::StrCat("differ numerically: ", Num(nb->value), " vs ", Num(na->value)));
    }
    return CompareFunctions(a, b, vars, tol, pa, pb, da, db);
  }

  // Deterministic sample values of `vars` for point `k` (negative: below 0).
  std::vector<std::pair<std::string, Complex>> Point(const std::set<std::string>& vars, int k,
                                                     bool negative) const {
    std::vector<std::pair<std::string, Complex>> out;
    int j = 0;
    for (const std::string& v : vars) {
      const uint64_t h =
          SplitMix64(0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(k + 1) +
                     static_cast<uint64_t>(j++) * 0xD1B54A32D192ED03ULL + (negative ? 0x5555 : 0));
      const long double u = static_cast<long double>(h >> 11) / 9007199254740992.0L;
      const long double x = 0.4L + 2.5L * u;
      out.emplace_back(v, Complex(negative ? -x : x, 0));
    }
    return out;
  }

  static std::string PointText(const std::vector<std::pair<std::string, Complex>>& p) {
    std::vector<std::string> parts;
    for (const auto& [name, value] : p) parts.push_back(absl::StrCat(name, "=", Num(value)));
    return absl::StrJoin(parts, ", ");
  }

  Comparison CompareFunctions(const Branch& a, const Branch& b, const std::set<std::string>& vars,
                              double tol, bool pa, bool pb, bool da, bool db) {
    const bool complex_allowed = TraitsHasI(a.ref) || TraitsHasI(b.ref);
    int used = 0;
    const int n = std::max(3, opt_.sample_points);
    for (int k = 0; k < n + n / 2; ++k) {
      const bool negative = k >= n;
      EvalContext ca = Context(a.pm, pa, da), cb = Context(b.pm, pb, db);
      ca.variables = Point(vars, k, negative);
      cb.variables = ca.variables;
      auto va = EvalNumeric(*a.ref.e, a.ref.n, &ca);
      auto vb = EvalNumeric(*b.ref.e, b.ref.n, &cb);
      if (budget_.exhausted()) return NotComparable("work budget exhausted");
      if (!va || !vb) continue;
      const Complex x = va->value, y = vb->value;
      if (!std::isfinite(x.real()) || !std::isfinite(x.imag()) || !std::isfinite(y.real()) ||
          !std::isfinite(y.imag())) {
        continue;
      }
      if (!std::isfinite(va->error + vb->error)) continue;
      if (negative && !complex_allowed && (!IsRealValue(x) || !IsRealValue(y))) continue;
      if (!Close(x, y, va->error + vb->error, tol)) {
        return Different(
            absl::StrCat("differ at ", PointText(ca.variables), ": ", Num(y), " vs ", Num(x)));
      }
      if (!negative) ++used;
    }
    if (used < 3) return NotComparable("could not evaluate at enough sample points");
    return Equal(absl::StrCat("equal at ", used, "+ sample points of ", absl::StrJoin(vars, ", ")));
  }

  static bool IsRealValue(const Complex& z) {
    return std::fabs(z.imag()) <= 1e-12L * std::max(1.0L, std::abs(z));
  }
  static bool TraitsHasI(Ref r) {
    const Node& n = r.node();
    if (n.kind == Kind::kConstant && n.name == "i") return true;
    for (size_t k = 0; k < n.kids.size(); ++k) {
      if (TraitsHasI(r.kid(k))) return true;
    }
    return false;
  }

  // ----------------------------------------------------------- relations

  enum class RelClass { kEquation, kNotEqual, kStrict, kNonStrict, kOther };
  static RelClass ClassOf(RelOp op) {
    switch (op) {
      case RelOp::kEq:
      case RelOp::kApprox:
        return RelClass::kEquation;
      case RelOp::kNe:
        return RelClass::kNotEqual;
      case RelOp::kLt:
      case RelOp::kGt:
        return RelClass::kStrict;
      case RelOp::kLe:
      case RelOp::kGe:
        return RelClass::kNonStrict;
      default:
        return RelClass::kOther;
    }
  }

  Comparison CompareRelations(Ref a, Ref b) {
    // In one variable with constant bounds: as solution sets.
    std::string var_a, var_b;
    auto set_a = RelationSet(a, &var_a);
    auto set_b = RelationSet(b, &var_b);
    if (set_a && set_b && var_a == var_b) return CompareRealSets(*set_a, *set_b);
    if (a.node().kind != Kind::kRelation || b.node().kind != Kind::kRelation) {
      return NotComparable("several relations that are not one variable's bounds");
    }
    const RelView ra = Collapse(a), rb = Collapse(b);
    if (ra.ops.size() == 1 && rb.ops.size() == 1) return CompareProportional(ra, rb);
    // Longer chains: the same relations between equivalent operands, read
    // either way ("a < b < c" = "c > b > a").
    if (ra.ops.size() == rb.ops.size()) {
      bool unknown = false;
      for (int reversed = 0; reversed < 2; ++reversed) {
        bool ok = true;
        const size_t m = ra.operands.size();
        for (size_t k = 0; k < m && ok; ++k) {
          const size_t kb = reversed ? m - 1 - k : k;
          if (k + 1 < m) {
            const RelOp oa = ra.ops[k];
            const RelOp ob = reversed ? Flip(rb.ops[m - 2 - k]) : rb.ops[k];
            ok = oa == ob;
          }
          if (!ok) break;
          const Outcome o = Compare(ra.operands[k], rb.operands[kb]).outcome;
          unknown = unknown || o == Outcome::kNotComparable;
          ok = o == Outcome::kEqual;
        }
        if (ok) return Equal("the same chain of relations");
      }
      if (unknown) return NotComparable("the operands of the relations");
    }
    return Different("different relations");
  }

  static RelOp Flip(RelOp op) {
    switch (op) {
      case RelOp::kLt:
        return RelOp::kGt;
      case RelOp::kGt:
        return RelOp::kLt;
      case RelOp::kLe:
        return RelOp::kGe;
      case RelOp::kGe:
        return RelOp::kLe;
      default:
        return op;
    }
  }

  // lhs - rhs of a relation, oriented so that an inequality reads "f > 0" or
  // "f >= 0".
  struct Side {
    Ref plus;
    Ref minus;
  };
  static Side Oriented(const RelView& r) {
    const RelOp op = r.ops[0];
    if (op == RelOp::kLt || op == RelOp::kLe) return {r.operands[1], r.operands[0]};
    return {r.operands[0], r.operands[1]};
  }

  std::optional<Complex> Difference(const Side& s,
                                    const std::vector<std::pair<std::string, Complex>>& p,
                                    long double* error) {
    EvalContext c1 = Context(1, false, false), c2 = Context(1, false, false);
    c1.variables = p;
    c2.variables = p;
    auto x = EvalNumeric(*s.plus.e, s.plus.n, &c1);
    auto y = EvalNumeric(*s.minus.e, s.minus.n, &c2);
    if (!x || !y) return std::nullopt;
    *error = x->error + y->error;
    return x->value - y->value;
  }

  Comparison CompareProportional(const RelView& ra, const RelView& rb) {
    const RelClass ca = ClassOf(ra.ops[0]), cb = ClassOf(rb.ops[0]);
    if (ca == RelClass::kOther || cb == RelClass::kOther) {
      return NotComparable("a membership relation that is not an assignment");
    }
    if (ca != cb) return Different("different kinds of relation");
    std::set<std::string> vars;
    for (const Ref& r : ra.operands) {
      auto t = TraitsOf(*r.e, r.n).variables;
      vars.insert(t.begin(), t.end());
    }
    for (const Ref& r : rb.operands) {
      auto t = TraitsOf(*r.e, r.n).variables;
      vars.insert(t.begin(), t.end());
    }
    if (vars.empty()) {
      // Constant relations: the same sides.
      Comparison l = Compare(ra.operands[0], rb.operands[0]);
      Comparison r = Compare(ra.operands[1], rb.operands[1]);
      if (l.outcome == Outcome::kEqual && r.outcome == Outcome::kEqual) {
        return Equal("the same sides");
      }
      if (l.outcome == Outcome::kNotComparable) return l;
      if (r.outcome == Outcome::kNotComparable) return r;
      return Different("different sides");
    }
    const Side sa = Oriented(ra), sb = Oriented(rb);
    std::optional<Complex> ratio;
    int used = 0, zeros = 0;
    const int n = std::max(3, opt_.sample_points);
    for (int k = 0; k < n; ++k) {
      auto p = Point(vars, k, false);
      long double err_a = 0, err_b = 0;
      auto fa = Difference(sa, p, &err_a);
      auto fb = Difference(sb, p, &err_b);
      if (budget_.exhausted()) return NotComparable("work budget exhausted");
      if (!fa || !fb || !std::isfinite(std::abs(*fa)) || !std::isfinite(std::abs(*fb)) ||
          !std::isfinite(err_a + err_b)) {
        continue;
      }
      const bool za = std::abs(*fa) <= 1000 * err_a, zb = std::abs(*fb) <= 1000 * err_b;
      if (za && zb) {
        ++zeros;
        continue;
      }
      if (za != zb)
        return Different(absl::StrCat("not the same solutions (at ", PointText(p), ")"));
      const Complex r = *fa / *fb;
      if (!ratio) {
        ratio = r;
      } else if (!Close(r, *ratio, 0, std::max(opt_.symbolic_tolerance, 1e-9))) {
        return Different(absl::StrCat("not proportional (at ", PointText(p), ")"));
      }
      ++used;
    }
    if (used == 0 && zeros >= 3) return Equal("both identities");
    if (used + zeros < 3 || !ratio)
      return NotComparable("could not evaluate at enough sample points");
    if (std::fabs(ratio->imag()) > 1e-9L * std::abs(*ratio)) return Different("not proportional");
    if ((ca == RelClass::kStrict || ca == RelClass::kNonStrict) && ratio->real() < 0) {
      return Different("the inequality points the other way");
    }
    return Equal(absl::StrCat("proportional relations (factor ", Num(ratio->real()), ")"));
  }

  // ------------------------------------------------------- sets of reals

  // The solution set of a relation in one variable with constant bounds.
  std::optional<std::vector<Piece>> RelationSet(Ref r, std::string* var) {
    const Node& n = r.node();
    if (n.kind == Kind::kList) {
      // "x < -2 or x > 3" (union); "x = 2, x = 3" (union); "x > 1 and x < 5" (intersection).
      std::vector<std::vector<Piece>> parts;
      bool all_points = true;
      for (size_t k = 0; k < n.kids.size(); ++k) {
        std::string v;
        auto p = RelationSet(r.kid(k), &v);
        if (!p || (!var->empty() && v != *var)) return std::nullopt;
        *var = v;
        auto view = Collapse(r.kid(k));
        all_points = all_points && view.ops.size() == 1 && view.ops[0] == RelOp::kEq;
        parts.push_back(std::move(*p));
      }
      if (n.name == "or" || all_points) {
        std::vector<Piece> all;
        for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
        return Normalize(std::move(all));
      }
      std::vector<Piece> acc = parts[0];
      for (size_t k = 1; k < parts.size(); ++k) acc = Intersect(acc, parts[k]);
      return acc;
    }
    if (n.kind != Kind::kRelation) return std::nullopt;
    const RelView v = Collapse(r);
    // Exactly one operand is the variable itself; the others are constants.
    int var_at = -1;
    for (size_t k = 0; k < v.operands.size(); ++k) {
      const Ref o = v.operands[k];
      if (o.node().kind == Kind::kVariable) {
        if (var_at >= 0) return std::nullopt;
        var_at = static_cast<int>(k);
        *var = o.node().name;
      } else if (!IsVariableFree(o)) {
        return std::nullopt;
      }
    }
    if (var_at < 0) return std::nullopt;
    if (v.ops.size() == 1 && v.ops[0] == RelOp::kIn) {
      if (var_at != 0) return std::nullopt;
      return ToRealSet(v.operands[1]);
    }
    Piece p;
    std::vector<Piece> out;
    for (size_t k = 0; k < v.ops.size(); ++k) {
      // Link k relates operands k and k+1.
      RelOp op = v.ops[k];
      Ref other;
      if (static_cast<int>(k) == var_at) {
        other = v.operands[k + 1];
      } else if (static_cast<int>(k + 1) == var_at) {
        other = v.operands[k];
        op = Flip(op);
      } else {
        return std::nullopt;  // a link between two constants
      }
      auto value = RealConstant(other);
      if (!value) return std::nullopt;
      switch (op) {
        case RelOp::kGt:
        case RelOp::kGe:
          if (*value > p.lo_v || !p.lo) {
            p.lo = other;
            p.lo_v = *value;
            p.lo_closed = op == RelOp::kGe;
          }
          break;
        case RelOp::kLt:
        case RelOp::kLe:
          if (*value < p.hi_v || !p.hi) {
            p.hi = other;
            p.hi_v = *value;
            p.hi_closed = op == RelOp::kLe;
          }
          break;
        case RelOp::kEq:
          if (v.ops.size() != 1) return std::nullopt;
          p.lo = p.hi = other;
          p.lo_v = p.hi_v = *value;
          p.lo_closed = p.hi_closed = true;
          break;
        case RelOp::kNe: {
          if (v.ops.size() != 1) return std::nullopt;
          Piece below, above;
          below.hi = other;
          below.hi_v = *value;
          above.lo = other;
          above.lo_v = *value;
          return Normalize({below, above});
        }
        default:
          return std::nullopt;
      }
    }
    return Normalize({p});
  }

  // A real constant's value (finite or infinite), or nullopt.
  std::optional<long double> RealConstant(Ref r) {
    if (!IsVariableFree(r) || ShapeOf(r) != Shape::kScalar) return std::nullopt;
    EvalContext c = Context(1, false, false);
    auto v = EvalNumeric(*r.e, r.n, &c);
    if (!v || !IsRealValue(v->value) || std::isnan(v->value.real())) return std::nullopt;
    return v->value.real();
  }

  // Intervals, unions, finite sets of reals and open pairs as sets of reals.
  std::optional<std::vector<Piece>> ToRealSet(Ref r) {
    const Node& n = r.node();
    std::vector<Piece> pieces;
    auto end_piece = [&](Ref lo, Ref hi, bool lo_open, bool hi_open) -> bool {
      Piece p;
      auto l = RealConstant(lo), h = RealConstant(hi);
      if (!l || !h) return false;
      if (std::isfinite(*l)) p.lo = lo;
      if (std::isfinite(*h)) p.hi = hi;
      p.lo_v = *l;
      p.hi_v = *h;
      p.lo_closed = !lo_open && std::isfinite(*l);
      p.hi_closed = !hi_open && std::isfinite(*h);
      pieces.push_back(p);
      return true;
    };
    switch (n.kind) {
      case Kind::kInterval:
        if (!end_piece(r.kid(0), r.kid(1), n.left_open, n.right_open)) return std::nullopt;
        break;
      case Kind::kTuple:
        if (n.kids.size() != 2 || n.name != "()") return std::nullopt;
        if (!end_piece(r.kid(0), r.kid(1), true, true)) return std::nullopt;
        break;
      case Kind::kList: {
        // Relations in one variable ("x < -2 or x > 3").
        std::string var;
        if (auto set = RelationSet(r, &var)) return set;
        [[fallthrough]];
      }
      case Kind::kSet:
        for (size_t k = 0; k < n.kids.size(); ++k) {
          if (!end_piece(r.kid(k), r.kid(k), false, false)) return std::nullopt;
        }
        break;
      case Kind::kUnion:
        for (size_t k = 0; k < n.kids.size(); ++k) {
          auto part = ToRealSet(r.kid(k));
          if (!part) return std::nullopt;
          pieces.insert(pieces.end(), part->begin(), part->end());
        }
        break;
      case Kind::kRelation: {
        std::string var;
        return RelationSet(r, &var);
      }
      default:
        return std::nullopt;
    }
    return Normalize(std::move(pieces));
  }

  bool Touch(long double x, long double y) const {
    if (std::isinf(x) || std::isinf(y)) return x == y;
    return std::fabs(x - y) <= 1e-12L * std::max({1.0L, std::fabs(x), std::fabs(y)});
  }

  // Sorted, disjoint, non-empty pieces.
  std::vector<Piece> Normalize(std::vector<Piece> pieces) {
    std::vector<Piece> kept;
    for (Piece& p : pieces) {
      if (p.lo_v > p.hi_v && !Touch(p.lo_v, p.hi_v)) continue;
      if (Touch(p.lo_v, p.hi_v) && !(p.lo_closed && p.hi_closed)) continue;
      kept.push_back(p);
    }
    std::sort(kept.begin(), kept.end(), [](const Piece& x, const Piece& y) {
      if (x.lo_v != y.lo_v) return x.lo_v < y.lo_v;
      return x.lo_closed && !y.lo_closed;
    });
    std::vector<Piece> out;
    for (const Piece& p : kept) {
      if (!out.empty()) {
        Piece& last = out.back();
        const bool overlap = p.lo_v < last.hi_v && !Touch(p.lo_v, last.hi_v);
        const bool adjacent = Touch(p.lo_v, last.hi_v) && (p.lo_closed || last.hi_closed);
        if (overlap || adjacent) {
          if (p.hi_v > last.hi_v && !Touch(p.hi_v, last.hi_v)) {
            last.hi = p.hi;
            last.hi_v = p.hi_v;
            last.hi_closed = p.hi_closed;
          } else if (Touch(p.hi_v, last.hi_v)) {
            last.hi_closed = last.hi_closed || p.hi_closed;
          }
          continue;
        }
      }
      out.push_back(p);
    }
    return out;
  }

  std::vector<Piece> Intersect(const std::vector<Piece>& a, const std::vector<Piece>& b) {
    std::vector<Piece> out;
    for (const Piece& x : a) {
      for (const Piece& y : b) {
        Piece p;
        if (x.lo_v > y.lo_v || (Touch(x.lo_v, y.lo_v) && !x.lo_closed)) {
          p.lo = x.lo;
          p.lo_v = x.lo_v;
          p.lo_closed = x.lo_closed;
        } else {
          p.lo = y.lo;
          p.lo_v = y.lo_v;
          p.lo_closed = y.lo_closed;
        }
        if (x.hi_v < y.hi_v || (Touch(x.hi_v, y.hi_v) && !x.hi_closed)) {
          p.hi = x.hi;
          p.hi_v = x.hi_v;
          p.hi_closed = x.hi_closed;
        } else {
          p.hi = y.hi;
          p.hi_v = y.hi_v;
          p.hi_closed = y.hi_closed;
        }
        out.push_back(p);
      }
    }
    return Normalize(std::move(out));
  }

  std::string PieceText(const Piece& p) {
    if (p.lo && p.hi && p.lo->n == p.hi->n && p.lo->e == p.hi->e)
      return absl::StrCat("{", Show(*p.lo), "}");
    return absl::StrCat(p.lo_closed ? "[" : "(", p.lo ? Show(*p.lo) : "-inf", ", ",
                        p.hi ? Show(*p.hi) : "inf", p.hi_closed ? "]" : ")");
  }

  Comparison CompareEnds(const std::optional<Ref>& a, const std::optional<Ref>& b, long double va,
                         long double vb) {
    if (!a || !b) {
      if (!a && !b && std::signbit(va) == std::signbit(vb)) return Equal("");
      return Different("");
    }
    return CompareScalars(*a, *b);
  }

  Comparison CompareRealSets(const std::vector<Piece>& a, const std::vector<Piece>& b) {
    if (a.size() != b.size()) {
      return Different(absl::StrCat(b.size(), " pieces vs ", a.size(), " (as sets of reals)"));
    }
    for (size_t k = 0; k < a.size(); ++k) {
      const Piece& x = a[k];
      const Piece& y = b[k];
      Comparison lo = CompareEnds(x.lo, y.lo, x.lo_v, y.lo_v);
      Comparison hi = CompareEnds(x.hi, y.hi, x.hi_v, y.hi_v);
      if (lo.outcome == Outcome::kNotComparable || hi.outcome == Outcome::kNotComparable) {
        return NotComparable("interval ends");
      }
      if (lo.outcome != Outcome::kEqual || hi.outcome != Outcome::kEqual) {
        return Different(absl::StrCat(PieceText(y), " vs ", PieceText(x)));
      }
      if (x.lo_closed != y.lo_closed || x.hi_closed != y.hi_closed) {
        return Different(
            absl::StrCat(PieceText(y), " vs ", PieceText(x), ": open and closed ends differ"));
      }
    }
    return Equal(
        absl::StrCat("equal as sets of reals (", a.size(), a.size() == 1 ? " piece)" : " pieces)"));
  }

  Comparison CompareAsRealSets(Ref a, Ref b) {
    auto sa = ToRealSet(a);
    auto sb = ToRealSet(b);
    if (budget_.exhausted()) return NotComparable("work budget exhausted");
    if (!sa || !sb) {
      // Ends that are not real constants ([a, b]): the same interval written
      // the same way.
      const Node& na = a.node();
      const Node& nb = b.node();
      if (na.kind == Kind::kInterval && nb.kind == Kind::kInterval) {
        if (na.left_open != nb.left_open || na.right_open != nb.right_open) {
          return Different("open and closed ends differ");
        }
        Comparison lo = Compare(a.kid(0), b.kid(0));
        if (lo.outcome != Outcome::kEqual) return lo;
        Comparison hi = Compare(a.kid(1), b.kid(1));
        if (hi.outcome != Outcome::kEqual) return hi;
        return Equal("the same interval");
      }
      return NotComparable(absl::StrCat(ShapeName(ShapeOf(a)), " vs ", ShapeName(ShapeOf(b)),
                                        " that are not both sets of real numbers"));
    }
    return CompareRealSets(*sa, *sb);
  }

  const EquivalenceOptions& opt_;
  WorkBudget budget_;
  int depth_ = 0;
};

}  // namespace

Comparison CompareAnswers(const Expr& reference, const Expr& answer,
                          const EquivalenceOptions& options) {
  if (reference.root < 0 || answer.root < 0) return NotComparable("empty answer");
  Comparer comparer(options);
  return comparer.Compare(Ref{&reference, reference.root}, Ref{&answer, answer.root});
}

}  // namespace rlvr::math
