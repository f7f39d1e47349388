#include "common/policy/pretrain.h"

#include <gtest/gtest.h>

#include "common/policy/evaluate.h"
#include "common/policy/model.h"

namespace rlvr::policy {
namespace {

struct TinySetup {
  std::unique_ptr<Task> task;
  std::unique_ptr<Tokenizer> tokenizer;
  Transformer model{nullptr};
};

TinySetup MakeTinySetup(int train_size = 80, int heldout_size = 10) {
  TinySetup s;
  TaskConfig tc;
  tc.train_size = train_size;
  tc.heldout_size = heldout_size;
  tc.max_digits = 1;
  s.tokenizer = MakeCharTokenizer();
  auto task = MakeTask(tc, *s.tokenizer, TaskOptions{});
  EXPECT_TRUE(task.ok()) << task.status();
  s.task = *std::move(task);
  ModelConfig mc;
  mc.d_model = 32;
  mc.n_layers = 1;
  mc.n_heads = 2;
  mc.d_ff = 64;
  auto model = CreateTransformer(mc, s.tokenizer->vocab_size(), 3);
  EXPECT_TRUE(model.ok());
  s.model = *model;
  return s;
}

TEST(PretrainTest, LossFallsAndEvaluateReportsFractions) {
  TinySetup s = MakeTinySetup(64, 16);
  Task* task = s.task.get();
  Tokenizer* tokenizer = s.tokenizer.get();
  Transformer& model = s.model;
  PretrainOptions options;
  options.config.steps = 40;
  options.config.batch_size = 16;
  options.config.warmup_steps = 5;
  options.config.data_fraction = 0.5;
  options.log_every = 10;
  std::vector<PretrainProgress> progress;
  options.on_progress = [&](const PretrainProgress& p) { progress.push_back(p); };
  auto result = Pretrain(model, *tokenizer, *task, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 40);
  EXPECT_EQ(result->examples, 32);
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_EQ(progress.back().step, 40);
  // Initial loss is ~ln(99) = 4.6 per token; training must cut it well down.
  EXPECT_LT(progress.back().loss, 0.75 * std::log(99.0));
  EXPECT_LT(progress.back().lr, progress[0].lr);

  auto eval = Evaluate(model, *tokenizer, *task, task->heldout(), 3, 1.0, 4, 5);
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_EQ(eval->prompts, 16);
  EXPECT_EQ(eval->k, 3);
  EXPECT_GE(eval->greedy_accuracy, 0.0);
  EXPECT_LE(eval->greedy_accuracy, 1.0);
  EXPECT_GE(eval->pass_at_k, 0.0);
  EXPECT_LE(eval->pass_at_k, 1.0);
  // Per-prompt greedy completions agree with the accuracy; the mean sample
  // accuracy cannot exceed pass@k.
  ASSERT_EQ(eval->greedy.size(), 16u);
  int correct = 0;
  for (const GreedyCompletion& g : eval->greedy) {
    correct += g.correct;
    EXPECT_FALSE(g.reason.empty());
  }
  EXPECT_DOUBLE_EQ(eval->greedy_accuracy, correct / 16.0);
  EXPECT_LE(eval->sample_accuracy, eval->pass_at_k);
  EXPECT_GE(eval->sample_accuracy, 0.0);
  auto again = Evaluate(model, *tokenizer, *task, task->heldout(), 3, 1.0, 4, 5);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pass_at_k, eval->pass_at_k);  // seeded

  std::vector<Prompt> bad = {{"x", "1\t2=", "3"}};
  EXPECT_FALSE(Evaluate(model, *tokenizer, *task, bad, 0, 1.0, 4, 5).ok());
  options.config.data_fraction = 0.0;
  EXPECT_FALSE(Pretrain(model, *tokenizer, *task, options).ok());
}

// on_progress follows the batches of each pass: the greedy one, then the k
// samples per prompt, each ending at every prompt done.
TEST(PretrainTest, EvaluateReportsHowFarEachPassIs) {
  TinySetup s = MakeTinySetup(64, 16);
  std::vector<EvalProgress> seen;
  auto eval = Evaluate(s.model, *s.tokenizer, *s.task, s.task->heldout(), /*k=*/8, 1.0, 4, 5,
                       [&](const EvalProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(eval.ok()) << eval.status();
  // 16 greedy rows fit one batch of 64; 16 x 8 sampled rows take two.
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].pass, "greedy");
  EXPECT_EQ(seen[0].prompts_done, 16);
  EXPECT_EQ(seen[1].pass, "pass@8");
  EXPECT_EQ(seen[1].prompts_done, 8);
  EXPECT_EQ(seen[2].pass, "pass@8");
  EXPECT_EQ(seen[2].prompts_done, 16);
  for (const EvalProgress& p : seen) EXPECT_EQ(p.prompts, 16);
}

// stop_accuracy: training stops at the first check that reaches it; the
// validation prompts (the training split's tail) are not trained on; the
// reported accuracy is what Evaluate gives on them.
TEST(PretrainTest, StopsAtTheValidationAccuracy) {
  TinySetup s = MakeTinySetup();
  PretrainOptions options;
  options.config.steps = 2000;
  options.config.batch_size = 16;
  options.config.lr = 3e-3;
  options.config.warmup_steps = 5;
  options.config.stop_accuracy = 0.25;
  options.config.validation_prompts = 20;
  options.config.validate_every = 10;
  options.max_new_tokens = 4;
  std::vector<PretrainProgress> checks;
  options.on_progress = [&](const PretrainProgress& p) {
    if (p.validation_accuracy >= 0) checks.push_back(p);
  };
  auto result = Pretrain(s.model, *s.tokenizer, *s.task, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->reached_stop_accuracy);
  EXPECT_LT(result->steps, 2000);
  EXPECT_EQ(result->steps % 10, 0);
  EXPECT_EQ(result->examples, 60);  // 80 - 20 validation prompts.
  EXPECT_GE(result->validation_accuracy, 0.25);
  ASSERT_FALSE(checks.empty());
  EXPECT_EQ(checks.back().step, result->steps);
  for (size_t i = 0; i + 1 < checks.size(); ++i) EXPECT_LT(checks[i].validation_accuracy, 0.25);
  std::vector<Prompt> tail(s.task->train().end() - 20, s.task->train().end());
  auto eval = Evaluate(s.model, *s.tokenizer, *s.task, tail, 0, 1.0, 4, 0);
  ASSERT_TRUE(eval.ok());
  EXPECT_DOUBLE_EQ(eval->greedy_accuracy, result->validation_accuracy);
}

TEST(PretrainTest, UnreachedStopAccuracyRunsAllStepsAndBadValidationIsAnError) {
  TinySetup s = MakeTinySetup();
  PretrainOptions options;
  options.config.steps = 12;
  options.config.batch_size = 8;
  options.config.stop_accuracy = 1.0;
  options.config.validation_prompts = 20;
  options.config.validate_every = 5;
  auto result = Pretrain(s.model, *s.tokenizer, *s.task, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 12);
  EXPECT_FALSE(result->reached_stop_accuracy);
  EXPECT_GE(result->validation_accuracy, 0.0);  // Checked at the last step too.
  options.config.validation_prompts = 80;       // The whole training split.
  auto bad = Pretrain(s.model, *s.tokenizer, *s.task, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rlvr::policy
