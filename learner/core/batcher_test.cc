// Oracle 8 (planning half): complete groups, each prompt once per epoch,
// n+ = n- with downsample, fixed Z per step, sharding.
#include "learner/core/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "learner/core/advantage.h"

namespace rlvr::learner {
namespace {

// n groups of G rollouts with random binary rewards and lengths 1..8.
std::vector<Group> RandomGroups(int n, int g, uint64_t seed, double p_correct = 0.4) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> len(1, 8);
  std::bernoulli_distribution correct(p_correct);
  std::vector<Group> groups(n);
  for (int i = 0; i < n; ++i) {
    groups[i].prompt_id = "p" + std::to_string(i);
    groups[i].prompt_index = static_cast<uint64_t>(i);
    groups[i].prompt = {1, 10 + i % 50};
    for (int j = 0; j < g; ++j) {
      Rollout r;
      r.tokens.assign(static_cast<size_t>(len(rng)), 3);
      r.behaviour_logprobs.assign(r.tokens.size(), -1.0f);
      r.reward = correct(rng) ? 1.0 : 0.0;
      groups[i].rollouts.push_back(r);
    }
  }
  return groups;
}

int64_t Tokens(const std::vector<Group>& groups, const SelectedGroup& sg) {
  int64_t t = 0;
  for (int r : sg.rollouts) t += static_cast<int64_t>(groups[sg.group].rollouts[r].tokens.size());
  return t;
}

TEST(BatcherTest, DownsampleBalancesEveryGroupAndStep) {
  std::vector<Group> groups = RandomGroups(40, 8, 1);
  BatchingConfig b;
  b.mini_batches = 4;
  b.epochs = 3;
  LossConfig loss;
  auto plan = PlanUpdate(groups, b, loss, 8, 99);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const BatchStats& st = plan->stats;
  EXPECT_EQ(st.groups_in, 40);
  EXPECT_EQ(st.groups_used + st.groups_dropped_zero_variance, 40);
  EXPECT_EQ(st.positive_rollouts, st.negative_rollouts);
  EXPECT_GT(st.groups_used, 10);
  EXPECT_EQ(plan->steps.size(), 12u);
  EXPECT_EQ(st.max_step_imbalance, 0.0);
  for (const OptimizerStep& step : plan->steps) {
    int pos = 0, neg = 0;
    int64_t tokens = 0, rollouts = 0;
    for (const SelectedGroup& sg : step.groups) {
      double sum = 0.0;
      int gp = 0, gn = 0;
      for (size_t j = 0; j < sg.rollouts.size(); ++j) {
        const double reward = groups[sg.group].rollouts[sg.rollouts[j]].reward;
        // Recomputed on the balanced subset: +-0.5 exactly.
        EXPECT_EQ(sg.advantages[j], reward > 0.5 ? 0.5 : -0.5);
        sum += sg.advantages[j];
        (sg.advantages[j] > 0 ? gp : gn)++;
      }
      EXPECT_EQ(gp, gn);
      EXPECT_EQ(sum, 0.0);
      pos += gp;
      neg += gn;
      tokens += Tokens(groups, sg);
      rollouts += static_cast<int64_t>(sg.rollouts.size());
      EXPECT_EQ(sg.tokens, Tokens(groups, sg));
    }
    EXPECT_EQ(pos, neg);  // n+ = n- per update step.
    EXPECT_EQ(step.tokens, tokens);
    EXPECT_EQ(step.rollouts, rollouts);
    EXPECT_EQ(step.normalizer, static_cast<double>(tokens));  // dfpo, normalizer=tokens.
  }
}

TEST(BatcherTest, EachPromptOncePerEpochAsCompleteGroups) {
  std::vector<Group> groups = RandomGroups(37, 6, 2);
  BatchingConfig b;
  b.reward_balance = "none";
  b.mini_batches = 5;
  b.epochs = 2;
  LossConfig loss;
  auto plan = PlanUpdate(groups, b, loss, 8, 7);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int64_t used = plan->stats.groups_used;
  ASSERT_EQ(plan->steps.size(), 10u);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::multiset<std::string> seen;
    for (int s = 0; s < 5; ++s) {
      const OptimizerStep& step = plan->steps[epoch * 5 + s];
      EXPECT_GE(step.groups.size(), static_cast<size_t>(used / 5));
      EXPECT_LE(step.groups.size(), static_cast<size_t>(used / 5 + 1));
      for (const SelectedGroup& sg : step.groups) {
        seen.insert(groups[sg.group].prompt_id);
        EXPECT_EQ(sg.rollouts.size(), groups[sg.group].rollouts.size());  // Complete group.
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(used));
    EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size());
  }
  // Different epochs see different orders (seeded shuffles).
  EXPECT_NE(plan->steps[0].groups[0].group * 1000 + plan->steps[1].groups[0].group,
            plan->steps[5].groups[0].group * 1000 + plan->steps[6].groups[0].group);
}

TEST(BatcherTest, DeterministicForASeed) {
  std::vector<Group> groups = RandomGroups(20, 8, 3);
  BatchingConfig b;
  b.mini_batches = 3;
  LossConfig loss;
  auto a = PlanUpdate(groups, b, loss, 8, 5);
  auto c = PlanUpdate(groups, b, loss, 8, 5);
  auto d = PlanUpdate(groups, b, loss, 8, 6);
  ASSERT_TRUE(a.ok() && c.ok() && d.ok());
  auto flat = [](const UpdatePlan& p) {
    std::vector<int> out;
    for (const auto& s : p.steps) {
      for (const auto& g : s.groups) {
        out.push_back(g.group);
        out.insert(out.end(), g.rollouts.begin(), g.rollouts.end());
      }
    }
    return out;
  };
  EXPECT_EQ(flat(*a), flat(*c));
  EXPECT_NE(flat(*a), flat(*d));
}

TEST(BatcherTest, DynamicSamplingDropsAndCountsZeroVariance) {
  std::vector<Group> groups = RandomGroups(6, 4, 4);
  for (auto& r : groups[1].rollouts) r.reward = 1.0;
  for (auto& r : groups[4].rollouts) r.reward = 0.0;
  groups[0].rollouts[0].reward = 1.0;
  groups[0].rollouts[1].reward = 0.0;
  BatchingConfig b;
  b.reward_balance = "none";
  LossConfig loss;
  auto plan = PlanUpdate(groups, b, loss, 8, 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_GE(plan->stats.groups_dropped_zero_variance, 2);
  EXPECT_EQ(plan->stats.groups_zero_variance, plan->stats.groups_dropped_zero_variance);
  EXPECT_DOUBLE_EQ(plan->stats.zero_variance_fraction,
                   static_cast<double>(plan->stats.groups_zero_variance) / 6.0);
  for (const auto& sg : plan->steps[0].groups) {
    EXPECT_NE(sg.group, 1);
    EXPECT_NE(sg.group, 4);
  }
  // Dynamic sampling off: zero-variance groups stay, with zero advantages.
  b.dynamic_sampling = false;
  plan = PlanUpdate(groups, b, loss, 8, 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->stats.groups_dropped_zero_variance, 0);
  bool found = false;
  for (const auto& sg : plan->steps[0].groups) {
    if (sg.group != 1) continue;
    found = true;
    for (double a : sg.advantages) EXPECT_EQ(a, 0.0);
  }
  EXPECT_TRUE(found);
  // dapo always drops them.
  loss.estimator = "dapo";
  plan = PlanUpdate(groups, b, loss, 8, 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->stats.groups_dropped_zero_variance, plan->stats.groups_zero_variance);
}

TEST(BatcherTest, DownsampleWithoutRecomputeKeepsFullGroupAdvantages) {
  std::vector<Group> groups = RandomGroups(1, 8, 5);
  for (int j = 0; j < 8; ++j) groups[0].rollouts[j].reward = j < 2 ? 1.0 : 0.0;
  BatchingConfig b;
  b.recompute_advantage = false;
  LossConfig loss;
  auto plan = PlanUpdate(groups, b, loss, 8, 3);
  ASSERT_TRUE(plan.ok());
  const SelectedGroup& sg = plan->steps[0].groups[0];
  ASSERT_EQ(sg.rollouts.size(), 4u);
  EXPECT_EQ(plan->stats.rollouts_dropped_balance, 4);
  for (size_t j = 0; j < 4; ++j) {
    EXPECT_DOUBLE_EQ(sg.advantages[j], sg.rollouts[j] < 2 ? 0.75 : -0.25);
  }
}

TEST(BatcherTest, PackBalancesMiniBatchesWithWholeGroups) {
  // Skewed groups: mostly 1-of-8 or 7-of-8 correct.
  std::vector<Group> groups = RandomGroups(32, 8, 6);
  for (int i = 0; i < 32; ++i) {
    const int positives = i % 2 == 0 ? 1 : 7;
    for (int j = 0; j < 8; ++j) groups[i].rollouts[j].reward = j < positives ? 1.0 : 0.0;
  }
  BatchingConfig b;
  b.reward_balance = "pack";
  b.mini_batches = 4;
  LossConfig loss;
  auto plan = PlanUpdate(groups, b, loss, 8, 8);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->steps.size(), 4u);
  for (const OptimizerStep& step : plan->steps) {
    EXPECT_EQ(step.groups.size(), 8u);
    int pos = 0, neg = 0;
    for (const SelectedGroup& sg : step.groups) {
      EXPECT_EQ(sg.rollouts.size(), 8u);
      for (double a : sg.advantages) (a > 0 ? pos : neg)++;
    }
    EXPECT_EQ(pos, neg);
  }
  EXPECT_EQ(plan->stats.max_step_imbalance, 0.0);
  // Plain shuffling of the same groups is usually unbalanced.
  b.reward_balance = "none";
  auto plain = PlanUpdate(groups, b, loss, 8, 8);
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->stats.max_step_imbalance, 0.0);
}

TEST(BatcherTest, QueryPreservedOffShufflesRolloutsAcrossGroups) {
  std::vector<Group> groups = RandomGroups(8, 8, 9, 0.5);
  BatchingConfig b;
  b.reward_balance = "none";
  b.query_preserved = false;
  b.mini_batches = 4;
  LossConfig loss;
  auto plan = PlanUpdate(groups, b, loss, 8, 10);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::map<int, int> rollouts_per_group;
  bool some_fragment = false;
  for (const OptimizerStep& step : plan->steps) {
    std::set<int> in_step;
    for (const SelectedGroup& sg : step.groups) {
      EXPECT_TRUE(in_step.insert(sg.group).second);  // Merged per group.
      rollouts_per_group[sg.group] += static_cast<int>(sg.rollouts.size());
      if (sg.rollouts.size() < groups[sg.group].rollouts.size()) some_fragment = true;
    }
  }
  EXPECT_TRUE(some_fragment);
  for (auto [g, n] : rollouts_per_group) EXPECT_EQ(n, 8) << g;  // Each rollout once per epoch.
  b.reward_balance = "pack";
  EXPECT_FALSE(PlanUpdate(groups, b, loss, 8, 10).ok());
}

TEST(BatcherTest, NormalizerPerEstimator) {
  LossConfig loss;
  EXPECT_EQ(StepNormalizer(loss, 3, 24, 100, 8), 100.0);
  loss.normalizer = "constant";
  EXPECT_EQ(StepNormalizer(loss, 3, 24, 100, 8), 192.0);
  loss.estimator = "dr_grpo";
  loss.normalizer = "tokens";
  EXPECT_EQ(StepNormalizer(loss, 3, 24, 100, 8), 192.0);
  loss.estimator = "dapo";
  EXPECT_EQ(StepNormalizer(loss, 3, 24, 100, 8), 100.0);
  loss.estimator = "grpo";
  EXPECT_EQ(StepNormalizer(loss, 3, 24, 100, 8), 3.0);
  loss.estimator = "gspo";
  EXPECT_EQ(StepNormalizer(loss, 3, 24, 100, 8), 3.0);
}

TEST(BatcherTest, ShardsPartitionTheStepByRows) {
  std::vector<Group> groups = RandomGroups(13, 8, 11);
  BatchingConfig b;
  b.reward_balance = "none";
  LossConfig loss;
  auto plan = PlanUpdate(groups, b, loss, 8, 12);
  ASSERT_TRUE(plan.ok());
  const OptimizerStep& step = plan->steps[0];
  for (int world : {1, 2, 3, 5}) {
    std::multiset<int> all;
    std::vector<int64_t> load;
    for (int rank = 0; rank < world; ++rank) {
      std::vector<SelectedGroup> shard = ShardStep(step, rank, world);
      int64_t t = 0;
      int last = -1;
      for (const SelectedGroup& sg : shard) {
        all.insert(sg.group);
        t += sg.tokens;
        // Step order is kept.
        int pos = 0;
        while (step.groups[pos].group != sg.group) ++pos;
        EXPECT_GT(pos, last);
        last = pos;
      }
      load.push_back(t);
    }
    EXPECT_EQ(all.size(), step.groups.size());
    EXPECT_EQ(std::set<int>(all.begin(), all.end()).size(), all.size());
    const int64_t max_group = 8 * 8;
    EXPECT_LE(
        *std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()),
        max_group);
  }
  // A copy without the informational token counts (as a plan codec may
  // deliver it to other ranks) is split identically.
  OptimizerStep stripped = step;
  for (SelectedGroup& sg : stripped.groups) sg.tokens = 0;
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<SelectedGroup> a = ShardStep(step, rank, 3), b = ShardStep(stripped, rank, 3);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].group, b[i].group);
  }
  EXPECT_TRUE(ShardStep(step, 3, 2).empty());
}

TEST(BatcherTest, SelectionForRankCoversEveryStepShard) {
  std::vector<Group> groups = RandomGroups(12, 8, 15);
  BatchingConfig b;
  b.mini_batches = 3;
  b.epochs = 2;
  LossConfig loss;
  auto plan = PlanUpdate(groups, b, loss, 8, 16);
  ASSERT_TRUE(plan.ok());
  for (int world : {1, 2}) {
    for (int rank = 0; rank < world; ++rank) {
      std::map<int, std::set<int>> selected;
      for (const SelectedGroup& sg : SelectionForRank(*plan, rank, world)) {
        EXPECT_TRUE(std::is_sorted(sg.rollouts.begin(), sg.rollouts.end()));
        EXPECT_EQ(sg.advantages.size(), sg.rollouts.size());
        selected[sg.group].insert(sg.rollouts.begin(), sg.rollouts.end());
      }
      for (const OptimizerStep& step : plan->steps) {
        for (const SelectedGroup& sg : ShardStep(step, rank, world)) {
          for (int r : sg.rollouts) EXPECT_EQ(selected[sg.group].count(r), 1u);
        }
      }
    }
  }
}

TEST(BatcherTest, PackWithTokenUnit) {
  std::vector<Group> groups = RandomGroups(24, 8, 17);
  BatchingConfig b;
  b.reward_balance = "pack";
  b.balance_unit = "tokens";
  b.mini_batches = 3;
  auto plan = PlanUpdate(groups, b, LossConfig{}, 8, 18);
  ASSERT_TRUE(plan.ok());
  b.reward_balance = "none";
  auto plain = PlanUpdate(groups, b, LossConfig{}, 8, 18);
  ASSERT_TRUE(plain.ok());
  // Packing cannot undo a global imbalance (here more negative tokens), only
  // spread it; it must not be worse than a plain shuffle.
  EXPECT_LE(plan->stats.max_step_imbalance, plain->stats.max_step_imbalance);
}

TEST(BatcherTest, RejectsMalformedInput) {
  std::vector<Group> groups = RandomGroups(2, 4, 13);
  BatchingConfig b;
  LossConfig loss;
  groups[1].rollouts.resize(1);
  EXPECT_FALSE(PlanUpdate(groups, b, loss, 8, 1).ok());
  groups = RandomGroups(2, 4, 13);
  groups[0].rollouts[2].tokens.clear();
  EXPECT_FALSE(PlanUpdate(groups, b, loss, 8, 1).ok());
  groups = RandomGroups(2, 4, 13);
  b.reward_balance = "other";
  EXPECT_FALSE(PlanUpdate(groups, b, loss, 8, 1).ok());
}

TEST(BatcherTest, EmptyWhenNothingSurvives) {
  std::vector<Group> groups = RandomGroups(3, 4, 14);
  for (auto& g : groups) {
    for (auto& r : g.rollouts) r.reward = 1.0;
  }
  auto plan = PlanUpdate(groups, BatchingConfig{}, LossConfig{}, 8, 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->steps.empty());
  EXPECT_EQ(plan->stats.groups_dropped_zero_variance, 3);
  EXPECT_EQ(plan->stats.accuracy, 1.0);
}

// ---- Oracle 8 for any reward distribution -------------------------------------------

// Checks one downsampled group: kept rollouts ascending and distinct, the
// advantages are those recomputed on the kept subset, none is zero, and
// n+ = n- >= 1.
void ExpectBalancedGroup(const Group& group, const SelectedGroup& sg, bool std_norm) {
  std::vector<double> sub;
  for (size_t j = 0; j < sg.rollouts.size(); ++j) {
    if (j > 0) {
      EXPECT_LT(sg.rollouts[j - 1], sg.rollouts[j]);
    }
    sub.push_back(group.rollouts[sg.rollouts[j]].reward);
  }
  EXPECT_EQ(sg.advantages, GroupAdvantages(sub, std_norm));
  int pos = 0, neg = 0;
  double sum = 0.0, scale = 0.0;
  for (double a : sg.advantages) {
    EXPECT_NE(a, 0.0);
    pos += a > 0;
    neg += a < 0;
    sum += a;
    scale += std::fabs(a);
  }
  EXPECT_GE(pos, 1);
  EXPECT_EQ(pos, neg);
  EXPECT_LE(std::fabs(sum), 1e-12 * scale);
}

// Thousands of groups, G = 2..16, four reward distributions: binary,
// continuous uniform, ties on a coarse grid (many equal values, rounding in
// the mean), and a continuous mixture with a point mass at 0 (the issue's
// (0.21, 1, 0.19, 0.19, 0, 0, 0, 0) kind). With downsample + recompute, every
// group that survives has n+ = n- on its recomputed advantages, so every
// step and the update do too; a group is dropped only if zero-variance.
TEST(BatcherTest, DownsampleGivesEqualSignsForAnyRewardDistribution) {
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int64_t groups_checked = 0, groups_total = 0;
  for (int distribution = 0; distribution < 4; ++distribution) {
    for (bool std_norm : {false, true}) {
      for (int batch = 0; batch < 40; ++batch) {
        const int n = 16;
        std::vector<Group> groups(n);
        for (int i = 0; i < n; ++i) {
          const int g = 2 + static_cast<int>(rng() % 15);  // 2..16
          groups[i].prompt = {1, 5};
          const double p = u(rng);
          for (int j = 0; j < g; ++j) {
            Rollout r;
            r.tokens.assign(1 + rng() % 8, 3);
            r.behaviour_logprobs.assign(r.tokens.size(), -1.0f);
            switch (distribution) {
              case 0:
                r.reward = u(rng) < p ? 1.0 : 0.0;
                break;
              case 1:
                r.reward = u(rng);
                break;
              case 2:
                r.reward = 0.1 * static_cast<double>(rng() % 4);
                break;  // {0, .1, .2, .3}
              default:
                r.reward = u(rng) < 0.5 ? 0.0 : u(rng) * u(rng);
                break;
            }
            groups[i].rollouts.push_back(r);
          }
        }
        groups[0].rollouts.clear();  // The issue's case, always included.
        for (double r : {0.21, 1.0, 0.19, 0.19, 0.0, 0.0, 0.0, 0.0}) {
          groups[0].rollouts.push_back(Rollout{{3, 4}, {-1.0f, -1.0f}, r});
        }
        BatchingConfig b;
        b.mini_batches = 3;
        LossConfig loss;
        loss.std_normalize = std_norm;
        auto plan = PlanUpdate(groups, b, loss, 8, static_cast<uint64_t>(batch));
        ASSERT_TRUE(plan.ok()) << plan.status();
        const BatchStats& st = plan->stats;
        groups_total += n;
        EXPECT_EQ(st.positive_rollouts, st.negative_rollouts);
        EXPECT_EQ(st.groups_dropped_balance, 0);  // Only zero-variance groups vanish.
        EXPECT_EQ(st.groups_used + st.groups_dropped_zero_variance, n);
        EXPECT_EQ(st.max_step_imbalance, 0.0);
        std::set<int> seen;
        for (const OptimizerStep& step : plan->steps) {
          int64_t pos = 0, neg = 0;
          for (const SelectedGroup& sg : step.groups) {
            ExpectBalancedGroup(groups[sg.group], sg, std_norm);
            for (double a : sg.advantages) (a > 0 ? pos : neg)++;
            EXPECT_TRUE(seen.insert(sg.group).second);
            ++groups_checked;
          }
          EXPECT_EQ(pos, neg);
        }
        EXPECT_TRUE(seen.count(0));
      }
    }
  }
  EXPECT_GT(groups_checked, 4000);
  std::printf("oracle 8: %lld of %lld groups kept and balanced\n",
              static_cast<long long>(groups_checked), static_cast<long long>(groups_total));
}

TEST(BatcherTest, DownsampleIssueExampleRecomputesToBalance) {
  std::vector<Group> groups(1);
  groups[0].prompt = {1, 5};
  for (double r : {0.21, 1.0, 0.19, 0.19, 0.0, 0.0, 0.0, 0.0}) {
    groups[0].rollouts.push_back(Rollout{{3}, {-1.0f}, r});
  }
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto plan = PlanUpdate(groups, BatchingConfig{}, LossConfig{}, 8, seed);
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->steps.size(), 1u);
    ExpectBalancedGroup(groups[0], plan->steps[0].groups[0], false);
  }
}

// The issue's packing example through the planner: per-group n+ - n- of
// (+4, -2, -2, 0, 0, 0) into 3 mini-batches; the greedy packing gave a worst
// mini-batch of 4, the optimum is 2.
TEST(BatcherTest, PackIssueExample) {
  std::vector<Group> groups = RandomGroups(6, 8, 21);
  const int positives[6] = {6, 3, 3, 4, 4, 4};
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 8; ++j) groups[i].rollouts[j].reward = j < positives[i] ? 1.0 : 0.0;
  }
  BatchingConfig b;
  b.reward_balance = "pack";
  b.mini_batches = 3;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto plan = PlanUpdate(groups, b, LossConfig{}, 8, seed);
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->steps.size(), 3u);
    int worst = 0;
    for (const OptimizerStep& step : plan->steps) {
      EXPECT_EQ(step.groups.size(), 2u);
      int d = 0;
      for (const SelectedGroup& sg : step.groups) {
        for (double a : sg.advantages) d += a > 0 ? 1 : -1;
      }
      worst = std::max(worst, std::abs(d));
    }
    EXPECT_EQ(worst, 2) << seed;
    auto again = PlanUpdate(groups, b, LossConfig{}, 8, seed);
    ASSERT_TRUE(again.ok());
    for (size_t s = 0; s < 3; ++s) {
      ASSERT_EQ(again->steps[s].groups.size(), plan->steps[s].groups.size());
      for (size_t k = 0; k < plan->steps[s].groups.size(); ++k) {
        EXPECT_EQ(again->steps[s].groups[k].group, plan->steps[s].groups[k].group);
      }
    }
  }
}

// Oracle 7 in the planner: with dynamic sampling off, a group of eight
// rewards of 0.1 stays with exactly zero advantages (no sign, no weight) even
// for the std-normalising estimators.
TEST(BatcherTest, UnrepresentableEqualRewardsAreZeroVariance) {
  std::vector<Group> groups = RandomGroups(2, 8, 22, 0.5);
  for (auto& r : groups[1].rollouts) r.reward = 0.1;
  for (const char* est : {"grpo", "gspo", "dfpo", "dr_grpo"}) {
    BatchingConfig b;
    b.reward_balance = "none";
    b.dynamic_sampling = false;
    LossConfig loss;
    loss.estimator = est;
    auto plan = PlanUpdate(groups, b, loss, 8, 1);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->stats.groups_zero_variance, 1) << est;
    int64_t signed_rows = 0;
    for (const SelectedGroup& sg : plan->steps[0].groups) {
      if (sg.group != 1) continue;
      for (double a : sg.advantages) EXPECT_EQ(a, 0.0) << est;
    }
    for (const SelectedGroup& sg : plan->steps[0].groups) {
      for (double a : sg.advantages) signed_rows += a != 0.0;
    }
    EXPECT_EQ(plan->stats.positive_rollouts + plan->stats.negative_rollouts, signed_rows);
  }
}

}  // namespace
}  // namespace rlvr::learner
