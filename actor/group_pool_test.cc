#include "actor/group_pool.h"

#include <gtest/gtest.h>

namespace rlvr::actor {
namespace {

rlvr::v1::RolloutGroup Filled(uint64_t lease, int completions, int tokens) {
  rlvr::v1::RolloutGroup g;
  g.set_lease_id(lease);
  g.set_prompt_id("p");
  for (int i = 0; i < completions; ++i) {
    rlvr::v1::Completion* c = g.add_completions();
    for (int t = 0; t < tokens; ++t) {
      c->add_token_ids(t);
      c->add_behaviour_logprobs(-1.0f);
    }
    c->set_verifier_reason("correct");
  }
  return g;
}

TEST(GroupPoolTest, TakeGivesEmptyGroupsThatKeepTheirMemory) {
  GroupPool pool(4);
  rlvr::v1::ActorMessage sent;
  *sent.mutable_group_batch()->add_groups() = Filled(1, 3, 100);
  *sent.mutable_group_batch()->add_groups() = Filled(2, 3, 100);
  const int* ids = sent.group_batch().groups(1).completions(0).token_ids().data();
  pool.Give(std::move(sent));
  EXPECT_EQ(pool.size(), 2u);

  std::vector<rlvr::v1::RolloutGroup> taken = pool.Take(3);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(pool.size(), 0u);
  for (const rlvr::v1::RolloutGroup& g : taken) {
    EXPECT_EQ(g.ByteSizeLong(), 0u) << "a taken group must be empty";
  }
  // The last group given is taken first; its first completion comes back
  // from add_completions() with the same token buffer, cleared.
  rlvr::v1::Completion* c = taken[0].add_completions();
  EXPECT_EQ(c->token_ids_size(), 0);
  EXPECT_GE(c->token_ids().Capacity(), 100);
  for (int t = 0; t < 50; ++t) c->add_token_ids(t);
  EXPECT_EQ(c->token_ids().data(), ids);
}

TEST(GroupPoolTest, KeepsAtMostItsBoundAndTakesSingleGroups) {
  GroupPool pool(2);
  for (int k = 0; k < 3; ++k) {
    rlvr::v1::ActorMessage single;
    *single.mutable_group() = Filled(k, 1, 4);
    pool.Give(std::move(single));
  }
  EXPECT_EQ(pool.size(), 2u);
  rlvr::v1::ActorMessage other;
  other.mutable_return_leases()->add_lease_ids(5);
  pool.Give(std::move(other));
  EXPECT_EQ(pool.size(), 2u);
}

}  // namespace
}  // namespace rlvr::actor
