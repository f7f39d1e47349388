#include "common/policy/pretrain.h"

#include <gtest/gtest.h>

#include "common/policy/evaluate.h"
#include "common/policy/model.h"

namespace rlvr::policy {
namespace {

TEST(PretrainTest, LossFallsAndEvaluateReportsFractions) {
  TaskConfig tc;
  tc.train_size = 64;
  tc.heldout_size = 16;
  tc.max_digits = 1;
  auto task = MakeTask(tc);
  ASSERT_TRUE(task.ok()) << task.status();
  auto tokenizer = MakeCharTokenizer();
  ModelConfig mc;
  mc.d_model = 32;
  mc.n_layers = 1;
  mc.n_heads = 2;
  mc.d_ff = 64;
  auto model = CreateTransformer(mc, tokenizer->vocab_size(), 3);
  ASSERT_TRUE(model.ok());

  PretrainOptions options;
  options.config.steps = 40;
  options.config.batch_size = 16;
  options.config.warmup_steps = 5;
  options.config.data_fraction = 0.5;
  options.log_every = 10;
  std::vector<PretrainProgress> progress;
  options.on_progress = [&](const PretrainProgress& p) { progress.push_back(p); };
  auto result = Pretrain(*model, *tokenizer, **task, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 40);
  EXPECT_EQ(result->examples, 32);
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_EQ(progress.back().step, 40);
  // Initial loss is ~ln(99) = 4.6 per token; training must cut it well down.
  EXPECT_LT(progress.back().loss, 0.75 * std::log(99.0));
  EXPECT_LT(progress.back().lr, progress[0].lr);

  auto eval = Evaluate(*model, *tokenizer, **task, (*task)->heldout(), 3, 1.0, 4, 5);
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_EQ(eval->prompts, 16);
  EXPECT_EQ(eval->k, 3);
  EXPECT_GE(eval->greedy_accuracy, 0.0);
  EXPECT_LE(eval->greedy_accuracy, 1.0);
  EXPECT_GE(eval->pass_at_k, 0.0);
  EXPECT_LE(eval->pass_at_k, 1.0);
  auto again = Evaluate(*model, *tokenizer, **task, (*task)->heldout(), 3, 1.0, 4, 5);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pass_at_k, eval->pass_at_k);  // seeded

  std::vector<Prompt> bad = {{"x", "1\t2=", "3"}};
  EXPECT_FALSE(Evaluate(*model, *tokenizer, **task, bad, 0, 1.0, 4, 5).ok());
  options.config.data_fraction = 0.0;
  EXPECT_FALSE(Pretrain(*model, *tokenizer, **task, options).ok());
}

}  // namespace
}  // namespace rlvr::policy
