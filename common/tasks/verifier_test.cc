#include "common/tasks/verifier.h"

#include <gtest/gtest.h>

#include <string>

namespace rlvr {
namespace {

struct Case {
  const char* answer;
  const char* completion;
  double reward;
};

void RunTable(const Verifier& v, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    Verdict verdict = v.Verify(c.answer, c.completion);
    EXPECT_EQ(verdict.reward, c.reward) << v.name() << ": answer='" << c.answer << "' completion='"
                                        << c.completion << "' reason=" << verdict.reason;
  }
}

std::unique_ptr<Verifier> Make(const char* name, double format_reward = 0.0) {
  auto v = MakeVerifier(name, format_reward);
  EXPECT_TRUE(v.ok()) << v.status();
  return *std::move(v);
}

TEST(MakeVerifierTest, NamesAndErrors) {
  for (const char* name : {"final_answer", "gsm8k", "boxed", "exact", "math"}) {
    EXPECT_EQ(Make(name)->name(), name);
  }
  auto unknown = MakeVerifier("maths");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown verifier 'maths'"), absl::string_view::npos);
  EXPECT_NE(unknown.status().message().find("gsm8k"), absl::string_view::npos);
  EXPECT_FALSE(MakeVerifier("gsm8k", 1.0).ok());
  EXPECT_FALSE(MakeVerifier("gsm8k", -0.1).ok());
}

const char kGsm8kReference[] =
    "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72";

TEST(Gsm8kVerifierTest, Table) {
  RunTable(*Make("gsm8k"),
           {
               // The reference is the text after ####.
               {kGsm8kReference, "She sold 24 in May, so 48 + 24 = 72.\n#### 72", 1},
               {kGsm8kReference, "48 + 24 = 72 #### 72", 1},
               {kGsm8kReference, "#### 24", 0},
               {kGsm8kReference, "48+24=72", 1},               // last number
               {kGsm8kReference, "72 clips, then 5 more", 0},  // last number is 5
               {kGsm8kReference, "The answer is 72. Check: 48+24 = 72, 3 steps.", 1},
               {kGsm8kReference, "the final answer is: $72.", 1},
               {kGsm8kReference, "#### 72 clips, or 73 if you count", 1},
               {kGsm8kReference, "#### 70\nThe answer is 72", 0},  // #### wins over "answer is"
                                                                   // The last #### counts.
               {"#### 5", "#### 4\nWait, recount.\n#### 5", 1},
               {"#### 5", "#### 5\nWait, recount.\n#### 4", 0},
               // Number formats.
               {"#### 1234", "#### 1,234", 1},
               {"#### 1234", "#### $1,234.00", 1},
               {"#### 1234", "#### 1234.0", 1},
               {"#### 1234", "#### 1234.", 1},
               {"#### 1234", "#### 1 234", 0},  // a space is not a thousands separator
               {"#### 1234", "#### 12,34", 0},
               {"#### 0.5", "#### 0.50", 1},
               {"#### 18", "The answer is $18.00.", 1},
               {"#### 50", "#### 50%", 1},
               {"#### -3", "The temperature drops to -3 degrees.\n#### -3", 1},
               {"#### -3", "#### 3", 0},
               {"#### 3", "10-7 = 3", 1},  // '-' after an operand is subtraction
               {"#### -7", "3-10=-7", 1},
               {"#### 007", "#### 7", 1},
               // Huge numbers compare as strings: no overflow.
               {"#### 123456789012345678901234567890",
                "#### 123,456,789,012,345,678,901,234,567,890", 1},
               {"#### 123456789012345678901234567890", "#### 123456789012345678901234567891", 0},
               {"#### 99999999999999999999", "so 99999999999999999999.000", 1},
               // No answer at all.
               {"#### 5", "", 0},
               {"#### 5", "I do not know.", 0},
               {"#### 5", "####", 0},
               {"#### 5", "#### five", 0},
               // Answers inside code: the last number outside of any rule wins.
               {"#### 12", "```python\nprint(3*4)\n```\nIt prints 12", 1},
               {"#### 12", "```python\nx = 12\nprint(x + 1)\n```", 0},
               // A reference without #### is taken whole.
               {"42", "so #### 42", 1},
               {"1,000", "#### 1000", 1},
           });
}

TEST(Gsm8kVerifierTest, FormatReward) {
  auto v = Make("gsm8k", 0.1);
  EXPECT_EQ(v->Verify("#### 5", "#### 5").reward, 1.0);
  EXPECT_EQ(v->Verify("#### 5", "#### 4").reward, 0.1);
  EXPECT_EQ(v->Verify("#### 5", "so it is 4").reward, 0.0);  // no #### marker
  EXPECT_EQ(v->Verify("#### 5", "").reward, 0.0);
  EXPECT_NE(v->Verify("#### 5", "#### 4").reason.find("got 4, want 5"), std::string::npos);
}

TEST(Gsm8kVerifierTest, Normalisation) {
  EXPECT_EQ(NormalizeGsm8kNumber(" $1,234.00 "), "1234");
  EXPECT_EQ(NormalizeGsm8kNumber("-5."), "-5");
  EXPECT_EQ(NormalizeGsm8kNumber("+0.250"), "0.25");
  EXPECT_EQ(NormalizeGsm8kNumber("-0"), "0");
  EXPECT_EQ(NormalizeGsm8kNumber("12%"), "12");
  EXPECT_EQ(NormalizeGsm8kNumber("seven"), "seven");
  EXPECT_EQ(ExtractGsm8kAnswer("a 1 b 2 #### 3 c 4"), "3");
  EXPECT_EQ(ExtractGsm8kAnswer("The Answer Is 9, not 10"), "9");
  EXPECT_EQ(ExtractGsm8kAnswer("nothing"), std::nullopt);
}

TEST(BoxedVerifierTest, Table) {
  RunTable(
      *Make("boxed"),
      {
          {"7", "So the answer is $\\boxed{7}$.", 1},
          {"7", "\\boxed{ 7 }", 1},
          {"7", "7", 0},  // no box
          {"7", "The answer is 7.", 0},
          // Several boxes: the last complete one.
          {"7", "First \\boxed{6}, corrected: \\boxed{7}", 1},
          {"7", "First \\boxed{7}, corrected: \\boxed{6}", 0},
          // Unbalanced braces: the incomplete box is ignored.
          {"7", "\\boxed{7} and then \\boxed{8", 1},
          {"7", "\\boxed{7", 0},
          {"7", "\\boxed{{7}", 0},
          // Nested braces.
          {"\\frac{1}{2}", "\\boxed{\\frac{1}{2}}", 1},
          {"\\frac{1}{2}", "\\boxed{\\dfrac{1}{2}}", 1},
          {"\\frac{1}{2}", "\\boxed{\\tfrac12}", 1},
          {"\\frac{1}{2}", "\\boxed{\\frac12}", 1},
          {"\\frac{1}{2}", "\\boxed{0.5}", 1},
          {"\\frac{1}{2}", "\\boxed{1/2}", 1},
          {"0.5", "\\boxed{\\frac{2}{4}}", 1},
          {"\\frac{1}{2}", "\\boxed{\\frac{1}{3}}", 0},
          {"-\\frac{1}{2}", "\\boxed{-0.5}", 1},
          {"-\\frac{1}{2}", "\\boxed{\\frac{-1}{2}}", 1},
          {"-\\frac{1}{2}", "\\boxed{0.5}", 0},
          {"\\frac{1}{0}", "\\boxed{\\frac{1}{0}}", 1},  // same text; no division by zero
          // \left / \right, spacing, degrees, percent, units, trailing dot.
          {"(1,2)", "\\boxed{\\left( 1, 2 \\right)}", 1},
          {"(1,2)", "\\boxed{(1,3)}", 0},
          {"x\\rightarrow1", "\\boxed{x \\rightarrow 1}", 1},  // \right inside \rightarrow kept
          {"30", "\\boxed{30^\\circ}", 1},
          {"30", "\\boxed{30^{\\circ}}", 1},
          {"25", "\\boxed{25\\%}", 1},
          {"10", "\\boxed{10\\text{ cm}}", 1},
          {"10", "\\boxed{10 \\mbox{ inches}}", 1},
          {"\\text{Monday}", "\\boxed{\\text{Monday}}", 1},
          {"5", "\\boxed{5.}", 1},
          {"1000", "\\boxed{1,000}", 1},
          {"1000", "\\boxed{1\\!000}", 1},
          {"12", "\\boxed{1,2}", 0},
          {"3", "\\boxed{x = 3}", 1},
          {"\\sqrt{2}", "\\boxed{\\sqrt{2}}", 1},
          {"\\sqrt{2}", "\\boxed{\\sqrt2}", 0},  // only \frac arguments are braced
          // The reference may be boxed itself.
          {"\\boxed{4}", "\\boxed{4.0}", 1},
          // \fbox counts as a box.
          {"9", "\\fbox{9}", 1},
          {"9", "\\boxed{8} then \\fbox{9}", 1},
          {"9", "\\fbox{9} then \\boxed{8}", 0},
          // Huge numbers: no overflow, exact.
          {"123456789012345678901234567890", "\\boxed{123456789012345678901234567890}", 1},
          {"123456789012345678901234567890", "\\boxed{123456789012345678901234567890.0}", 1},
          {"123456789012345678901234567890", "\\boxed{123456789012345678901234567891}", 0},
          // Equal, but past the 18-digit exact range: compared as text (documented).
          {"\\frac{1}{3}", "\\boxed{\\frac{333333333333333333333}{999999999999999999999}}", 0},
          {"999999999999999999", "\\boxed{\\frac{999999999999999999}{1}}", 1},
          // Empty and missing.
          {"7", "\\boxed{}", 0},
          {"7", "", 0},
          {"7", "\\boxed", 0},
          // Inside code it is still a box (the verifier does not parse code).
          {"7", "```latex\n\\boxed{7}\n```", 1},
      });
}

TEST(BoxedVerifierTest, FormatReward) {
  auto v = Make("boxed", 0.2);
  EXPECT_EQ(v->Verify("7", "\\boxed{7}").reward, 1.0);
  EXPECT_EQ(v->Verify("7", "\\boxed{8}").reward, 0.2);
  EXPECT_EQ(v->Verify("7", "\\boxed{}").reward, 0.0);
  EXPECT_EQ(v->Verify("7", "8").reward, 0.0);
}

TEST(BoxedVerifierTest, Normalisation) {
  EXPECT_EQ(LastBoxedContent("\\boxed{a{b}c} x"), "a{b}c");
  EXPECT_EQ(LastBoxedContent("\\boxed{a"), std::nullopt);
  EXPECT_EQ(NormalizeLatexAnswer("\\left[ 0, \\dfrac 1 2 \\right)."), "[0,\\frac{1}{2})");
  EXPECT_EQ(NormalizeLatexAnswer("\\$ 5"), "5");
  EXPECT_EQ(NormalizeLatexAnswer("5\\text{ meters}"), "5");
  EXPECT_EQ(NormalizeLatexAnswer("\\text{(A)}"), "(A)");
  EXPECT_TRUE(LatexAnswersEqual("0.25", "\\frac{1}{4}"));
  EXPECT_TRUE(LatexAnswersEqual("-0", "0"));
  EXPECT_FALSE(LatexAnswersEqual("1/4", "4"));
}

TEST(ExactVerifierTest, Table) {
  RunTable(*Make("exact"), {
                               {"Paris", "Paris", 1},
                               {"Paris", "  Paris\n", 1},
                               {" Paris ", "Paris", 1},
                               {"Paris", "paris", 0},
                               {"Paris", "Paris.", 0},
                               {"Paris", "", 0},
                               {"42", "42.0", 0},
                           });
  auto v = Make("exact", 0.1);
  EXPECT_EQ(v->Verify("a", "b").reward, 0.1);
  EXPECT_EQ(v->Verify("a", "  ").reward, 0.0);
}

TEST(FinalAnswerVerifierTest, SameAsVerifyFinalAnswer) {
  auto v = Make("final_answer");
  for (const char* completion : {"46", "12+34=46", "\\boxed{46}", "45", "", "x"}) {
    EXPECT_EQ(v->Verify("46", completion).reward, VerifyFinalAnswer("46", completion).reward);
    EXPECT_EQ(v->Verify("46", completion).reason, VerifyFinalAnswer("46", completion).reason);
  }
  auto with_format = Make("final_answer", 0.25);
  EXPECT_EQ(with_format->Verify("46", "45").reward, 0.25);
  EXPECT_EQ(with_format->Verify("46", "none").reward, 0.0);
}

}  // namespace
}  // namespace rlvr
