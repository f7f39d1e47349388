// Oracle 8 (gradient half) with a tiny real policy::Transformer in float64:
// micro-batch accumulation and 1-vs-2 data-parallel shards give the
// single-pass gradient; plus diagnostics plumbing.
#include "learner/core/step.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>
#include <string>

#include "common/policy/logprobs.h"
#include "common/policy/model.h"

namespace rlvr::learner {
namespace {

using ::testing::HasSubstr;

constexpr int kVocab = 24;

policy::Transformer TinyModel(uint64_t seed) {
  ModelConfig c;
  c.d_model = 16;
  c.n_layers = 1;
  c.n_heads = 2;
  c.d_ff = 32;
  c.max_seq_len = 32;
  c.init_std = 0.3;  // Large enough for non-trivial log-probs.
  policy::Transformer model(c, kVocab, seed);
  model->to(torch::kFloat64);
  return model;
}

// Groups with a shared completion prefix per group, unequal lengths, binary
// rewards, and behaviour log-probs near (not equal to) the model's.
std::vector<Group> MakeGroups(int n, int g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> tok(3, kVocab - 1), len(1, 6), prefix(0, 3);
  std::normal_distribution<float> noise(0.0f, 0.2f);
  std::vector<Group> groups(n);
  for (int i = 0; i < n; ++i) {
    Group& grp = groups[i];
    grp.prompt_id = "q" + std::to_string(i);
    grp.prompt = {1, tok(rng), tok(rng)};
    std::vector<int> shared;
    for (int k = prefix(rng); k > 0; --k) shared.push_back(tok(rng));
    for (int j = 0; j < g; ++j) {
      Rollout r;
      r.tokens = shared;
      for (int k = len(rng); k > 0; --k) r.tokens.push_back(tok(rng));
      for (size_t k = 0; k < r.tokens.size(); ++k)
        r.behaviour_logprobs.push_back(-3.0f + noise(rng));
      r.reward = (j + i) % 3 == 0 ? 1.0 : 0.0;
      grp.rollouts.push_back(r);
    }
  }
  return groups;
}

std::vector<torch::Tensor> Grads(policy::Transformer& model) {
  std::vector<torch::Tensor> out;
  for (auto& p : model->parameters()) {
    out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  return out;
}

void ZeroGrads(policy::Transformer& model) {
  for (auto& p : model->parameters()) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
}

double MaxDiff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, (a[i] - b[i]).abs().max().item<double>());
  return m;
}

double MaxAbs(const std::vector<torch::Tensor>& a) {
  double m = 0.0;
  for (const auto& t : a) m = std::max(m, t.abs().max().item<double>());
  return m;
}

// Single pass vs micro-batches of one group vs two data-parallel shards.
void CheckSplitsMatchSinglePass(const LossConfig& loss);

class StepTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

// Behaviour log-probs as lp_old make the ratios differ from 1 (clipping,
// trust region and the dfpo weights all active), which is the hard case.
// With recompute and the truncated behaviour weights, the same: the weights
// are per token, so any split gives the same sum (the behaviour log-probs are
// far from the model's: some weights are truncated at the cap, others < 1).
TEST_P(StepTest, MicroBatchesAndShardsMatchSinglePass) {
  for (const char* weight : {"none", "truncated"}) {
    SCOPED_TRACE(weight);
    LossConfig loss;
    const std::string& name = GetParam();
    loss.estimator = name.rfind("dfpo", 0) == 0 ? "dfpo" : name;
    if (name == "dfpo_orthogonal") loss.dfpo_transform = "adv_orthogonal";
    loss.behaviour_weight = weight;
    loss.old_logprobs = loss.behaviour_weight == "none" ? "behaviour" : "recompute";
    loss.clip_eps = 0.5;
    loss.gspo_eps = 0.5;
    CheckSplitsMatchSinglePass(loss);
  }
}

void CheckSplitsMatchSinglePass(const LossConfig& loss) {
  policy::Transformer model = TinyModel(3);
  std::vector<Group> groups = MakeGroups(7, 5, 4);
  BatchingConfig batching;
  batching.reward_balance = "none";
  auto plan = PlanUpdate(groups, batching, loss, 8, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->steps.size(), 1u);
  const OptimizerStep& step = plan->steps[0];

  batching.micro_batch_rollouts = 1000;
  ZeroGrads(model);
  auto single = AccumulateStepGradients(model, groups, step.groups, step.normalizer, loss, batching,
                                        nullptr, nullptr);
  ASSERT_TRUE(single.ok()) << single.status();
  std::vector<torch::Tensor> g_single = Grads(model);
  ASSERT_GT(MaxAbs(g_single), 1e-6);

  batching.micro_batch_rollouts = 7;  // Whole groups of 5: micro-batches of one group.
  ZeroGrads(model);
  auto micro = AccumulateStepGradients(model, groups, step.groups, step.normalizer, loss, batching,
                                       nullptr, nullptr);
  ASSERT_TRUE(micro.ok()) << micro.status();
  EXPECT_LE(MaxDiff(Grads(model), g_single), 1e-12);
  EXPECT_NEAR(micro->loss_sum(), single->loss_sum(), 1e-12);

  // Two ranks, each on its shard with the step's Z; the summed gradient is the step's.
  ZeroGrads(model);
  UpdateDiagnostics merged;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<SelectedGroup> shard = ShardStep(step, rank, 2);
    EXPECT_FALSE(shard.empty());
    auto d = AccumulateStepGradients(model, groups, shard, step.normalizer, loss, batching, nullptr,
                                     nullptr);
    ASSERT_TRUE(d.ok()) << d.status();
    MergeDiagnostics(*d, &merged);
  }
  EXPECT_LE(MaxDiff(Grads(model), g_single), 1e-12);
  EXPECT_NEAR(merged.loss_sum(), single->loss_sum(), 1e-12);
  EXPECT_EQ(merged.tokens(), single->tokens());
  EXPECT_EQ(merged.tokens(), step.tokens);
  EXPECT_NEAR(merged.cancellation_net(), single->cancellation_net(), 1e-12);
  EXPECT_NEAR(merged.behaviour_weight_sum(), single->behaviour_weight_sum(), 1e-9);
  EXPECT_EQ(merged.behaviour_weight_truncated_tokens(),
            single->behaviour_weight_truncated_tokens());
  if (loss.behaviour_weight == "truncated") {
    EXPECT_GT(single->behaviour_weight_truncated_tokens(), 0);
    EXPECT_LT(single->behaviour_weight_truncated_tokens(), single->tokens());
  }
}

INSTANTIATE_TEST_SUITE_P(Estimators, StepTest,
                         ::testing::Values("dfpo", "dfpo_orthogonal", "grpo", "dr_grpo", "dapo",
                                           "gspo"));

TEST(StepDiagnosticsTest, CancellationResidualOnRealModel) {
  torch::set_num_threads(1);
  policy::Transformer model = TinyModel(5);
  std::vector<Group> groups = MakeGroups(6, 6, 8);
  // Make sure every group shares a prefix of at least two tokens.
  for (auto& g : groups) {
    for (auto& r : g.rollouts) {
      r.tokens.insert(r.tokens.begin(), {7, 8});
      r.behaviour_logprobs.insert(r.behaviour_logprobs.begin(), {-2.5f, -2.5f});
    }
  }
  BatchingConfig batching;
  batching.reward_balance = "none";
  for (const char* est : {"dfpo", "grpo"}) {
    LossConfig loss;
    loss.estimator = est;
    loss.old_logprobs = "behaviour";
    auto plan = PlanUpdate(groups, batching, loss, 10, 2);
    ASSERT_TRUE(plan.ok());
    const OptimizerStep& step = plan->steps[0];
    ZeroGrads(model);
    auto d = AccumulateStepGradients(model, groups, step.groups, step.normalizer, loss, batching,
                                     nullptr, nullptr);
    ASSERT_TRUE(d.ok()) << d.status();
    FinalizeDiagnostics(&*d);
    EXPECT_GE(d->shared_cells(), 12);
    if (std::string(est) == "dfpo") {
      EXPECT_LE(d->cancellation_residual(), 1e-6);
      EXPECT_LE(d->orthogonality_residual(), 1e-12);
    } else {
      EXPECT_GT(d->cancellation_residual(), 0.05);
    }
    EXPECT_GT(d->clip_fraction(), 0.0);  // Behaviour log-probs are far from the model's.
    EXPECT_GT(d->kl_behaviour_recomputed(), 0.0);
    EXPECT_GT(d->entropy(), 0.0);
    EXPECT_GT(d->ratio_max(), d->ratio_mean());
    EXPECT_EQ(d->positive_rows() + d->negative_rows(), d->rollouts());
  }
}

// Oracle 7 through the model: a group of eight rewards of 0.1 (not exactly
// representable; R - mean(R) = 1.4e-17) kept with dynamic sampling off gives
// an exactly zero gradient and loss for every std-normalising estimator, and
// adds nothing to the cancellation sums (the old zero test on the normalised
// advantages let ~1e-11 advantages of one sign through: residual 1.0).
TEST(StepDiagnosticsTest, UnrepresentableEqualRewardsGiveExactlyZeroGradient) {
  torch::set_num_threads(1);
  policy::Transformer model = TinyModel(7);
  std::vector<Group> groups = MakeGroups(3, 8, 10);
  for (auto& g : groups) {
    for (auto& r : g.rollouts) {
      r.tokens.insert(r.tokens.begin(), {7, 8});
      r.behaviour_logprobs.insert(r.behaviour_logprobs.begin(), {-2.5f, -2.5f});
    }
  }
  for (auto& r : groups[2].rollouts) r.reward = 0.1;
  BatchingConfig batching;
  batching.reward_balance = "none";
  batching.dynamic_sampling = false;
  for (const char* est : {"grpo", "gspo", "dfpo", "dr_grpo"}) {
    LossConfig loss;
    loss.estimator = est;
    loss.std_normalize = true;
    loss.old_logprobs = "behaviour";
    auto plan = PlanUpdate(groups, batching, loss, 12, 3);
    ASSERT_TRUE(plan.ok());
    const OptimizerStep& step = plan->steps[0];
    std::vector<SelectedGroup> only_zero, others;
    for (const SelectedGroup& sg : step.groups) (sg.group == 2 ? only_zero : others).push_back(sg);
    ASSERT_EQ(only_zero.size(), 1u);
    ZeroGrads(model);
    auto d = AccumulateStepGradients(model, groups, only_zero, step.normalizer, loss, batching,
                                     nullptr, nullptr);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(MaxAbs(Grads(model)), 0.0) << est;
    EXPECT_EQ(d->loss_sum(), 0.0) << est;
    EXPECT_GE(d->shared_cells(), 2);
    EXPECT_EQ(d->cancellation_net(), 0.0) << est;
    EXPECT_EQ(d->cancellation_abs(), 0.0) << est;
    EXPECT_EQ(d->positive_rows() + d->negative_rows(), 0) << est;
    FinalizeDiagnostics(&*d);
    EXPECT_EQ(d->cancellation_residual(), 0.0) << est;
    // With the other groups: the same sums as without the zero-variance group.
    ZeroGrads(model);
    auto all = AccumulateStepGradients(model, groups, step.groups, step.normalizer, loss, batching,
                                       nullptr, nullptr);
    ZeroGrads(model);
    auto rest = AccumulateStepGradients(model, groups, others, step.normalizer, loss, batching,
                                        nullptr, nullptr);
    ASSERT_TRUE(all.ok() && rest.ok());
    EXPECT_NEAR(all->cancellation_net(), rest->cancellation_net(), 1e-15) << est;
    EXPECT_NEAR(all->cancellation_abs(), rest->cancellation_abs(), 1e-15) << est;
  }
}

TEST(StepDiagnosticsTest, OnPolicyRecomputeMatchesPrecomputedOld) {
  torch::set_num_threads(1);
  policy::Transformer model = TinyModel(6);
  std::vector<Group> groups = MakeGroups(4, 4, 9);
  LossConfig loss;  // dfpo, recompute.
  BatchingConfig batching;
  batching.reward_balance = "none";
  auto plan = PlanUpdate(groups, batching, loss, 10, 2);
  ASSERT_TRUE(plan.ok());
  const OptimizerStep& step = plan->steps[0];
  ZeroGrads(model);
  auto a = AccumulateStepGradients(model, groups, step.groups, step.normalizer, loss, batching,
                                   nullptr, nullptr);
  ASSERT_TRUE(a.ok());
  std::vector<torch::Tensor> g_a = Grads(model);
  auto old = ComputeOldLogProbs(model, groups, SelectionForRank(*plan, 0, 1), 3);
  ASSERT_TRUE(old.ok()) << old.status();
  ZeroGrads(model);
  auto b = AccumulateStepGradients(model, groups, step.groups, step.normalizer, loss, batching,
                                   &*old, nullptr);
  ASSERT_TRUE(b.ok()) << b.status();
  // Stored as float32, so ratios are 1 up to float32 rounding.
  EXPECT_LE(MaxDiff(Grads(model), g_a), 1e-5 * MaxAbs(g_a));
  FinalizeDiagnostics(&*a);
  FinalizeDiagnostics(&*b);
  EXPECT_NEAR(b->ratio_mean(), 1.0, 1e-6);
  EXPECT_EQ(a->ratio_max(), 1.0);
  EXPECT_EQ(a->clip_fraction(), 0.0);
}

// loss.behaviour_weight = truncated through the model: behaviour log-probs log(1.5)
// below the model's own give every token pi_prox / pi_behav = 1.5, so the
// gradient is 1.5 times the unweighted one under a cap of 2, and the cap
// itself (every token truncated) under a cap of 1.2.
TEST(StepDiagnosticsTest, BehaviourWeightsScaleTheGradient) {
  torch::set_num_threads(1);
  policy::Transformer model = TinyModel(9);
  std::vector<Group> groups = MakeGroups(4, 4, 12);
  BatchingConfig batching;
  batching.reward_balance = "none";
  LossConfig loss;  // dfpo, recompute.
  auto plan = PlanUpdate(groups, batching, loss, 10, 2);
  ASSERT_TRUE(plan.ok());
  auto own = ComputeOldLogProbs(model, groups, SelectionForRank(*plan, 0, 1), 64);
  ASSERT_TRUE(own.ok()) << own.status();
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t r = 0; r < groups[g].rollouts.size(); ++r) {
      std::vector<float>& behaviour = groups[g].rollouts[r].behaviour_logprobs;
      behaviour = own->logprobs[g][r];
      for (float& v : behaviour) v -= static_cast<float>(std::log(1.5));
    }
  }
  const OptimizerStep& step = plan->steps[0];
  auto run = [&](double cap, UpdateDiagnostics* d) {
    LossConfig l = loss;
    l.behaviour_weight = cap > 0.0 ? "truncated" : "none";
    if (cap > 0.0) l.behaviour_weight_cap = cap;
    ZeroGrads(model);
    auto out = AccumulateStepGradients(model, groups, step.groups, step.normalizer, l, batching,
                                       nullptr, nullptr);
    EXPECT_TRUE(out.ok()) << out.status();
    if (out.ok()) *d = *out;
    FinalizeDiagnostics(d);
    return Grads(model);
  };
  UpdateDiagnostics off, wide, tight;
  std::vector<torch::Tensor> g_off = run(0.0, &off);
  std::vector<torch::Tensor> g_wide = run(2.0, &wide);
  std::vector<torch::Tensor> g_tight = run(1.2, &tight);
  ASSERT_GT(MaxAbs(g_off), 1e-3);
  std::vector<torch::Tensor> scaled_wide, scaled_tight;
  for (const auto& g : g_off) {
    scaled_wide.push_back(1.5 * g);
    scaled_tight.push_back(1.2 * g);
  }
  // Behaviour log-probs are float32: the weights are 1.5 to float32 rounding.
  EXPECT_LE(MaxDiff(g_wide, scaled_wide), 1e-5 * MaxAbs(g_off));
  EXPECT_LE(MaxDiff(g_tight, scaled_tight), 1e-12 * MaxAbs(g_off));
  EXPECT_EQ(off.behaviour_weight_mean(), 0.0);
  EXPECT_NEAR(wide.behaviour_weight_mean(), 1.5, 1e-5);
  EXPECT_EQ(wide.behaviour_weight_truncated(), 0.0);
  EXPECT_NEAR(tight.behaviour_weight_mean(), 1.2, 1e-12);
  EXPECT_EQ(tight.behaviour_weight_truncated(), 1.0);
  EXPECT_GT(off.kl_behaviour_recomputed(), 0.0);  // The mismatch it corrects.

  // With several optimizer steps pi_prox is the precomputed start policy
  // (ComputeOldLogProbs): at the first step that is the same policy.
  LossConfig l = loss;
  l.behaviour_weight = "truncated";
  ZeroGrads(model);
  auto with_old = AccumulateStepGradients(model, groups, step.groups, step.normalizer, l, batching,
                                          &*own, nullptr);
  ASSERT_TRUE(with_old.ok()) << with_old.status();
  EXPECT_LE(MaxDiff(Grads(model), g_wide), 1e-5 * MaxAbs(g_off));
}

TEST(StepDiagnosticsTest, ErrorsAreStatuses) {
  torch::set_num_threads(1);
  policy::Transformer model = TinyModel(7);
  std::vector<Group> groups = MakeGroups(2, 3, 10);
  LossConfig loss;
  BatchingConfig batching;
  std::vector<SelectedGroup> shard = {{0, {0, 1, 2}, {0.5, -0.25, -0.25}, 0}};
  EXPECT_FALSE(AccumulateStepGradients(model, groups, {{5, {0}, {0.0}, 0}}, 1.0, loss, batching,
                                       nullptr, nullptr)
                   .ok());
  EXPECT_FALSE(
      AccumulateStepGradients(model, groups, shard, 0.0, loss, batching, nullptr, nullptr).ok());
  loss.kl_coef = 0.1;  // Needs a reference.
  EXPECT_FALSE(
      AccumulateStepGradients(model, groups, shard, 1.0, loss, batching, nullptr, nullptr).ok());
  policy::Transformer reference = TinyModel(8);
  EXPECT_TRUE(
      AccumulateStepGradients(model, groups, shard, 1.0, loss, batching, nullptr, &reference).ok());
  loss.kl_coef = 0.0;
  loss.behaviour_weight = "truncated";
  loss.behaviour_weight_cap = 0.5;  // A cap below 1.
  auto low_cap =
      AccumulateStepGradients(model, groups, shard, 1.0, loss, batching, nullptr, nullptr);
  EXPECT_FALSE(low_cap.ok());
  EXPECT_THAT(std::string(low_cap.status().message()), HasSubstr("loss.behaviour_weight_cap"));
  loss.behaviour_weight_cap = 2.0;
  groups[0].rollouts[1].behaviour_logprobs.pop_back();  // The weights need behaviour log-probs.
  auto missing =
      AccumulateStepGradients(model, groups, shard, 1.0, loss, batching, nullptr, nullptr);
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("group 0 rollout 1"));
  loss.old_logprobs = "behaviour";  // pi_prox would be pi_behav: truncated is refused.
  auto both = AccumulateStepGradients(model, groups, shard, 1.0, loss, batching, nullptr, nullptr);
  EXPECT_FALSE(both.ok());
  EXPECT_THAT(std::string(both.status().message()), HasSubstr("loss.behaviour_weight"));
  loss.behaviour_weight = "none";
  EXPECT_FALSE(
      AccumulateStepGradients(model, groups, shard, 1.0, loss, batching, nullptr, nullptr).ok());
  groups[0].rollouts[1].tokens.push_back(kVocab + 5);  // Out of vocabulary: torch error -> Status.
  groups[0].rollouts[1].behaviour_logprobs.resize(groups[0].rollouts[1].tokens.size(), -1.0f);
  auto bad = AccumulateStepGradients(model, groups, shard, 1.0, loss, batching, nullptr, nullptr);
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(
      AccumulateStepGradients(model, groups, {}, 1.0, loss, batching, nullptr, nullptr).ok());
}

}  // namespace
}  // namespace rlvr::learner
