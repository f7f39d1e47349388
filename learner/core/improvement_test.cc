// The direction of learning: one small gradient-descent step on a group must
// raise the log-probability of its rewarded completions and lower that of its
// unrewarded ones, for every estimator. (The oracle tests pin exact values of
// gradients; this pins what those values are for.)
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/policy/logprobs.h"
#include "common/policy/model.h"
#include "learner/core/batcher.h"
#include "learner/core/step.h"

namespace rlvr::learner {
namespace {

double SeqLogProb(policy::Transformer& model, const std::vector<int>& prompt,
                  const std::vector<int>& completion) {
  torch::NoGradGuard no_grad;
  auto lp = policy::ComputeCompletionLogProbs(model, {&prompt}, {&completion}, false);
  return (lp.logprobs * lp.mask).sum().item<double>();
}

class ImprovementTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ImprovementTest, OneStepRaisesRewardedAndLowersUnrewardedCompletions) {
  torch::manual_seed(11);
  ModelConfig mc;
  mc.d_model = 16;
  mc.n_layers = 1;
  mc.n_heads = 2;
  mc.d_ff = 32;
  mc.max_seq_len = 16;
  auto made = policy::CreateTransformer(mc, 12, 11);
  ASSERT_TRUE(made.ok()) << made.status();
  policy::Transformer model = *made;

  Group g;
  g.prompt = {1, 4, 5, 6};
  const std::vector<int> good = {7, 8, 2};
  const std::vector<int> bad_a = {9, 2};
  const std::vector<int> bad_b = {7, 9, 10, 2};
  for (const auto& [tokens, reward] : std::vector<std::pair<std::vector<int>, double>>{
           {good, 1}, {bad_a, 0}, {good, 1}, {bad_b, 0}}) {
    Rollout r;
    r.tokens = tokens;
    r.reward = reward;
    r.behaviour_logprobs.assign(tokens.size(), -1.0f);
    g.rollouts.push_back(r);
  }
  std::vector<Group> groups = {g};
  LossConfig loss;
  loss.estimator = GetParam();
  if (GetParam() == "dfpo_orth") {
    loss.estimator = "dfpo";
    loss.dfpo_transform = "adv_orthogonal";
  }
  BatchingConfig batching;
  batching.reward_balance = "none";
  auto plan = PlanUpdate(groups, batching, loss, 8, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->steps.size(), 1u);

  double before_good = SeqLogProb(model, g.prompt, good);
  double before_a = SeqLogProb(model, g.prompt, bad_a);
  double before_b = SeqLogProb(model, g.prompt, bad_b);
  for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
  const auto& step = plan->steps[0];
  auto diag = AccumulateStepGradients(model, groups, step.groups, step.normalizer, loss, batching,
                                      nullptr, nullptr);
  ASSERT_TRUE(diag.ok()) << diag.status();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) {
      if (p.grad().defined()) p.sub_(0.05 * p.grad());
    }
  }
  EXPECT_GT(SeqLogProb(model, g.prompt, good), before_good) << GetParam();
  EXPECT_LT(SeqLogProb(model, g.prompt, bad_a), before_a) << GetParam();
  EXPECT_LT(SeqLogProb(model, g.prompt, bad_b), before_b) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Estimators, ImprovementTest,
                         ::testing::Values("dfpo", "dfpo_orth", "grpo", "dr_grpo", "dapo", "gspo"));

}  // namespace
}  // namespace rlvr::learner
