#include "common/math/equivalence.h"

#include <gtest/gtest.h>

#include <string>

#include "common/math/parser.h"

namespace rlvr::math {
namespace {

Comparison Cmp(const std::string& reference, const std::string& answer,
               const EquivalenceOptions& options = {}) {
  absl::StatusOr<Expr> r = ParseAnswer(reference);
  absl::StatusOr<Expr> a = ParseAnswer(answer);
  EXPECT_TRUE(r.ok()) << reference << ": " << r.status();
  EXPECT_TRUE(a.ok()) << answer << ": " << a.status();
  if (!r.ok() || !a.ok()) return {};
  return CompareAnswers(*r, *a, options);
}

TEST(EquivalenceTest, ExactBeforeNumeric) {
  Comparison c = Cmp("\\frac{7}{8}", "0.875");
  EXPECT_EQ(c.outcome, Outcome::kEqual);
  EXPECT_NE(c.reason.find("exact numbers (7/8)"), std::string::npos) << c.reason;
  c = Cmp("123456789012345678901234567890", "123456789012345678901234567890.0");
  EXPECT_EQ(c.outcome, Outcome::kEqual);
  // Both decimals: no tolerance between them.
  EXPECT_EQ(Cmp("1234567.8", "1234567.80000001").outcome, Outcome::kDifferent);
}

TEST(EquivalenceTest, Tolerances) {
  EXPECT_EQ(Cmp("\\frac{1}{3}", "0.3333333").outcome, Outcome::kEqual);
  EXPECT_EQ(Cmp("\\frac{1}{3}", "0.33333").outcome, Outcome::kDifferent);
  EquivalenceOptions loose;
  loose.relative_tolerance = 1e-4;
  EXPECT_EQ(Cmp("\\frac{1}{3}", "0.33333", loose).outcome, Outcome::kEqual);
  // Exact forms evaluated in floating point use the symbolic tolerance.
  EXPECT_EQ(Cmp("\\sqrt{10001} - 100", "\\frac{1}{200}").outcome, Outcome::kDifferent);
  EXPECT_EQ(Cmp("\\sqrt{8}", "2\\sqrt{2}").outcome, Outcome::kEqual);
  EXPECT_EQ(Cmp("\\sin(\\pi)", "0").outcome, Outcome::kEqual);
}

TEST(EquivalenceTest, Infinity) {
  EXPECT_EQ(Cmp("\\infty", "\\infty").outcome, Outcome::kEqual);
  EXPECT_EQ(Cmp("\\infty", "-\\infty").outcome, Outcome::kDifferent);
  EXPECT_EQ(Cmp("\\infty", "5").outcome, Outcome::kDifferent);
}

TEST(EquivalenceTest, UndefinedAndOverflowAreNotComparable) {
  EXPECT_EQ(Cmp("\\frac{1}{0}", "\\frac{1}{0}").outcome, Outcome::kNotComparable);
  EXPECT_EQ(Cmp("2^{10^9}", "3").outcome, Outcome::kNotComparable);
  EXPECT_EQ(Cmp("(10^{10})!", "3").outcome, Outcome::kNotComparable);
  EXPECT_EQ(Cmp("0^{-1}", "3").outcome, Outcome::kNotComparable);
}

TEST(EquivalenceTest, WorkBudget) {
  EquivalenceOptions tight;
  tight.work_budget = 50;
  Comparison c = Cmp("2^{4000}", "2^{2000} \\cdot 2^{2000}", tight);
  EXPECT_EQ(c.outcome, Outcome::kNotComparable);
  EXPECT_NE(c.reason.find("work budget"), std::string::npos) << c.reason;
  EXPECT_EQ(Cmp("2^{4000}", "2^{2000} \\cdot 2^{2000}").outcome, Outcome::kEqual);
}

TEST(EquivalenceTest, SamplePointsAreDeterministic) {
  Comparison a = Cmp("x^2", "2x");
  Comparison b = Cmp("x^2", "2x");
  EXPECT_EQ(a.outcome, Outcome::kDifferent);
  EXPECT_EQ(a.reason, b.reason);
  // Equal on positive points, different on negative ones.
  EXPECT_EQ(Cmp("\\sqrt{x^2}", "x").outcome, Outcome::kDifferent);
  // Equal wherever both sides are real.
  EXPECT_EQ(Cmp("\\ln(x^2)", "2\\ln(x)").outcome, Outcome::kEqual);
  // Undefined everywhere: nothing to compare.
  EXPECT_EQ(Cmp("\\frac{x}{0}", "x").outcome, Outcome::kNotComparable);
}

TEST(EquivalenceTest, ShapesMustAgree) {
  EXPECT_EQ(Cmp("(1, 2)", "\\{1, 2\\}").outcome, Outcome::kDifferent);
  EXPECT_EQ(Cmp("[1, 2]", "\\{1, 2\\}").outcome, Outcome::kDifferent);
  EXPECT_EQ(Cmp("x = 1", "(1, 2)").outcome, Outcome::kDifferent);
  EXPECT_EQ(Cmp("\\begin{pmatrix} 1 \\end{pmatrix}", "(1, 2)").outcome, Outcome::kDifferent);
  EXPECT_EQ(Cmp("\\text{yes}", "1").outcome, Outcome::kNotComparable);
}

TEST(EquivalenceTest, RealSets) {
  EXPECT_EQ(Cmp("[0, 1) \\cup [1, 2]", "[0, 2]").outcome, Outcome::kEqual);
  EXPECT_EQ(Cmp("[0, 1) \\cup (1, 2]", "[0, 2]").outcome, Outcome::kDifferent);
  EXPECT_EQ(Cmp("(0, 3) \\cup (1, 2)", "(0, 3)").outcome, Outcome::kEqual);
  EXPECT_EQ(Cmp("x > 1 \\text{ and } x < 5", "(1, 5)").outcome, Outcome::kEqual);
  EXPECT_EQ(Cmp("x < 1 \\text{ or } x > 5", "(-\\infty, 1) \\cup (5, \\infty)").outcome,
            Outcome::kEqual);
  EXPECT_EQ(Cmp("x \\ne 2", "(-\\infty, 2) \\cup (2, \\infty)").outcome, Outcome::kEqual);
  EXPECT_EQ(Cmp("[\\sqrt{2}, \\pi]", "[1.41421356237, 3.14159265359]").outcome, Outcome::kEqual);
}

}  // namespace
}  // namespace rlvr::math
