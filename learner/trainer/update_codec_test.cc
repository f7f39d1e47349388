#include "learner/trainer/update_codec.h"

#include <gtest/gtest.h>

namespace rlvr::learner::internal {
namespace {

UpdateMessage Sample() {
  UpdateMessage m;
  m.stop = true;
  m.state = TrainerState{{7, 8, 15}, std::string("weights\0blob", 12), "ref", "adam"};
  Group g;
  g.prompt_id = "q1";
  g.prompt_index = 3;
  g.lease_id = 99;
  g.policy_version = 6;
  g.prompt = {1, 20, 21};
  g.rollouts = {{{5, 6}, {-0.5f, -1.5f}, 1.0}, {{7}, {-2.0f}, 0.0}};
  m.groups = {g, g};
  OptimizerStep s;
  s.normalizer = 3.0;
  s.tokens = 3;
  s.rollouts = 2;
  s.groups = {{1, {0, 1}, {0.5, -0.5}}};
  m.plan.steps = {s, s};
  m.plan.stats.groups_in = 2;
  m.plan.stats.reward_mean = 0.5;
  m.plan.stats.positive_rollouts = 1;
  return m;
}

TEST(UpdateCodec, RoundTrip) {
  const UpdateMessage m = Sample();
  auto back = DecodeUpdateMessage(EncodeUpdateMessage(m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->stop);
  ASSERT_TRUE(back->state.has_value());
  EXPECT_EQ(back->state->counters.optimizer_steps, 15u);
  EXPECT_EQ(back->state->weights, m.state->weights);
  ASSERT_EQ(back->groups.size(), 2u);
  EXPECT_EQ(back->groups[1].prompt_id, "q1");
  EXPECT_EQ(back->groups[1].lease_id, 99u);
  EXPECT_EQ(back->groups[1].prompt, m.groups[1].prompt);
  EXPECT_EQ(back->groups[0].rollouts[0].behaviour_logprobs,
            m.groups[0].rollouts[0].behaviour_logprobs);
  EXPECT_EQ(back->groups[0].rollouts[1].reward, 0.0);
  ASSERT_EQ(back->plan.steps.size(), 2u);
  EXPECT_EQ(back->plan.steps[1].groups[0].advantages, (std::vector<double>{0.5, -0.5}));
  EXPECT_EQ(back->plan.stats.groups_in, 2);
  EXPECT_EQ(back->plan.stats.reward_mean, 0.5);
}

TEST(UpdateCodec, RejectsEveryTruncationAndBadIndices) {
  const std::string bytes = EncodeUpdateMessage(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeUpdateMessage(bytes.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeUpdateMessage(bytes + "x").ok());
  UpdateMessage m = Sample();
  m.plan.steps[0].groups[0].group = 5;
  EXPECT_FALSE(DecodeUpdateMessage(EncodeUpdateMessage(m)).ok());
  m = Sample();
  m.plan.steps[0].groups[0].rollouts = {0, 2};
  EXPECT_FALSE(DecodeUpdateMessage(EncodeUpdateMessage(m)).ok());
  auto c = DecodeCounters(EncodeCounters({1, 2, 3}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->optimizer_steps, 3u);
  EXPECT_FALSE(DecodeCounters("RLVC").ok());
  // Format 1's record (checkpoints from before format 2): magic, three u64.
  std::string legacy = "RLVC";
  for (uint64_t v : {uint64_t{4}, uint64_t{5}, uint64_t{9}}) {
    legacy.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  auto old = DecodeCounters(legacy);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->step, 4u);
  EXPECT_EQ(old->version, 5u);
  EXPECT_EQ(old->optimizer_steps, 9u);
  EXPECT_FALSE(DecodeCounters(legacy.substr(0, 27)).ok());
}

}  // namespace
}  // namespace rlvr::learner::internal
