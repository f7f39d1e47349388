#include "common/task.h"

#include <cstdio>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

namespace rlvr {
namespace {

struct VerifyCase {
  const char* answer;
  const char* completion;
  double reward;
};

TEST(VerifierTest, Table) {
  const VerifyCase cases[] = {
      {"46", "46", 1},
      {"46", "45", 0},
      {"46", "", 0},
      {"46", "no digits here", 0},
      {"46", " 46 ", 1},
      {"46", "046", 1},
      {"46", "+46", 1},
      {"46", "4646", 0},
      {"46", "12+34=46", 1},
      {"46", "46 then 47", 0},
      {"46", "the answer is 46.", 1},
      {"-3", "5-3", 0},           // '-' after an operand is subtraction, last number 3
      {"3", "5-3", 1},
      {"-3", "x = -3", 1},
      {"-3", "-3", 1},
      {"-3", "- 3", 0},          // a detached sign is not part of the number
      {"0", "-0", 1},
      {"0", "000", 1},
      {"1234", "1,234", 1},
      {"1234567", "total: 1,234,567", 1},
      {"34", "12,34", 1},         // not a thousands group: two numbers
      {"1,234", "1234", 1},       // reference side is normalised too
      {" 1234 ", "1234", 1},
      {"3.5", "3.50", 1},
      {"3", "3.0", 1},
      {"3.5", "3.05", 0},
      {"7", "\\boxed{7}", 1},
      {"7", "\\boxed{7} but later 8", 1},  // boxed wins over the last number
      {"7", "\\boxed{6} then \\boxed{ 7 }", 1},
      {"-1234", "\\boxed{-1,234}", 1},
      {"1234", "\\boxed{-1,234}", 0},
      {"\\frac{1}{2}", "\\boxed{\\frac{1}{2}}", 1},
      {"7", "\\boxed{}", 0},
      {"7", "\\boxed{7", 1},      // unbalanced box ignored; last number 7
      {"12", "1 2", 0},
      {"x+1", "\\boxed{x + 1}", 1},
  };
  for (const auto& c : cases) {
    Verdict v = VerifyFinalAnswer(c.answer, c.completion);
    EXPECT_EQ(v.reward, c.reward) << "answer='" << c.answer << "' completion='" << c.completion
                                  << "' reason=" << v.reason;
    EXPECT_FALSE(v.reason.empty());
  }
}

TEST(VerifierTest, NormalizeAndExtract) {
  EXPECT_EQ(NormalizeAnswer("-001,234.500"), "-1234.5");
  EXPECT_EQ(NormalizeAnswer("+0"), "0");
  EXPECT_EQ(NormalizeAnswer(" a b "), "ab");
  EXPECT_FALSE(ExtractFinalAnswer("none").has_value());
  EXPECT_EQ(ExtractFinalAnswer("a 1 b 22 c").value(), "22");
  EXPECT_EQ(ExtractFinalAnswer("(=-5)").value(), "-5");
}

TaskConfig Arith() {
  TaskConfig c;
  c.kind = "arithmetic";
  c.ops = "+";
  c.min_digits = 1;
  c.max_digits = 2;
  c.num_terms = 2;
  c.train_size = 500;
  c.heldout_size = 100;
  c.seed = 99;
  return c;
}

long long EvalWithPrecedence(const std::string& expr) {
  // Independent reference: split on + and -, each term a product.
  long long total = 0, term = 0, num = 0;
  char add = '+';
  bool in_product = false;
  for (size_t i = 0; i < expr.size(); ++i) {
    char ch = expr[i];
    if (ch >= '0' && ch <= '9') {
      num = num * 10 + (ch - '0');
      continue;
    }
    term = in_product ? term * num : num;
    num = 0;
    if (ch == '*') {
      in_product = true;
      continue;
    }
    total += add == '+' ? term : -term;
    in_product = false;
    add = ch;
    if (ch == '=') break;
  }
  return total;
}

TEST(ArithmeticTaskTest, SplitsAreDisjointDeterministicAndCorrect) {
  TaskConfig c = Arith();
  c.ops = "+-*";
  c.num_terms = 3;
  auto task = MakeTask(c);
  ASSERT_TRUE(task.ok()) << task.status();
  auto again = MakeTask(c);
  ASSERT_TRUE(again.ok());
  const Task& t = **task;
  EXPECT_EQ(t.name(), "arithmetic");
  ASSERT_EQ(t.train().size(), 500u);
  ASSERT_EQ(t.heldout().size(), 100u);
  std::set<std::string> train_texts, ids;
  for (const auto& p : t.train()) {
    train_texts.insert(p.text);
    ids.insert(p.id);
  }
  EXPECT_EQ(train_texts.size(), 500u);
  for (const auto& p : t.heldout()) {
    EXPECT_EQ(train_texts.count(p.text), 0u) << p.text;
    ids.insert(p.id);
  }
  EXPECT_EQ(ids.size(), 600u);
  for (size_t i = 0; i < t.train().size(); ++i) {
    const Prompt& p = t.train()[i];
    EXPECT_EQ(p.text, (*again)->train()[i].text);
    ASSERT_EQ(p.text.back(), '=');
    EXPECT_EQ(p.answer, std::to_string(EvalWithPrecedence(p.text))) << p.text;
    EXPECT_EQ(t.Verify(p.answer, p.answer).reward, 1.0);
  }
  c.seed = 100;
  auto other = MakeTask(c);
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->train()[0].text + (*other)->train()[1].text,
            t.train()[0].text + t.train()[1].text);
}

TEST(ArithmeticTaskTest, RejectsBadConfigs) {
  TaskConfig c = Arith();
  c.min_digits = 1;
  c.max_digits = 1;
  c.train_size = 100;  // only 100 "a+b" with one digit exist
  c.heldout_size = 1;
  EXPECT_FALSE(MakeTask(c).ok());
  c = Arith();
  c.ops = "/";
  EXPECT_FALSE(MakeTask(c).ok());
  c = Arith();
  c.kind = "poetry";
  EXPECT_FALSE(MakeTask(c).ok());
}

TEST(JsonlTaskTest, ReadsFilesAndReportsErrorsWithLineNumbers) {
  std::string dir = ::testing::TempDir();
  std::string train = dir + "/rlvr_task_train.jsonl";
  std::string held = dir + "/rlvr_task_held.jsonl";
  {
    std::ofstream(train) << "{\"id\":\"a\",\"prompt\":\"1+1=\",\"answer\":\"2\"}\n\n"
                         << "{\"id\":\"b\",\"prompt\":\"2+2=\",\"answer\":4}\n";
    std::ofstream(held) << "{\"id\":\"c\",\"prompt\":\"3+3=\",\"answer\":\"6\"}\n";
  }
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = train;
  c.heldout_path = held;
  auto task = MakeTask(c);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_EQ((*task)->train().size(), 2u);
  EXPECT_EQ((*task)->train()[1].answer, "4");
  EXPECT_EQ((*task)->heldout()[0].text, "3+3=");
  EXPECT_EQ((*task)->Verify("6", "so \\boxed{6}").reward, 1.0);

  std::ofstream(held) << "{\"id\":\"c\",\"prompt\":\"3+3=\"}\n";
  auto bad = MakeTask(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":1:"), absl::string_view::npos) << bad.status();
  std::ofstream(held) << "{\"id\":\"a\",\"prompt\":\"3+3=\",\"answer\":\"6\"}\n";
  EXPECT_FALSE(MakeTask(c).ok());  // duplicate id across files
  std::ofstream(held) << "not json\n";
  EXPECT_FALSE(MakeTask(c).ok());
  c.heldout_path = dir + "/does_not_exist.jsonl";
  EXPECT_FALSE(MakeTask(c).ok());
}

TEST(TaskEncodingTest, PromptAndCompletionHelpers) {
  auto tok = MakeCharTokenizer();
  auto prompt = EncodePrompt(*tok, "12+34=");
  ASSERT_TRUE(prompt.ok());
  EXPECT_EQ(prompt->front(), tok->bos_id());
  EXPECT_EQ(prompt->size(), 7u);
  auto target = EncodeTargetCompletion(*tok, "46");
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->back(), tok->eos_id());
  EXPECT_EQ(CompletionText(*tok, *target), "46");
  std::vector<int> after_eos = *target;
  after_eos.push_back((*tok->Encode("9"))[0]);
  EXPECT_EQ(CompletionText(*tok, after_eos), "46");
  EXPECT_FALSE(EncodePrompt(*tok, "1\t2").ok());
}

}  // namespace
}  // namespace rlvr
