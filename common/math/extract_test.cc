#include "common/math/extract.h"

#include <gtest/gtest.h>

#include <string>

namespace rlvr::math {
namespace {

void ExpectExtract(const std::string& completion, AnswerSource source, const std::string& text) {
  Extracted e = ExtractAnswer(completion);
  EXPECT_EQ(e.source, source) << completion << " -> " << SourceName(e.source) << " " << e.text;
  EXPECT_EQ(e.text, text) << completion;
}

TEST(ExtractTest, Boxes) {
  ExpectExtract("so \\boxed{\\frac{1}{2}}.", AnswerSource::kBox, "\\frac{1}{2}");
  ExpectExtract("\\boxed{1} then \\boxed{2}", AnswerSource::kBox, "2");
  ExpectExtract("\\boxed{1} and \\boxed{2}", AnswerSource::kBox, "1, 2");
  ExpectExtract("$\\boxed{1}$, $\\boxed{2}$ or $\\boxed{3}$", AnswerSource::kBox, "1, 2, 3");
  ExpectExtract("\\boxed{1}\\text{ and }\\boxed{2}", AnswerSource::kBox, "1, 2");
  ExpectExtract("\\fbox{9}", AnswerSource::kBox, "9");
  ExpectExtract("\\boxed {7}", AnswerSource::kBox, "7");
  ExpectExtract("\\boxed{a{b}c}", AnswerSource::kBox, "a{b}c");
  ExpectExtract("\\boxed{\\{1, 2\\}}", AnswerSource::kBox, "\\{1, 2\\}");
  Extracted e = ExtractAnswer("\\boxed{1} and \\boxed{2");
  EXPECT_EQ(e.source, AnswerSource::kNone);
  EXPECT_TRUE(e.truncated_box);
  e = ExtractAnswer("The answer is \\boxed");
  EXPECT_TRUE(e.truncated_box);
  // \boxedsomething is not a box.
  ExpectExtract("\\boxeds{1} so 5", AnswerSource::kSpan, "5");
}

TEST(ExtractTest, ThinkingAndCode) {
  ExpectExtract("<think>\\boxed{1}</think>\\boxed{2}", AnswerSource::kBox, "2");
  ExpectExtract("<think>\\boxed{1}</think>The answer is 3.", AnswerSource::kPhrase, "3");
  ExpectExtract("<think>\\boxed{1}", AnswerSource::kBox, "1");
  ExpectExtract("```python\nprint('\\\\boxed{8}')\n```\n\\boxed{7}", AnswerSource::kBox, "7");
  ExpectExtract("```\n\\boxed{8}\n```\nso 7", AnswerSource::kSpan, "7");
  ExpectExtract("```latex\n\\boxed{7}\n```", AnswerSource::kBox, "7");
  ExpectExtract("```python\nx = 1\n", AnswerSource::kNone, "");
  ExpectExtract("run `f(\\boxed{3})` to get 12", AnswerSource::kSpan, "12");
}

TEST(ExtractTest, Phrases) {
  ExpectExtract("The final answer is $28 \\%$. I hope it is correct.", AnswerSource::kPhrase,
                "28 \\%");
  ExpectExtract("Final Answer: The largest $n$ is 34.", AnswerSource::kPhrase, "34");
  ExpectExtract("The answer is 3.14 meters. Next", AnswerSource::kPhrase, "3.14 meters");
  ExpectExtract("the answer is: (C)", AnswerSource::kPhrase, "(C)");
  ExpectExtract("so\n#### 72", AnswerSource::kPhrase, "72");
  ExpectExtract("**Final Answer:** \\( \\frac{1}{2} \\)", AnswerSource::kPhrase, " \\frac{1}{2} ");
  ExpectExtract("Final answer:\n$$x = 5$$", AnswerSource::kPhrase, "x = 5");
  ExpectExtract("answer is 3, not 4", AnswerSource::kPhrase, "3, not 4");
}

TEST(ExtractTest, LastSpanOrNumber) {
  ExpectExtract("so $x = 5$.", AnswerSource::kSpan, "x = 5");
  ExpectExtract("$x = 5$, so 5 + 2 = 7", AnswerSource::kSpan, "7");
  ExpectExtract("first 7 then $\\frac{1}{2}$", AnswerSource::kSpan, "\\frac{1}{2}");
  ExpectExtract("it is 2/3 of it", AnswerSource::kSpan, "2/3");
  ExpectExtract("costs \\$5 and 1,000 more", AnswerSource::kSpan, "1,000");
  ExpectExtract("the drop is -3 degrees", AnswerSource::kSpan, "-3");
  ExpectExtract("10-7", AnswerSource::kSpan, "7");
  ExpectExtract("AZYUK2A", AnswerSource::kNone, "");
  ExpectExtract("", AnswerSource::kNone, "");
}

TEST(ExtractTest, Reference) {
  EXPECT_EQ(ReferenceAnswer("\\frac{1}{2}"), "\\frac{1}{2}");
  EXPECT_EQ(ReferenceAnswer("  7 "), "7");
  EXPECT_EQ(ReferenceAnswer("so \\boxed{4} is it"), "4");
  EXPECT_EQ(ReferenceAnswer("\\boxed{1}\\boxed{2}"), "1, 2");
  EXPECT_EQ(ReferenceAnswer("48/2 = 24\n#### 72"), "72");
  EXPECT_EQ(ReferenceAnswer("$x$"), "$x$");
}

}  // namespace
}  // namespace rlvr::math
