#include "actor/rollout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <set>

#include "common/policy/engine.h"
#include "common/policy/logprobs.h"
#include "common/policy/model.h"

namespace rlvr::actor {
namespace {

ModelConfig SmallModel() {
  ModelConfig c;
  c.d_model = 32;
  c.n_layers = 1;
  c.n_heads = 2;
  c.d_ff = 64;
  c.max_seq_len = 32;
  return c;
}

class RolloutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    tokenizer_ = MakeCharTokenizer();
    TaskConfig tc;
    tc.train_size = 50;
    tc.heldout_size = 10;
    auto task = MakeTask(tc, *tokenizer_, TaskOptions{});
    ASSERT_TRUE(task.ok()) << task.status();
    task_ = std::move(*task);
    auto model = policy::CreateTransformer(SmallModel(), tokenizer_->vocab_size(), 11);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *model;
  }

  rlvr::v1::WorkLease Lease(uint64_t id, int prompt, uint64_t seed, int group_size) {
    const Prompt& p = task_->train()[prompt];
    rlvr::v1::WorkLease lease;
    lease.set_lease_id(id);
    lease.set_prompt_id(p.id);
    auto tokens = EncodePrompt(*tokenizer_, p.text);
    lease.mutable_prompt_token_ids()->Assign(tokens->begin(), tokens->end());
    lease.set_group_size(group_size);
    lease.set_answer(p.answer);
    auto* s = lease.mutable_sampling();
    s->set_temperature(1.0);
    s->set_top_p(1.0);
    s->set_max_new_tokens(6);
    s->add_stop_token_ids(tokenizer_->eos_id());
    s->set_seed(seed);
    return lease;
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Task> task_;
  policy::Transformer model_{nullptr};
};

// RowSeed(s, j) = SplitMix64(SplitMix64(s) ^ j) (rollout.h): values computed
// independently (python3, 64-bit SplitMix64 whose first output from state 0
// is the published 0xe220a8397b1dcdaf), so a group stays reproducible from
// its lease seed across builds and machines; and distinct rows get distinct
// seeds.
TEST(RowSeedTest, PinnedAndDistinct) {
  EXPECT_EQ(RowSeed(0, 0), 0xa706dd2f4d197e6fULL);
  EXPECT_EQ(RowSeed(0, 1), 0x08b4fda8c892b50eULL);
  EXPECT_EQ(RowSeed(1, 0), 0x5e41ab087439611eULL);
  EXPECT_EQ(RowSeed(1000, 15), 0x5121a94762fe4c30ULL);
  EXPECT_EQ(RowSeed(~0ULL, 3), 0x02e9f42f99dc9983ULL);
  std::set<uint64_t> seen;
  for (uint64_t lease_seed : {0ull, 1ull, 2ull, 1000ull}) {
    for (int row = 0; row < 16; ++row) seen.insert(RowSeed(lease_seed, row));
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST_F(RolloutTest, ValidateLeaseRejectsBadLeases) {
  const int vocab = tokenizer_->vocab_size();
  auto good = Lease(1, 0, 1, 4);
  EXPECT_TRUE(ValidateLease(good, vocab, 32).ok());
  auto bad = good;
  bad.set_group_size(0);
  EXPECT_FALSE(ValidateLease(bad, vocab, 32).ok());
  bad = good;
  bad.add_prompt_token_ids(vocab);
  EXPECT_FALSE(ValidateLease(bad, vocab, 32).ok());
  bad = good;
  bad.clear_prompt_token_ids();
  EXPECT_FALSE(ValidateLease(bad, vocab, 32).ok());
  bad = good;
  bad.mutable_sampling()->set_temperature(0);
  EXPECT_FALSE(ValidateLease(bad, vocab, 32).ok());
  bad = good;
  bad.mutable_sampling()->set_max_new_tokens(0);
  EXPECT_FALSE(ValidateLease(bad, vocab, 32).ok());
  EXPECT_FALSE(ValidateLease(good, vocab, good.prompt_token_ids_size() + 2).ok());
}

TEST_F(RolloutTest, GroupsCarryBehaviourLogProbsRewardsAndVersion) {
  torch::NoGradGuard no_grad;
  auto a = Lease(7, 0, 100, 4);
  auto b = Lease(8, 1, 200, 3);
  auto result = GenerateGroups(model_, 5, *tokenizer_, *task_, {&a, &b});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->groups.size(), 2u);
  EXPECT_EQ(result->groups[0].lease_id(), 7u);
  EXPECT_EQ(result->groups[1].lease_id(), 8u);
  EXPECT_EQ(result->groups[0].completions_size(), 4);
  EXPECT_EQ(result->groups[1].completions_size(), 3);
  EXPECT_EQ(result->completions, 7);
  EXPECT_GT(result->generate_seconds, 0);
  EXPECT_LE(result->generate_seconds, result->total_seconds);

  std::vector<std::vector<int>> prompts, completions;
  const rlvr::v1::WorkLease* leases[] = {&a, &b};
  int64_t tokens = 0;
  for (int g = 0; g < 2; ++g) {
    const auto& group = result->groups[g];
    EXPECT_EQ(group.policy_version(), 5u);
    EXPECT_EQ(group.prompt_id(), leases[g]->prompt_id());
    EXPECT_GE(group.generation_seconds(), 0);
    for (const auto& c : group.completions()) {
      ASSERT_EQ(c.token_ids_size(), c.behaviour_logprobs_size());
      ASSERT_GE(c.token_ids_size(), 1);
      ASSERT_LE(c.token_ids_size(), 6);
      std::vector<int> toks(c.token_ids().begin(), c.token_ids().end());
      tokens += toks.size();
      const bool stopped = toks.back() == tokenizer_->eos_id();
      EXPECT_EQ(c.finish_reason(),
                stopped ? rlvr::v1::FINISH_REASON_STOP : rlvr::v1::FINISH_REASON_LENGTH);
      if (!stopped) {
        EXPECT_EQ(toks.size(), 6u);
      }
      const Verdict v = task_->Verify(leases[g]->answer(), CompletionText(*tokenizer_, toks));
      EXPECT_EQ(c.reward(), static_cast<float>(v.reward));
      EXPECT_EQ(c.verifier_reason(), v.reason);
      prompts.emplace_back(leases[g]->prompt_token_ids().begin(),
                           leases[g]->prompt_token_ids().end());
      completions.push_back(toks);
    }
  }
  EXPECT_EQ(result->tokens, tokens);

  // Behaviour log-probs equal the training forward's.
  std::vector<const std::vector<int>*> pp, cp;
  for (size_t i = 0; i < prompts.size(); ++i) {
    pp.push_back(&prompts[i]);
    cp.push_back(&completions[i]);
  }
  auto lp = policy::ComputeCompletionLogProbs(model_, pp, cp, false);
  int row = 0;
  for (const auto& group : result->groups) {
    for (const auto& c : group.completions()) {
      for (int t = 0; t < c.behaviour_logprobs_size(); ++t) {
        EXPECT_NEAR(c.behaviour_logprobs(t), lp.logprobs[row][t].item<float>(), 1e-5)
            << "row " << row << " token " << t;
      }
      ++row;
    }
  }
}

TEST_F(RolloutTest, GroupsDoNotDependOnBatchComposition) {
  torch::NoGradGuard no_grad;
  auto a = Lease(1, 0, 42, 4);
  auto b = Lease(2, 3, 43, 4);
  auto c = Lease(3, 5, 44, 2);
  auto alone = GenerateGroups(model_, 1, *tokenizer_, *task_, {&a});
  auto batched = GenerateGroups(model_, 1, *tokenizer_, *task_, {&c, &b, &a});
  ASSERT_TRUE(alone.ok() && batched.ok());
  const auto& x = alone->groups[0];
  const auto& y = batched->groups[2];
  ASSERT_EQ(x.completions_size(), y.completions_size());
  for (int i = 0; i < x.completions_size(); ++i) {
    EXPECT_EQ(
        std::vector<int>(x.completions(i).token_ids().begin(), x.completions(i).token_ids().end()),
        std::vector<int>(y.completions(i).token_ids().begin(), y.completions(i).token_ids().end()));
  }
}

TEST_F(RolloutTest, DifferentSamplingParamsInOneBatch) {
  torch::NoGradGuard no_grad;
  auto a = Lease(1, 0, 42, 2);
  auto b = Lease(2, 1, 43, 2);
  b.mutable_sampling()->set_max_new_tokens(2);
  auto result = GenerateGroups(model_, 1, *tokenizer_, *task_, {&a, &b});
  ASSERT_TRUE(result.ok()) << result.status();
  for (const auto& c : result->groups[1].completions()) EXPECT_LE(c.token_ids_size(), 2);
}

// Groups built in recycled groups (a pool holding groups with more
// completions, longer ids, unknown fields and every field set) are exactly
// the groups built from scratch: nothing of the old contents survives.
TEST_F(RolloutTest, GroupsBuiltInRecycledGroupsEqualFreshOnes) {
  torch::NoGradGuard no_grad;
  auto a = Lease(1, 0, 42, 4);
  auto b = Lease(2, 3, 43, 2);
  GroupPool pool(8);
  rlvr::v1::ActorMessage old;
  for (int k = 0; k < 2; ++k) {
    rlvr::v1::RolloutGroup* g = old.mutable_group_batch()->add_groups();
    g->set_lease_id(99);
    g->set_prompt_id("stale");
    g->set_policy_version(77);
    g->set_generation_seconds(9.5);
    for (int i = 0; i < 6; ++i) {
      rlvr::v1::Completion* c = g->add_completions();
      for (int t = 0; t < 40; ++t) {
        c->add_token_ids(1000 + t);
        c->add_behaviour_logprobs(-3.0f);
      }
      c->set_reward(1.0f);
      c->set_verifier_reason("stale reason");
      c->set_finish_reason(rlvr::v1::FINISH_REASON_LENGTH);
      c->GetReflection()->MutableUnknownFields(c)->AddVarint(20, 1);
    }
  }
  pool.Give(std::move(old));
  ASSERT_EQ(pool.size(), 2u);
  auto fresh = GenerateGroups(model_, 3, *tokenizer_, *task_, {&a, &b});
  auto pooled = GenerateGroups(model_, 3, *tokenizer_, *task_, {&a, &b}, &pool);
  ASSERT_TRUE(fresh.ok() && pooled.ok());
  EXPECT_EQ(pool.size(), 0u);
  ASSERT_EQ(fresh->groups.size(), pooled->groups.size());
  for (size_t i = 0; i < fresh->groups.size(); ++i) {
    rlvr::v1::RolloutGroup x = fresh->groups[i];
    rlvr::v1::RolloutGroup y = pooled->groups[i];
    // The batch's wall time differs between the two calls.
    x.clear_generation_seconds();
    y.clear_generation_seconds();
    EXPECT_EQ(x.SerializeAsString(), y.SerializeAsString()) << "group " << i;
  }
}

// The continuous-batching engine builds the same groups as static batching
// from the same leases (tokens, rewards, reasons, finish reasons exactly;
// behaviour log-probs within float rounding), whatever the sampling
// parameters and however few slots it has.
TEST_F(RolloutTest, EngineGroupsEqualStaticGroups) {
  torch::NoGradGuard no_grad;
  std::vector<rlvr::v1::WorkLease> leases = {Lease(1, 0, 42, 4), Lease(2, 3, 43, 3),
                                             Lease(3, 5, 44, 2), Lease(4, 7, 45, 4)};
  leases[1].mutable_sampling()->set_max_new_tokens(2);
  leases[2].mutable_sampling()->set_top_k(5);
  leases[3].mutable_sampling()->set_temperature(0.7);
  std::vector<const rlvr::v1::WorkLease*> ptrs;
  for (const auto& l : leases) ptrs.push_back(&l);
  auto want = GenerateGroups(model_, 9, *tokenizer_, *task_, ptrs);
  ASSERT_TRUE(want.ok()) << want.status();
  for (int rows : {1, 3, 16}) {
    policy::EngineOptions o;
    o.max_rows = rows;
    o.kv_cache_tokens = 512;
    o.block_tokens = 4;
    std::vector<policy::EngineGroup> groups;
    for (const auto& l : leases) groups.push_back(EngineGroupFromLease(l));
    auto results = policy::GenerateContinuous(*model_, o, groups);
    ASSERT_TRUE(results.ok()) << results.status();
    for (size_t i = 0; i < leases.size(); ++i) {
      rlvr::v1::RolloutGroup got;
      GroupTally tally;
      BuildGroup(leases[i], 9, (*results)[i].samples, *tokenizer_, *task_, 0.5, &got, &tally);
      const rlvr::v1::RolloutGroup& w = want->groups[i];
      EXPECT_EQ(got.lease_id(), w.lease_id());
      EXPECT_EQ(got.prompt_id(), w.prompt_id());
      EXPECT_EQ(got.policy_version(), 9u);
      EXPECT_EQ(got.generation_seconds(), 0.5);
      ASSERT_EQ(got.completions_size(), w.completions_size());
      for (int c = 0; c < w.completions_size(); ++c) {
        const auto& a = w.completions(c);
        const auto& b = got.completions(c);
        EXPECT_EQ(std::vector<int>(a.token_ids().begin(), a.token_ids().end()),
                  std::vector<int>(b.token_ids().begin(), b.token_ids().end()))
            << "rows " << rows << " lease " << i << " completion " << c;
        EXPECT_EQ(a.reward(), b.reward());
        EXPECT_EQ(a.verifier_reason(), b.verifier_reason());
        EXPECT_EQ(a.finish_reason(), b.finish_reason());
        ASSERT_EQ(a.behaviour_logprobs_size(), b.behaviour_logprobs_size());
        for (int t = 0; t < a.behaviour_logprobs_size(); ++t) {
          EXPECT_NEAR(a.behaviour_logprobs(t), b.behaviour_logprobs(t), 1e-5);
        }
      }
    }
  }
}

}  // namespace
}  // namespace rlvr::actor
