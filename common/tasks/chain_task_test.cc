#include "common/tasks/chain_task.h"

#include <gtest/gtest.h>

#include <set>

#include "common/tokenizer/tokenizer.h"

namespace rlvr {
namespace {

// MakeTask with the char tokenizer and no length limit.
absl::StatusOr<std::unique_ptr<Task>> MakeChain(const TaskConfig& config) {
  static const std::unique_ptr<Tokenizer> chars = MakeCharTokenizer();
  return MakeTask(config, *chars, TaskOptions{});
}

TaskConfig ChainConfig() {
  TaskConfig c;
  c.kind = "chain";
  c.num_terms = 5;
  c.min_digits = 1;
  c.max_digits = 1;
  c.train_size = 2000;
  c.heldout_size = 200;
  c.seed = 3;
  return c;
}

TEST(ChainTaskTest, ReferenceChain) {
  EXPECT_EQ(ChainCompletion({12, 34, 7}, "++"), "12+34=46;46+7=53;#53");
  EXPECT_EQ(ChainCompletion({5, 9, 3}, "-+"), "5-9=-4;-4+3=-1;#-1");
  EXPECT_EQ(ChainCompletion({8}, ""), "#8");
}

TEST(ChainTaskTest, BuiltThroughMakeTaskWithDisjointSplits) {
  auto task = MakeChain(ChainConfig());
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->name(), "chain");
  ASSERT_EQ((*task)->train().size(), 2000u);
  ASSERT_EQ((*task)->heldout().size(), 200u);
  std::set<std::string> train_texts;
  for (const Prompt& p : (*task)->train()) train_texts.insert(p.text);
  EXPECT_EQ(train_texts.size(), 2000u);
  for (const Prompt& p : (*task)->heldout()) EXPECT_EQ(train_texts.count(p.text), 0u) << p.text;
  // Deterministic in the seed.
  auto again = MakeChain(ChainConfig());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->train()[17].answer, (*task)->train()[17].answer);
}

TEST(ChainTaskTest, EveryReferenceIsCorrectAndFitsTheCharTokenizer) {
  auto task = MakeChain(ChainConfig());
  ASSERT_TRUE(task.ok());
  std::unique_ptr<Tokenizer> tok = MakeCharTokenizer();
  size_t longest = 0;
  for (const Prompt& p : (*task)->train()) {
    EXPECT_EQ((*task)->Verify(p.answer, p.answer).reward, 1.0) << p.answer;
    auto prompt = EncodePrompt(*tok, p.text);
    auto target = EncodeTargetCompletion(*tok, p.answer);
    ASSERT_TRUE(prompt.ok() && target.ok()) << p.text;
    longest = std::max(longest, prompt->size() + target->size());
    EXPECT_LE(target->size(), 40u);  // configs/chain.yaml: sampling.max_new_tokens.
  }
  EXPECT_LE(longest, 64u);  // configs/chain.yaml: model.max_seq_len.
}

TEST(ChainTaskTest, VerifierScoresOnlyTheFinalAnswer) {
  auto task = MakeChain(ChainConfig());
  ASSERT_TRUE(task.ok());
  const std::string ref = "12+34=46;46+7=53;#53";
  EXPECT_EQ((*task)->Verify(ref, ref).reward, 1.0);
  EXPECT_EQ((*task)->Verify(ref, "12+34=45;45+7=53;#53").reward, 1.0);  // Outcome only.
  EXPECT_EQ((*task)->Verify(ref, "12+34=46;46+7=52;#52").reward, 0.0);
  EXPECT_EQ((*task)->Verify(ref, "12+34=46;46+7=53").reward, 0.0);  // No '#'.
  EXPECT_EQ((*task)->Verify(ref, "12+34=46;46+7=53;#").reward, 0.0);
  EXPECT_EQ((*task)->Verify("5-9=-4;-4+3=-1;#-1", "#-1").reward, 1.0);
}

TEST(ChainTaskTest, RejectsBadConfigs) {
  TaskConfig c = ChainConfig();
  c.ops = "*";
  EXPECT_FALSE(MakeChain(c).ok());
  c = ChainConfig();
  c.num_terms = 2;  // 100 distinct chains of two 1-digit operands.
  EXPECT_FALSE(MakeChain(c).ok());
  c = ChainConfig();
  c.min_digits = 3;
  c.max_digits = 2;
  EXPECT_FALSE(MakeChain(c).ok());
}

}  // namespace
}  // namespace rlvr
