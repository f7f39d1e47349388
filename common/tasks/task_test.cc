#include "common/tasks/task.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/testing/special_tokenizer.h"

namespace rlvr {
namespace {

// MakeTask with the char tokenizer.
absl::StatusOr<std::unique_ptr<Task>> Make(const TaskConfig& c, int max_prompt_tokens = 0) {
  static const Tokenizer* const kChars = MakeCharTokenizer().release();
  TaskOptions options;
  options.max_prompt_tokens = max_prompt_tokens;
  return MakeTask(c, *kChars, options);
}

// Writes `text` to a fresh file in the test's temp dir; returns its path.
std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::trunc) << text;
  return path;
}

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
      {"-3", "5-3", 0},  // '-' after an operand is subtraction, last number 3
      {"3", "5-3", 1},
      {"-3", "x = -3", 1},
      {"-3", "-3", 1},
      {"-3", "- 3", 0},  // a detached sign is not part of the number
      {"0", "-0", 1},
      {"0", "000", 1},
      {"1234", "1,234", 1},
      {"1234567", "total: 1,234,567", 1},
      {"34", "12,34", 1},    // not a thousands group: two numbers
      {"1,234", "1234", 1},  // reference side is normalised too
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
      {"7", "\\boxed{7", 1},  // unbalanced box ignored; last number 7
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
  auto task = Make(c);
  ASSERT_TRUE(task.ok()) << task.status();
  auto again = Make(c);
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
  auto other = Make(c);
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
  EXPECT_FALSE(Make(c).ok());
  c = Arith();
  c.ops = "/";
  EXPECT_FALSE(Make(c).ok());
  c = Arith();
  c.kind = "poetry";
  EXPECT_FALSE(Make(c).ok());
}

TEST(JsonlTaskTest, ReadsFilesAndReportsErrorsWithLineNumbers) {
  std::string train = WriteFile("rlvr_task_train.jsonl",
                                "{\"id\":\"a\",\"question\":\"1+1=\",\"answer\":\"2\"}\n\n"
                                "{\"id\":\"b\",\"question\":\"2+2=\",\"answer\":4}\n");
  std::string held =
      WriteFile("rlvr_task_held.jsonl", "{\"id\":\"c\",\"question\":\"3+3=\",\"answer\":\"6\"}\n");
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = train;
  c.heldout_path = held;
  c.id_field = "id";
  auto task = Make(c);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->name(), "jsonl");
  ASSERT_EQ((*task)->train().size(), 2u);
  EXPECT_EQ((*task)->train()[1].id, "b");
  EXPECT_EQ((*task)->train()[1].answer, "4");
  EXPECT_EQ((*task)->heldout()[0].text, "3+3=");
  EXPECT_EQ((*task)->Verify("6", "so \\boxed{6}").reward, 1.0);

  // Each bad line: an error naming file:line and what is wrong.
  struct Bad {
    const char* line;
    const char* message;
  };
  const Bad bads[] = {
      {"{\"id\":\"c\",\"question\":\"3+3=\"}", "missing \"answer\""},
      {"{\"id\":\"c\",\"answer\":\"6\"}", "missing \"question\""},
      {"{\"question\":\"3+3=\",\"answer\":\"6\"}", "missing \"id\""},
      {"{\"id\":\"c\",\"question\":33,\"answer\":\"6\"}", "\"question\" must be a string"},
      {"{\"id\":\"c\",\"question\":\"q\",\"answer\":[6]}",
       "\"answer\" must be a string or a number"},
      {"{\"id\":\"c\",\"question\":\"q\",\"answer\":null}",
       "\"answer\" must be a string or a number"},
      {"{\"id\":1.5,\"question\":\"q\",\"answer\":\"6\"}", "\"id\" must be a string or an integer"},
      {"{\"id\":\"a\",\"question\":\"q\",\"answer\":\"6\"}", "duplicate id \"a\""},
      {"not json", "invalid JSON"},
      {"{\"id\":\"c\",\"question\":\"q\",\"answer\":\"6\"", "invalid JSON"},
      {"[1,2]", "not a JSON object"},
  };
  for (const Bad& b : bads) {
    WriteFile("rlvr_task_held.jsonl",
              std::string("{\"id\":\"ok\",\"question\":\"q\",\"answer\":1}\n\n") + b.line + "\n");
    auto bad = Make(c);
    ASSERT_FALSE(bad.ok()) << b.line;
    EXPECT_NE(bad.status().message().find(held + ":3: "), absl::string_view::npos) << bad.status();
    EXPECT_NE(bad.status().message().find(b.message), absl::string_view::npos) << bad.status();
  }
  c.heldout_path = ::testing::TempDir() + "/does_not_exist.jsonl";
  auto missing = Make(c);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("does_not_exist.jsonl"), absl::string_view::npos);
}

TEST(JsonlTaskTest, FieldNamesAndDerivedIds) {
  std::string train = WriteFile(
      "rlvr_task_fields.jsonl",
      "{\"problem\":\"How many?\",\"solution\":\"3 #### 3\",\"uid\":17,\"extra\":{\"x\":1}}\n"
      "{\"problem\":\"And now?\",\"solution\":2.5,\"uid\":\"s-2\"}\n");
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = train;
  c.question_field = "problem";
  c.answer_field = "solution";
  c.id_field = "uid";
  auto task = Make(c);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_EQ((*task)->train().size(), 2u);
  EXPECT_EQ((*task)->train()[0].id, "17");
  EXPECT_EQ((*task)->train()[0].answer, "3 #### 3");
  EXPECT_EQ((*task)->train()[1].id, "s-2");
  EXPECT_EQ((*task)->train()[1].answer, "2.5");
  EXPECT_TRUE((*task)->heldout().empty());
  // Without id_field: "<file name>:<line>".
  c.id_field = "";
  task = Make(c);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->train()[0].id, "rlvr_task_fields.jsonl:1");
  EXPECT_EQ((*task)->train()[1].id, "rlvr_task_fields.jsonl:2");
  // The default field names are question/answer.
  c.question_field = "question";
  auto wrong = Make(c);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find(":1: missing \"question\""), absl::string_view::npos)
      << wrong.status();
}

std::string NumberedLines(int n, int first = 0) {
  std::string text;
  for (int i = first; i < first + n; ++i) {
    text += "{\"question\":\"q" + std::to_string(i) + "\",\"answer\":" + std::to_string(i) + "}\n";
  }
  return text;
}

TEST(JsonlTaskTest, HeldoutFractionIsDeterministic) {
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = WriteFile("rlvr_task_fraction.jsonl", NumberedLines(200));
  c.heldout_fraction = 0.1;
  c.seed = 5;
  auto a = Make(c);
  auto b = Make(c);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status();
  ASSERT_EQ((*a)->heldout().size(), 20u);
  ASSERT_EQ((*a)->train().size(), 180u);
  std::set<std::string> held;
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ((*a)->heldout()[i].id, (*b)->heldout()[i].id);
    held.insert((*a)->heldout()[i].id);
  }
  // Disjoint, and both splits keep file order.
  int last_line = 0;
  for (const Prompt& p : (*a)->train()) {
    EXPECT_EQ(held.count(p.id), 0u);
    const int line = std::stoi(p.id.substr(p.id.find(':') + 1));
    EXPECT_GT(line, last_line);
    last_line = line;
  }
  // Another seed holds out other prompts.
  c.seed = 6;
  auto other = Make(c);
  ASSERT_TRUE(other.ok());
  int same = 0;
  for (const Prompt& p : (*other)->heldout()) same += held.count(p.id);
  EXPECT_LT(same, 20);
  // Appending lines keeps most of the held-out prompts.
  c.seed = 5;
  WriteFile("rlvr_task_fraction.jsonl", NumberedLines(200) + NumberedLines(20, 200));
  auto grown = Make(c);
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ((*grown)->heldout().size(), 22u);
  same = 0;
  for (const Prompt& p : (*grown)->heldout()) same += held.count(p.id);
  EXPECT_GE(same, 16);
  // Not together with heldout_path.
  c.heldout_path = c.train_path;
  auto both = Make(c);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("task.heldout_fraction"), absl::string_view::npos);
}

TEST(JsonlTaskTest, TooLongPromptsAreCountedAndSkipped) {
  std::string text;
  for (int len : {3, 10, 4, 30, 5, 9}) {
    text += "{\"question\":\"" + std::string(len, 'x') + "\",\"answer\":1}\n";
  }
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = WriteFile("rlvr_task_long.jsonl", text);
  c.heldout_path = WriteFile("rlvr_task_long_held.jsonl", text);
  c.prompt_format = "Q: {question}\nA:";  // 6 characters around the question.
  // BOS + 6 + len <= 16: lengths 3, 4, 5 and 9 (at the limit) stay.
  auto task = Make(c, /*max_prompt_tokens=*/16);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->skipped_too_long(), 4);
  ASSERT_EQ((*task)->train().size(), 4u);
  EXPECT_EQ((*task)->train()[0].text, "Q: xxx\nA:");
  EXPECT_EQ((*task)->train()[1].id, "rlvr_task_long.jsonl:3");
  EXPECT_EQ((*task)->train()[2].id, "rlvr_task_long.jsonl:5");
  EXPECT_EQ((*task)->train()[3].id, "rlvr_task_long.jsonl:6");
  EXPECT_EQ((*task)->heldout().size(), 4u);
  auto unlimited = Make(c);
  ASSERT_TRUE(unlimited.ok());
  EXPECT_EQ((*unlimited)->skipped_too_long(), 0);
  EXPECT_EQ((*unlimited)->train().size(), 6u);
}

TEST(JsonlTaskTest, FormatsVerifiersAndStopIds) {
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = WriteFile("rlvr_task_fmt.jsonl",
                           "{\"question\":\"Tom has 2 apples and buys 3. How many?\","
                           "\"answer\":\"2+3=5\\n#### 5\"}\n");
  c.verifier = "gsm8k";
  c.prompt_format = "chatml";
  // The char tokenizer has no <|im_start|>: the error names the format.
  auto no_chat = Make(c);
  ASSERT_FALSE(no_chat.ok());
  EXPECT_NE(no_chat.status().message().find("'chatml'"), absl::string_view::npos);
  // With a tokenizer that has ChatML's special tokens.
  testing::SpecialTokenizer qwen({"<|im_start|>", "<|im_end|>"}, /*has_bos=*/false);
  auto task = MakeTask(c, qwen, TaskOptions{});
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->train()[0].text,
            "<|im_start|>user\nTom has 2 apples and buys 3. How many?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ((*task)->stop_ids(), (std::vector<int>{qwen.eos_id(), *qwen.TokenId("<|im_end|>")}));
  EXPECT_EQ((*task)->Verify((*task)->train()[0].answer, "2 + 3 = 5\n#### 5").reward, 1.0);
  EXPECT_EQ((*task)->Verify((*task)->train()[0].answer, "#### 6").reward, 0.0);
  // Unknown verifier and format names.
  c.verifier = "magic";
  EXPECT_FALSE(MakeTask(c, qwen, TaskOptions{}).ok());
  c.verifier = "gsm8k";
  c.prompt_format = "alpaca";
  auto unknown = MakeTask(c, qwen, TaskOptions{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown format 'alpaca'"), absl::string_view::npos);
}

TEST(JsonlTaskTest, VerifyOnlyReadsNothing) {
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = ::testing::TempDir() + "/never_written.jsonl";
  c.verifier = "boxed";
  auto tok = MakeCharTokenizer();
  TaskOptions options;
  options.load_prompts = false;
  auto task = MakeTask(c, *tok, options);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_TRUE((*task)->train().empty());
  EXPECT_EQ((*task)->Verify("4", "\\boxed{4}").reward, 1.0);
  EXPECT_EQ((*task)->stop_ids(), std::vector<int>{tok->eos_id()});
  EXPECT_FALSE(Make(c).ok());  // Loading prompts does read the file.
}

TEST(JsonlTaskTest, SameFileSameOrder) {
  // The learner's cursor names prompts by index: two loads of the same file
  // must give the same ids in the same order (resume relies on it).
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = WriteFile("rlvr_task_order.jsonl", NumberedLines(50));
  c.heldout_fraction = 0.2;
  auto a = Make(c, 8);
  auto b = Make(c, 8);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ((*a)->train().size(), (*b)->train().size());
  for (size_t i = 0; i < (*a)->train().size(); ++i) {
    EXPECT_EQ((*a)->train()[i].id, (*b)->train()[i].id);
  }
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
