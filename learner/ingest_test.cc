#include "learner/ingest.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "learner/lease_testing.h"
#include "learner/rollout_decoder.h"

namespace rlvr::learner {
namespace {

using rlvr::v1::Ack;
using rlvr::v1::RolloutGroup;
using rlvr::v1::WorkLease;

using testing::MakePrompts;

IngestOptions Options(int lag, int buffer, int per_update) {
  return testing::TinyJobOptions(lag, buffer, per_update);
}

RolloutGroup ValidGroup(const WorkLease& lease, uint64_t version, double r0 = 1.0,
                        double r1 = 0.0) {
  RolloutGroup g;
  g.set_lease_id(lease.lease_id());
  g.set_prompt_id(lease.prompt_id());
  g.set_policy_version(version);
  for (double r : {r0, r1}) {
    auto* c = g.add_completions();
    c->add_token_ids(4);
    c->add_token_ids(2);
    c->add_behaviour_logprobs(-0.5f);
    c->add_behaviour_logprobs(-0.1f);
    c->set_reward(static_cast<float>(r));
  }
  return g;
}

struct Fixture {
  explicit Fixture(IngestOptions o, int prompts = 6)
      : metrics(std::make_shared<prometheus::Registry>()),
        ingest(std::move(o), MakePrompts(prompts), &metrics) {}
  LearnerMetrics metrics;
  Ingest ingest;
};

TEST(IngestTest, NoLeasesBeforeFirstPublishThenCreditsBoundGrants) {
  Fixture f(Options(1, 4, 2));
  uint64_t s = *f.ingest.OpenSession(3);
  EXPECT_TRUE(f.ingest.Grant(s).empty());
  f.ingest.Publish(1);
  auto leases = f.ingest.Grant(s);
  ASSERT_EQ(leases.size(), 3u);  // Session capacity.
  const WorkLease& l = leases[0];
  EXPECT_EQ(l.group_size(), 2);
  EXPECT_EQ(l.prompt_token_ids(0), 1);
  EXPECT_EQ(l.sampling().stop_token_ids(0), 2);
  EXPECT_EQ(l.sampling().max_new_tokens(), 4);
  EXPECT_EQ(l.answer(), "7");
  EXPECT_GT(l.deadline_unix_ms(), 0);
  uint64_t s2 = *f.ingest.OpenSession(3);
  EXPECT_EQ(f.ingest.Grant(s2).size(), 1u);  // Buffer credits: 4 in all.
  EXPECT_TRUE(f.ingest.Grant(s2).empty());
  EXPECT_EQ(f.metrics.leases_granted->Value(), 4);
  EXPECT_EQ(f.metrics.leases_outstanding->Value(), 4);
}

// RecycleGroups: groups decoded after the recycled ones were handed back
// are written into their memory, and nothing of their old contents
// survives. Submitted as the session service does: each round's groups in
// one RolloutBatch, decoded into slots reused across messages. An accepted
// group's slot takes a recycled Group, which the next message fills.
TEST(IngestTest, RecycledGroupsAreReusedWithNothingLeftOver) {
  Fixture f(Options(1, 4, 2), 6);
  f.ingest.Publish(1);
  uint64_t s = *f.ingest.OpenSession(2);
  std::vector<ReceivedGroup> slots;
  auto submit_round = [&](uint64_t version, int tokens, float reward) {
    rlvr::v1::ActorMessage m;
    std::map<uint64_t, WorkLease> by_lease;
    for (const WorkLease& l : f.ingest.Grant(s)) {
      by_lease[l.lease_id()] = l;
      RolloutGroup* g = m.mutable_group_batch()->add_groups();
      g->set_lease_id(l.lease_id());
      g->set_prompt_id(l.prompt_id());
      g->set_policy_version(version);
      for (int i = 0; i < 2; ++i) {
        auto* c = g->add_completions();
        for (int t = 0; t + 1 < tokens; ++t) {
          c->add_token_ids(5 + t);
          c->add_behaviour_logprobs(-0.25f * static_cast<float>(t + 1));
        }
        c->add_token_ids(2);
        c->add_behaviour_logprobs(-0.5f);
        c->set_reward(i == 0 ? reward : 0.0f);
      }
    }
    size_t count = 0;
    EXPECT_EQ(DecodeRolloutMessage(m.SerializeAsString(), {2, 8}, &slots, &count),
              DecodeOutcome::kBatch);
    google::protobuf::RepeatedPtrField<Ack> acks;
    f.ingest.SubmitReceived(s, &slots, count, &acks);
    for (const Ack& ack : acks) EXPECT_TRUE(ack.accepted()) << ack.detail();
    return by_lease;
  };

  // Rounds 1 and 2: four-token completions. Round 1's groups come back to
  // the slots when round 2's are accepted.
  for (uint64_t version : {1, 2}) {
    submit_round(version, 4, 1.0f);
    auto update = f.ingest.WaitForUpdate(nullptr);
    ASSERT_TRUE(update.ok());
    ASSERT_EQ(update->size(), 2u);
    f.ingest.CompleteUpdate(*update);
    f.ingest.RecycleGroups(*std::move(update));
    f.ingest.Publish(version + 1);
  }

  // Round 3: one-token completions, other prompts, version and rewards.
  std::map<uint64_t, WorkLease> by_lease = submit_round(3, 1, 0.5f);
  auto third = f.ingest.WaitForUpdate(nullptr);
  ASSERT_TRUE(third.ok());
  ASSERT_EQ(third->size(), 2u);
  int reused = 0;
  for (const TrainingGroup& tg : *third) {
    const Group& g = tg.group;
    ASSERT_TRUE(by_lease.count(g.lease_id));
    const WorkLease& l = by_lease[g.lease_id];
    EXPECT_EQ(g.prompt_id, l.prompt_id());
    EXPECT_EQ(g.prompt, std::vector<int>(l.prompt_token_ids().begin(), l.prompt_token_ids().end()));
    EXPECT_EQ(g.policy_version, 3u);
    ASSERT_EQ(g.rollouts.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(g.rollouts[i].tokens, std::vector<int>({2}));
      EXPECT_EQ(g.rollouts[i].behaviour_logprobs, std::vector<float>({-0.5f}));
      EXPECT_EQ(g.rollouts[i].reward, i == 0 ? 0.5 : 0.0);
      // A fresh vector holding one id has room for one; a recycled one keeps
      // the four of round 1.
      reused += g.rollouts[i].tokens.capacity() >= 4 ? 1 : 0;
    }
  }
  EXPECT_EQ(reused, 4) << "every rollout should have been written into a recycled buffer";
}

TEST(IngestTest, MaxSessionsAndCapacityChecked) {
  Fixture f(Options(1, 4, 2));
  EXPECT_EQ(f.ingest.OpenSession(0).status().code(), absl::StatusCode::kInvalidArgument);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(f.ingest.OpenSession(1).ok());
  EXPECT_EQ(f.ingest.OpenSession(1).status().code(), absl::StatusCode::kResourceExhausted);
}

// Runs the asynchronous loop for `updates` updates with one session and
// returns prompt_index -> times trained, per epoch.
TEST(IngestTest, AsyncEveryPromptTrainedOncePerEpochDespiteLostLeases) {
  Fixture f(Options(1, 4, 2), 6);
  f.ingest.Publish(1);
  uint64_t s = *f.ingest.OpenSession(2);
  std::map<uint64_t, std::multiset<uint64_t>> trained;  // epoch -> prompt indices
  uint64_t version = 1;
  int round = 0;
  while (trained[0].size() + trained[1].size() < 12) {
    auto leases = f.ingest.Grant(s);
    for (const WorkLease& l : leases) {
      ++round;
      if (round % 3 == 0) {
        f.ingest.Return(s, {l.lease_id()});  // Lost: must come back.
        continue;
      }
      if (round % 5 == 0) {
        // Rejected group: the prompt must be re-queued too.
        RolloutGroup bad = ValidGroup(l, version);
        bad.mutable_completions(0)->set_reward(2.0f);
        EXPECT_FALSE(f.ingest.Submit(s, bad, 100).accepted());
        continue;
      }
      Ack ack = f.ingest.Submit(s, ValidGroup(l, version), 100);
      ASSERT_TRUE(ack.accepted()) << ack.detail();
    }
    if (f.ingest.Snapshot().buffer_groups() >= 2) {
      auto groups = f.ingest.WaitForUpdate(nullptr);
      ASSERT_TRUE(groups.ok());
      ASSERT_EQ(groups->size(), 2u);
      for (const auto& g : *groups) trained[g.slot.epoch].insert(g.group.prompt_index);
      f.ingest.CompleteUpdate(*groups);
      f.ingest.Publish(++version);
    }
    ASSERT_LT(round, 200);
  }
  ASSERT_EQ(trained[0].size(), 6u);
  EXPECT_EQ(std::set<uint64_t>(trained[0].begin(), trained[0].end()).size(), 6u);
  EXPECT_EQ(std::set<uint64_t>(trained[1].begin(), trained[1].end()).size(), trained[1].size());
  EXPECT_GT(f.metrics.leases_reissued->Value(), 0);
  EXPECT_GT(f.metrics.Rejected(rlvr::v1::REJECT_REASON_REWARD_OUT_OF_RANGE).Value(), 0);
}

TEST(IngestTest, ExpiredLeaseIsReissuedAndLateGroupRejected) {
  Fixture f(Options(1, 4, 2));
  f.ingest.Publish(1);
  uint64_t s = *f.ingest.OpenSession(1);
  WorkLease first = f.ingest.Grant(s).at(0);
  f.ingest.ExpireLeases(absl::Now() + absl::Hours(2));
  EXPECT_EQ(f.metrics.leases_reissued->Value(), 1);
  Ack late = f.ingest.Submit(s, ValidGroup(first, 1), 100);
  EXPECT_FALSE(late.accepted());
  EXPECT_EQ(late.reason(), rlvr::v1::REJECT_REASON_EXPIRED_LEASE);
  WorkLease again = f.ingest.Grant(s).at(0);
  EXPECT_EQ(again.prompt_id(), first.prompt_id());
  EXPECT_NE(again.lease_id(), first.lease_id());
  EXPECT_EQ(again.sampling().seed(), first.sampling().seed());
}

TEST(IngestTest, ClosedSessionReturnsItsLeasesAndTheyBecomeUnknown) {
  Fixture f(Options(1, 4, 2));
  f.ingest.Publish(1);
  uint64_t a = *f.ingest.OpenSession(2);
  auto leases = f.ingest.Grant(a);
  ASSERT_EQ(leases.size(), 2u);
  f.ingest.CloseSession(a);
  EXPECT_EQ(f.metrics.leases_reissued->Value(), 2);
  uint64_t b = *f.ingest.OpenSession(4);
  auto again = f.ingest.Grant(b);
  ASSERT_GE(again.size(), 2u);
  EXPECT_EQ(again[0].prompt_id(), leases[0].prompt_id());
  EXPECT_EQ(again[1].prompt_id(), leases[1].prompt_id());
  Ack ack = f.ingest.Submit(b, ValidGroup(leases[0], 1), 100);
  EXPECT_EQ(ack.reason(), rlvr::v1::REJECT_REASON_UNKNOWN_LEASE);
}

TEST(IngestTest, DuplicateStaleAndOversize) {
  Fixture f(Options(1, 6, 2));
  f.ingest.Publish(3);
  uint64_t s = *f.ingest.OpenSession(4);
  auto leases = f.ingest.Grant(s);
  ASSERT_EQ(leases.size(), 4u);
  EXPECT_TRUE(f.ingest.Submit(s, ValidGroup(leases[0], 3), 100).accepted());
  EXPECT_EQ(f.ingest.Submit(s, ValidGroup(leases[0], 3), 100).reason(),
            rlvr::v1::REJECT_REASON_DUPLICATE);
  EXPECT_EQ(f.ingest.Submit(s, ValidGroup(leases[1], 1), 100).reason(),
            rlvr::v1::REJECT_REASON_STALE_VERSION);  // 1 < 3 - lag.
  EXPECT_EQ(f.ingest.Submit(s, ValidGroup(leases[2], 4), 100).reason(),
            rlvr::v1::REJECT_REASON_STALE_VERSION);  // Never published.
  EXPECT_EQ(f.ingest.Submit(s, ValidGroup(leases[3], 3), 2 << 20).reason(),
            rlvr::v1::REJECT_REASON_OVERSIZE);
  EXPECT_EQ(f.metrics.Rejected(rlvr::v1::REJECT_REASON_STALE_VERSION).Value(), 2);
  EXPECT_EQ(f.metrics.leases_reissued->Value(), 3);
  EXPECT_EQ(f.ingest.Snapshot().groups_accepted(), 1u);
}

TEST(IngestTest, AsyncDropsGroupsThatBecameStaleInTheBuffer) {
  Fixture f(Options(1, 6, 2));
  f.ingest.Publish(1);
  uint64_t s = *f.ingest.OpenSession(2);
  auto leases = f.ingest.Grant(s);
  for (const auto& l : leases) ASSERT_TRUE(f.ingest.Submit(s, ValidGroup(l, 1), 100).accepted());
  f.ingest.Publish(2);
  f.ingest.Publish(3);  // Version 1 is now older than 3 - lag.
  std::atomic<int> polls{0};
  auto groups = f.ingest.WaitForUpdate([&] { return ++polls > 2; });
  EXPECT_EQ(groups.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(f.metrics.dropped_stale->Value(), 2);
  // The prompts come back.
  auto again = f.ingest.Grant(s);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].prompt_id(), leases[0].prompt_id());
  EXPECT_EQ(again[0].min_policy_version(), 2u);
}

TEST(IngestTest, SyncModeTrainsTheNextWindowInCursorOrder) {
  Fixture f(Options(0, 4, 3), 7);
  f.ingest.Publish(1);
  uint64_t a = *f.ingest.OpenSession(2);
  uint64_t b = *f.ingest.OpenSession(2);
  auto la = f.ingest.Grant(a);
  auto lb = f.ingest.Grant(b);
  ASSERT_EQ(la.size(), 2u);
  ASSERT_EQ(lb.size(), 1u);  // The window holds 3 prompts.
  EXPECT_TRUE(f.ingest.Grant(b).empty());
  // Submitted out of order; one with a stale version first.
  EXPECT_EQ(f.ingest.Submit(b, ValidGroup(lb[0], 0), 100).reason(),
            rlvr::v1::REJECT_REASON_STALE_VERSION);
  auto lb2 = f.ingest.Grant(b);
  ASSERT_EQ(lb2.size(), 1u);
  EXPECT_EQ(lb2[0].prompt_id(), lb[0].prompt_id());
  EXPECT_TRUE(f.ingest.Submit(b, ValidGroup(lb2[0], 1), 100).accepted());
  EXPECT_TRUE(f.ingest.Submit(a, ValidGroup(la[1], 1), 100).accepted());
  EXPECT_TRUE(f.ingest.Submit(a, ValidGroup(la[0], 1), 100).accepted());
  EXPECT_TRUE(f.ingest.Grant(a).empty());
  auto groups = f.ingest.WaitForUpdate(nullptr);
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 3u);
  EXPECT_EQ((*groups)[0].slot.position, 0u);
  EXPECT_EQ((*groups)[1].slot.position, 1u);
  EXPECT_EQ((*groups)[2].slot.position, 2u);
  EXPECT_EQ((*groups)[0].group.prompt_id, la[0].prompt_id());
  f.ingest.CompleteUpdate(*groups);
  EXPECT_TRUE(f.ingest.Grant(a).empty());  // Not before the version is published.
  f.ingest.Publish(2);
  auto next = f.ingest.Grant(a);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].min_policy_version(), 2u);
}

TEST(IngestTest, StateRoundTripReissuesOutstandingWork) {
  Fixture f(Options(0, 4, 2), 5);
  f.ingest.Publish(1);
  uint64_t s = *f.ingest.OpenSession(2);
  auto leases = f.ingest.Grant(s);
  for (const auto& l : leases) ASSERT_TRUE(f.ingest.Submit(s, ValidGroup(l, 1), 100).accepted());
  auto groups = *f.ingest.WaitForUpdate(nullptr);
  f.ingest.CompleteUpdate(groups);
  f.ingest.Publish(2);
  auto pending = f.ingest.Grant(s);  // Window 2, outstanding at save time.
  ASSERT_EQ(pending.size(), 2u);
  const std::string state = f.ingest.SerializeState();

  Fixture g(Options(0, 4, 2), 5);
  ASSERT_TRUE(g.ingest.RestoreState(state).ok());
  g.ingest.Publish(2);
  uint64_t t = *g.ingest.OpenSession(2);
  auto again = g.ingest.Grant(t);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].prompt_id(), pending[0].prompt_id());
  EXPECT_EQ(again[1].prompt_id(), pending[1].prompt_id());
  EXPECT_GT(again[0].lease_id(), pending[1].lease_id());  // Ids never reused.
  EXPECT_FALSE(g.ingest.RestoreState("{").ok());
}

TEST(IngestTest, PerSessionRateLimitMetersOnlyGroupsForNoLiveLease) {
  IngestOptions o = Options(1, 4, 2);
  o.max_groups_per_s = 1.0;  // Burst of one, then one per second.
  Fixture f(o);
  f.ingest.Publish(1);
  uint64_t s = *f.ingest.OpenSession(3);
  uint64_t other = *f.ingest.OpenSession(1);
  auto leases = f.ingest.Grant(s);
  ASSERT_EQ(leases.size(), 3u);
  // Groups for the session's own live leases are paced by the leases: all
  // three at once are accepted, far over one per second.
  for (const auto& lease : leases) {
    EXPECT_TRUE(f.ingest.Submit(s, ValidGroup(lease, 1), 100).accepted());
  }
  EXPECT_EQ(f.metrics.Rejected(rlvr::v1::REJECT_REASON_RATE_LIMITED).Value(), 0);
  // Groups that answer no live lease are metered: the first of the burst
  // gets its own answer, the next is rate-limited.
  Ack duplicate = f.ingest.Submit(s, ValidGroup(leases[0], 1), 100);
  EXPECT_EQ(duplicate.reason(), rlvr::v1::REJECT_REASON_DUPLICATE);
  Ack limited = f.ingest.Submit(s, ValidGroup(leases[1], 1), 100);
  EXPECT_FALSE(limited.accepted());
  EXPECT_EQ(limited.reason(), rlvr::v1::REJECT_REASON_RATE_LIMITED);
  EXPECT_NE(limited.detail().find("groups/s"), std::string::npos);
  EXPECT_EQ(f.metrics.Rejected(rlvr::v1::REJECT_REASON_RATE_LIMITED).Value(), 1);
  // A lease of another session is no live lease of this one: metered too,
  // and refused without touching the other session's lease.
  auto theirs = f.ingest.Grant(other);
  ASSERT_EQ(theirs.size(), 1u);
  EXPECT_EQ(f.ingest.Submit(s, ValidGroup(theirs[0], 1), 100).reason(),
            rlvr::v1::REJECT_REASON_RATE_LIMITED);
  // The other session has its own bucket, and its lease is still live.
  EXPECT_TRUE(f.ingest.Submit(other, ValidGroup(theirs[0], 1), 100).accepted());
  EXPECT_EQ(f.ingest.Submit(other, ValidGroup(theirs[0], 1), 100).reason(),
            rlvr::v1::REJECT_REASON_DUPLICATE);
  // The snapshot (metrics.jsonl, summary.json) counts them by reason.
  const IngestSnapshot snap = f.ingest.Snapshot();
  EXPECT_EQ(snap.groups_rejected_rate_limited(), 2u);
  EXPECT_EQ(snap.groups_rejected_duplicate(), 2u);
  EXPECT_EQ(snap.groups_rejected_unknown_lease(), 0u);
  EXPECT_EQ(snap.groups_rejected(), 4u);
}

// Every RejectReason has its counter in IngestSnapshot, named after it and
// written to metrics.jsonl under groups_rejected.<reason>, the label of
// rlvr_learner_groups_rejected_total.
TEST(IngestTest, EveryRejectReasonHasItsCounterInTheSnapshot) {
  int reasons = 0;
  for (int r = rlvr::v1::RejectReason_MIN; r <= rlvr::v1::RejectReason_MAX; ++r) {
    if (!rlvr::v1::RejectReason_IsValid(r)) continue;
    const auto* field = RejectedGroupsField(r);
    if (r == rlvr::v1::REJECT_REASON_UNSPECIFIED) {
      EXPECT_EQ(field, nullptr);
      continue;
    }
    const std::string label = RejectReasonLabel(static_cast<rlvr::v1::RejectReason>(r));
    ASSERT_NE(field, nullptr) << label;
    EXPECT_EQ(field->name(), "groups_rejected_" + label);
    EXPECT_EQ(field->cpp_type(), google::protobuf::FieldDescriptor::CPPTYPE_UINT64);
    EXPECT_EQ(field->options().GetExtension(rlvr::v1::ingest).json_delta(),
              "groups_rejected." + label);
    ++reasons;
  }
  EXPECT_EQ(reasons, 12);
  EXPECT_EQ(RejectedGroupsField(-1), nullptr);
  EXPECT_EQ(RejectedGroupsField(rlvr::v1::RejectReason_MAX + 1), nullptr);
}

TEST(IngestTest, BufferByteCapRejectsUntilTrainingFreesBytes) {
  IngestOptions o = Options(1, 4, 2);
  o.buffer_bytes = 400;  // A two-completion, two-token group is 160 bytes.
  Fixture f(o);
  f.ingest.Publish(1);
  uint64_t s = *f.ingest.OpenSession(3);
  auto leases = f.ingest.Grant(s);
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_TRUE(f.ingest.Submit(s, ValidGroup(leases[0], 1), 100).accepted());
  EXPECT_TRUE(f.ingest.Submit(s, ValidGroup(leases[1], 1), 100).accepted());
  Ack full = f.ingest.Submit(s, ValidGroup(leases[2], 1), 100);
  EXPECT_FALSE(full.accepted());
  EXPECT_EQ(full.reason(), rlvr::v1::REJECT_REASON_UNAVAILABLE);
  EXPECT_NE(full.detail().find("buffer_bytes"), std::string::npos);
  auto groups = f.ingest.WaitForUpdate(nullptr);
  ASSERT_TRUE(groups.ok());
  f.ingest.CompleteUpdate(*groups);
  f.ingest.Publish(2);
  auto more = f.ingest.Grant(s);
  ASSERT_FALSE(more.empty());
  EXPECT_TRUE(f.ingest.Submit(s, ValidGroup(more[0], 2), 100).accepted());
}

}  // namespace
}  // namespace rlvr::learner
