#include "common/math/parser.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/math/print.h"

namespace rlvr::math {
namespace {

std::string Read(const std::string& text) {
  absl::StatusOr<Expr> e = ParseAnswer(text);
  if (!e.ok()) return "ERROR " + std::string(e.status().message());
  return Canonical(*e);
}

// How each construct is read: its canonical form.
TEST(ParserTest, CanonicalForms) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"42", "42"},
      {"-0007", "-7"},
      {"3.1400", "3.14"},
      {".5", "0.5"},
      {"1.5e3", "1.5e3"},
      {"2E-4", "2e-4"},
      {"1,000", "1000"},
      {"1{,}000", "1000"},
      {"1,\\!000,\\!000", "1000000"},
      {"1\\,000", "1000"},
      {"1,2", "1, 2"},
      {"(1,000)", "(1, 0)"},
      {"0.\\overline{3}", "1/3"},
      {"\\frac{1}{2}", "1/2"},
      {"\\dfrac12", "1/2"},
      {"\\frac123", "(1/2)*3"},
      {"\\tfrac{a}{b}", "a/b"},
      {"3/4", "3/4"},
      {"2\\frac{1}{2}", "2 + 1/2"},
      {"-2\\frac{1}{2}", "-(2 + 1/2)"},
      {"4 4/9", "4 + 4/9"},
      {"2\\frac{x}{3}", "2*(x/3)"},
      {"\\sqrt{2}", "sqrt(2)"},
      {"\\sqrt2", "sqrt(2)"},
      {"\\sqrt[3]{x}", "root(x, 3)"},
      {"x^2", "x^2"},
      {"x^{2}y", "x^2*y"},
      {"2^10", "2^10"},
      {"2^{3^2}", "2^(3^2)"},
      {"-x^2", "-x^2"},
      {"e^{i\\pi}", "e^(i*pi)"},
      {"\\pi r^2", "pi*r^2"},
      {"2xy", "2*x*y"},
      {"(x+1)(x-1)", "(x + 1)*(x - 1)"},
      {"3 \\cdot 4 \\times 5", "3*4*5"},
      {"a \\div b", "a/b"},
      {"1 \\pm \\sqrt{2}", "1 +- sqrt(2)"},
      {"\\mp 3", "-+3"},
      {"50\\%", "50%"},
      {"50 percent", "50%"},
      {"90^\\circ", "90\xC2\xB0"},
      {"90^{\\circ}", "90\xC2\xB0"},
      {"5\\text{ cm}", "5"},
      {"15\\mbox{ cm}^2", "15"},
      {"5 apples", "5"},
      {"\\$5.00", "5"},
      {"\\left( \\frac{1}{2} \\right)", "1/2"},
      {"\\left[ 0, 1 \\right)", "[0, 1)"},
      {"(1, 2)", "(1, 2)"},
      {"[1, 2]", "[1, 2]"},
      {"(1, 2]", "(1, 2]"},
      {"[1,2,3]", "(1, 2, 3)"},
      {"\\{1, 2\\}", "{1, 2}"},
      {"{1, 2}", "{1, 2}"},
      {"\\emptyset", "{}"},
      {"(-\\infty, 3) \\cup (3, \\infty)", "(-inf, 3) U (3, inf)"},
      {"\\mathbb{R}", "(-inf, inf)"},
      {"x = 3", "x = 3"},
      {"y = 2x + 1", "y = 2*x + 1"},
      {"x \\geq 3", "x >= 3"},
      {"-2 \\le x < 7", "-2 <= x < 7"},
      {"x \\neq 0", "x != 0"},
      {"x \\in [0, 1]", "x in [0, 1]"},
      {"x \\approx 3.14", "x ~= 3.14"},
      {"3, 5", "3, 5"},
      {"3 \\text{ and } 5", "3, 5"},
      {"x = 1 \\text{ or } x = 2", "x = 1 or x = 2"},
      {"\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "[[1, 2], [3, 4]]"},
      {"\\begin{bmatrix} 1 \\\\ 2 \\end{bmatrix}", "[[1], [2]]"},
      {"\\text{Evelyn}", "\"Evelyn\""},
      {"no solution", "\"no solution\""},
      {"204_5", "204_5"},
      {"x_1 + x_{10}", "x_1 + x_10"},
      {"\\alpha + \\beta", "\\alpha + \\beta"},
      {"\\sin^2 x + \\cos^2 x", "sin(x)^2 + cos(x)^2"},
      {"\\sin^{-1}(x)", "arcsin(x)"},
      {"\\log_2 8", "log(8, 2)"},
      {"\\ln(x)", "ln(x)"},
      {"\\sin 2x", "sin(2*x)"},
      {"|x - 1|", "|x - 1|"},
      {"\\lfloor x \\rfloor", "floor(x)"},
      {"5!", "5!"},
      {"\\binom{5}{2}", "binom(5, 2)"},
      {"f(x) = x^2", "f(x) = x^2"},
      {"$x$", "x"},
      {"\\(x + 1\\)", "x + 1"},
      {"\\boxed{7}", "7"},
      {"5.", "5"},
      {"1, 2, \\ldots", "1, 2, ..."},
      {"\xCF\x80", "pi"},
      {"3 \xC3\x97 4", "3*4"},
      {"x\xC2\xB2", "x^2"},
      {"\xE2\x88\x92"
       "5",
       "-5"},
      {"x \xE2\x89\xA4 3", "x <= 3"},
      {"\\displaystyle\\frac{1}{2}", "1/2"},
      {"\\mathbf{x}", "x"},
  };
  for (const auto& [input, want] : cases) EXPECT_EQ(Read(input), want) << input;
}

TEST(ParserTest, WhatItCannotParseItSays) {
  for (const char* bad : {"", "   ", "3:4", "\\foo{1}", "1 2", "(1, 2", "\\frac{1}", "A \\cap B",
                          "\\begin{vmatrix} 1 \\end{vmatrix}", "x +", "5 apples 3", "\\mathbb{Z}",
                          "\\begin{pmatrix} 1 & 2 \\\\ 3 \\end{pmatrix}", "#"}) {
    absl::StatusOr<Expr> e = ParseAnswer(bad);
    EXPECT_FALSE(e.ok()) << bad << " -> " << Canonical(*e);
  }
  absl::StatusOr<Expr> e = ParseAnswer("1 + \\foo");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("unknown command '\\foo'"), std::string::npos);
}

TEST(ParserTest, LimitsAreResourceErrors) {
  ParseOptions options;
  options.max_chars = 100;
  EXPECT_EQ(ParseAnswer(std::string(101, '1'), options).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ParseAnswer(std::string(200, '(') + "1" + std::string(200, ')')).status().code(),
            absl::StatusCode::kResourceExhausted);
  options.max_chars = 1 << 20;
  options.max_nodes = 50;
  std::string sum = "1";
  for (int k = 0; k < 100; ++k) sum += "+1";
  EXPECT_EQ(ParseAnswer(sum, options).status().code(), absl::StatusCode::kResourceExhausted);
  // A number past the bound of exact integers.
  EXPECT_FALSE(ParseAnswer(std::string(1300, '9')).ok());
}

TEST(ParserTest, Choices) {
  EXPECT_EQ(ParseChoice("C", false), 'C');
  EXPECT_EQ(ParseChoice("(C)", false), 'C');
  EXPECT_EQ(ParseChoice("\\text{(C)}", false), 'C');
  EXPECT_EQ(ParseChoice("$\\textbf{B}$", false), 'B');
  EXPECT_EQ(ParseChoice("c", false), std::nullopt);
  EXPECT_EQ(ParseChoice("x", false), std::nullopt);
  EXPECT_EQ(ParseChoice("CD", false), std::nullopt);
  EXPECT_EQ(ParseChoice("12", false), std::nullopt);
  EXPECT_EQ(ParseChoice("c", true), 'C');
  EXPECT_EQ(ParseChoice("(C) 12", true), 'C');
  EXPECT_EQ(ParseChoice("C) 12", true), 'C');
  EXPECT_EQ(ParseChoice("Option D", true), 'D');
  EXPECT_EQ(ParseChoice("\\textbf{(E) } 7", true), 'E');
  EXPECT_EQ(ParseChoice("Cats", true), std::nullopt);
}

}  // namespace
}  // namespace rlvr::math
