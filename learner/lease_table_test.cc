// LeaseTable and RolloutBuffer: targeted cases (staleness-aware credits,
// revocation), then thousands of random event sequences (grant, submit,
// return, expire, disconnect, publish, train, checkpoint, resume) checked
// against a simple reference model and against the invariant itself: no
// slot is ever out twice or trained twice in an epoch, and a well-behaved
// actor afterwards trains every prompt of an epoch (nothing was lost).
//
// Reproduce a failing sequence with RLVR_TEST_SEED=<seed printed> (it then
// runs that one sequence first).
#include "learner/lease_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/splitmix.h"
#include "learner/lease_testing.h"
#include "learner/rollout_decoder.h"

namespace rlvr::learner {
namespace {

using rlvr::v1::Ack;
using rlvr::v1::WorkLease;

const absl::Time kT0 = absl::FromUnixMillis(1'700'000'000'000);

using testing::MakePrompts;

IngestOptions Options(int lag, int buffer, int per_update) {
  IngestOptions o = testing::TinyJobOptions(lag, buffer, per_update);
  o.lease_timeout_s = 60;
  o.buffer_bytes = 0;
  return o;
}

ReceivedGroup Group(const WorkLease& lease, uint64_t version, bool valid = true) {
  rlvr::v1::RolloutGroup g;
  g.set_lease_id(lease.lease_id());
  g.set_prompt_id(lease.prompt_id());
  g.set_policy_version(version);
  for (double r : {1.0, 0.0}) {
    auto* c = g.add_completions();
    c->add_token_ids(4);
    c->add_token_ids(2);
    c->add_behaviour_logprobs(-0.5f);
    c->add_behaviour_logprobs(-0.1f);
    c->set_reward(static_cast<float>(valid ? r : 2.0));
  }
  ReceivedGroup out;
  ConvertRolloutGroup(g, 2, 100, &out);
  return out;
}

Ack Submit(LeaseTable* t, uint64_t session, const WorkLease& lease, uint64_t version,
           absl::Time now = kT0) {
  ReceivedGroup g = Group(lease, version);
  bool requeued = false;
  return t->Submit(session, &g, now, &requeued);
}

// ------------------------------------------------------------- targeted

TrainingGroup Versioned(uint64_t version, CursorSlot slot) {
  TrainingGroup t;
  t.group.policy_version = version;
  t.slot = slot;
  return t;
}

TEST(RolloutBufferTest, AsyncCreditsCoverOnlyUpdatesWithinTheLag) {
  RolloutBufferOptions o;
  o.max_policy_lag = 1;
  o.buffer_groups = 100;
  o.groups_per_update = 4;
  o.num_prompts = 50;
  auto b = MakeRolloutBuffer(o);
  EXPECT_FALSE(b->Reserve(0).has_value()) << "nothing before the first version";
  b->Publish(3);
  // The update at version 3 is still to come: updates 3 and 4 are within the
  // lag; 4 groups each, the first for update 3 (min 2), then update 4 (min 3).
  std::vector<uint64_t> mins;
  for (size_t out = 0; auto r = b->Reserve(out); ++out) mins.push_back(r->min_version);
  EXPECT_EQ(mins, (std::vector<uint64_t>{2, 2, 2, 2, 3, 3, 3, 3}));
  // Update 3 taken: only update 4 remains within the lag of version 3.
  for (int i = 0; i < 4; ++i) b->Add(Versioned(3, {0, 100u + i, 0}));
  ASSERT_TRUE(b->Ready());
  EXPECT_EQ(b->Take().size(), 4u);
  EXPECT_FALSE(b->Reserve(4).has_value()) << "4 leases out fill update 4";
  ASSERT_TRUE(b->Reserve(3).has_value());
  EXPECT_EQ(b->Reserve(3)->min_version, 3u);
}

TEST(RolloutBufferTest, AsyncTakesOldestVersionsFirstAndDropsStaleOnPublish) {
  RolloutBufferOptions o;
  o.max_policy_lag = 2;
  o.buffer_groups = 100;
  o.groups_per_update = 2;
  o.num_prompts = 50;
  auto b = MakeRolloutBuffer(o);
  b->Publish(3);
  std::vector<CursorSlot> slots;
  for (int i = 0; i < 5; ++i) slots.push_back(b->Reserve(slots.size())->slot);
  for (uint64_t v : {3, 2, 1}) b->Add(Versioned(v, slots[3 - v]));
  auto taken = b->Take();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].group.policy_version, 1u);
  EXPECT_EQ(taken[1].group.policy_version, 2u);
  b->Add(Versioned(1, slots[3]));
  EXPECT_EQ(b->buffered(), 2u);
  std::vector<TrainingGroup> stale = b->Publish(4);  // 1 + 2 < 4.
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].slot, slots[3]);
  EXPECT_EQ(b->buffered(), 1u);
}

TEST(LeaseTableTest, PublishRevokesDoomedLeasesAndTheirLateGroupsAreRejected) {
  LeaseTable t(Options(1, 8, 2), MakePrompts(10));
  uint64_t s = *t.OpenSession(8, kT0);
  t.Publish(1);
  std::vector<WorkLease> leases = t.Grant(s, kT0);
  ASSERT_EQ(leases.size(), 4u);  // Updates 1 and 2, two groups each.
  EXPECT_EQ(leases[0].min_policy_version(), 0u);
  EXPECT_EQ(leases[2].min_policy_version(), 1u);
  // Two groups train update 1; version 2 does not doom the rest (still fresh
  // for update 2), version 3 does.
  for (int i : {0, 1}) ASSERT_TRUE(Submit(&t, s, leases[i], 1).accepted());
  ASSERT_EQ(t.TakeUpdate().size(), 2u);
  EXPECT_TRUE(t.Publish(2).revoked.empty());
  LeaseTable::Published p = t.Publish(3);
  ASSERT_EQ(p.revoked.size(), 1u);
  EXPECT_EQ(p.revoked[s], (std::vector<uint64_t>{leases[2].lease_id(), leases[3].lease_id()}));
  EXPECT_EQ(t.counters().revoked, 2u);
  EXPECT_EQ(t.outstanding(), 0u);
  Ack late = Submit(&t, s, leases[2], 2);
  EXPECT_FALSE(late.accepted());
  EXPECT_EQ(late.reason(), rlvr::v1::REJECT_REASON_STALE_VERSION);
  EXPECT_NE(late.detail().find("revoked"), std::string::npos);
  // The prompts come back, fresh.
  std::vector<WorkLease> again = t.Grant(s, kT0);
  ASSERT_GE(again.size(), 2u);
  EXPECT_EQ(again[0].prompt_id(), leases[2].prompt_id());
  EXPECT_EQ(again[0].sampling().seed(), leases[2].sampling().seed());
  EXPECT_EQ(again[0].min_policy_version(), 2u);
}

// An actor that answers every lease with the newest version before the next
// update never sees a stale drop or a revocation, whatever the lag.
TEST(LeaseTableTest, PromptActorsWasteNothing) {
  for (int lag : {1, 2, 3}) {
    LeaseTable t(Options(lag, 16, 4), MakePrompts(40));
    uint64_t s = *t.OpenSession(16, kT0);
    t.Publish(1);
    for (uint64_t v = 1; v < 30; ++v) {
      for (const WorkLease& l : t.Grant(s, kT0)) ASSERT_TRUE(Submit(&t, s, l, v).accepted());
      ASSERT_TRUE(t.UpdateReady());
      auto groups = t.TakeUpdate();
      for (const TrainingGroup& g : groups) EXPECT_GE(g.group.policy_version + lag, v);
      t.CompleteUpdate(groups);
      LeaseTable::Published p = t.Publish(v + 1);
      EXPECT_TRUE(p.stale.empty());
      EXPECT_TRUE(p.revoked.empty());
    }
    EXPECT_EQ(t.counters().dropped_stale, 0u);
    EXPECT_EQ(t.counters().revoked, 0u);
    EXPECT_EQ(t.counters().rejected, 0u);
  }
}

// ---------------------------------------------------------------- random

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(SplitMix64(seed ^ 0x1ea5e7ab1eULL)) {}
  uint64_t Next() { return SplitMix64(state_ += 0x9e3779b97f4a7c15ULL); }
  uint64_t Below(uint64_t n) { return Next() % n; }
  bool Chance(int percent) { return static_cast<int>(Below(100)) < percent; }

 private:
  uint64_t state_;
};

// The reference: leases and groups as plain sets, with the rules written out.
struct Model {
  struct Lease {
    uint64_t session;
    std::string key;  // prompt id + sampling seed: one (epoch, prompt).
    absl::Time deadline;
    uint64_t min_version;
    uint64_t granted_at;
  };
  enum Ending { kAccepted, kExpired, kLost, kRevoked };
  std::map<uint64_t, Lease> outstanding;
  std::map<uint64_t, Ending> closed;
  std::set<uint64_t> sessions;
  std::map<uint64_t, int> streak;  // Leases expired in a row, by session.
  std::multiset<uint64_t> buffered_versions;
  std::set<std::string> in_flight;  // Keys leased, buffered or being trained.
  std::set<std::string> trained;    // Keys trained (in the surviving history).
  uint64_t latest = 0;
  uint64_t max_lease_id = 0;
};

struct Coverage {
  int accepted = 0, revoked = 0, stale = 0, expired = 0, resumed = 0, updates = 0;
};

std::string KeyOf(const WorkLease& l) {
  return absl::StrCat(l.prompt_id(), "/", l.sampling().seed());
}

void RunSequence(uint64_t seed, int steps, Coverage* coverage) {
  SCOPED_TRACE(absl::StrCat("RLVR_TEST_SEED=", seed));
  Rng rng(seed);
  const int lag = static_cast<int>(rng.Below(3));
  const int per_update = 1 + static_cast<int>(rng.Below(3));
  const int buffer = per_update * (1 + static_cast<int>(rng.Below(3)));
  const int num_prompts = 3 + static_cast<int>(rng.Below(6));
  IngestOptions o = Options(lag, buffer, per_update);
  o.lease_expiries_to_close = rng.Chance(50) ? 0 : 2;
  o.lease_timeout_s = 1 + static_cast<double>(rng.Below(5));
  auto table = std::make_unique<LeaseTable>(o, MakePrompts(num_prompts));
  Model m;
  absl::Time now = kT0;
  std::vector<WorkLease> known;  // Every lease granted (for late and repeated groups).
  std::vector<TrainingGroup> training;
  std::string checkpoint;
  std::set<std::string> trained_at_checkpoint;
  uint64_t version_at_checkpoint = 0;
  uint64_t lease_id_at_checkpoint = 0;

  auto publish = [&](uint64_t v) {
    LeaseTable::Published p = table->Publish(v);
    m.latest = std::max(m.latest, v);
    // Stale buffered groups.
    std::multiset<uint64_t> keep;
    size_t stale = 0;
    for (uint64_t gv : m.buffered_versions) {
      if (lag > 0 && gv + lag < m.latest) {
        ++stale;
      } else {
        keep.insert(gv);
      }
    }
    ASSERT_EQ(p.stale.size(), stale);
    for (const TrainingGroup& g : p.stale)
      m.in_flight.erase(
          absl::StrCat(g.group.prompt_id, "/",
                       PromptCursor::SlotSeed(o.seed, g.slot.epoch, g.slot.prompt_index)));
    coverage->stale += static_cast<int>(stale);
    m.buffered_versions = keep;
    // Doomed leases.
    std::map<uint64_t, std::vector<uint64_t>> doomed;
    if (lag > 0) {
      for (const auto& [id, l] : m.outstanding) {
        if (std::max(l.granted_at, l.min_version) + lag < m.latest) doomed[l.session].push_back(id);
      }
    }
    ASSERT_EQ(p.revoked, doomed);
    for (const auto& [s, ids] : doomed) {
      for (uint64_t id : ids) {
        m.in_flight.erase(m.outstanding[id].key);
        m.outstanding.erase(id);
        m.closed[id] = Model::kRevoked;
        ++coverage->revoked;
      }
    }
  };
  auto lose = [&](uint64_t id, Model::Ending why) {
    m.in_flight.erase(m.outstanding[id].key);
    m.outstanding.erase(id);
    m.closed[id] = why;
  };
  auto grant = [&](uint64_t s) {
    for (const WorkLease& l : table->Grant(s, now)) {
      ASSERT_GT(l.lease_id(), m.max_lease_id) << "lease id reused";
      m.max_lease_id = l.lease_id();
      const std::string key = KeyOf(l);
      ASSERT_FALSE(m.in_flight.count(key)) << key << " is out twice";
      ASSERT_FALSE(m.trained.count(key)) << key << " leased again after training";
      ASSERT_GE(l.min_policy_version() + lag, m.latest);
      ASSERT_LE(l.min_policy_version(), m.latest);
      m.in_flight.insert(key);
      m.outstanding[l.lease_id()] = {s, key, now + absl::Seconds(o.lease_timeout_s),
                                     l.min_policy_version(), m.latest};
      known.push_back(l);
    }
  };
  // What the table must answer to a group for `l` of version `v`.
  auto expected_reason = [&](uint64_t s, const WorkLease& l, uint64_t v, bool valid) {
    auto it = m.outstanding.find(l.lease_id());
    if (it == m.outstanding.end() || it->second.session != s) {
      auto c = m.closed.find(l.lease_id());
      if (c == m.closed.end()) return rlvr::v1::REJECT_REASON_UNKNOWN_LEASE;
      switch (c->second) {
        case Model::kAccepted:
          return rlvr::v1::REJECT_REASON_DUPLICATE;
        case Model::kExpired:
          return rlvr::v1::REJECT_REASON_EXPIRED_LEASE;
        case Model::kRevoked:
          return rlvr::v1::REJECT_REASON_STALE_VERSION;
        case Model::kLost:
          return rlvr::v1::REJECT_REASON_UNKNOWN_LEASE;
      }
      return rlvr::v1::REJECT_REASON_UNKNOWN_LEASE;
    }
    if (now > it->second.deadline) return rlvr::v1::REJECT_REASON_EXPIRED_LEASE;
    if (!valid) return rlvr::v1::REJECT_REASON_REWARD_OUT_OF_RANGE;
    const uint64_t oldest =
        std::max<uint64_t>(it->second.min_version, m.latest > uint64_t(lag) ? m.latest - lag : 0);
    if (v > m.latest || v < oldest) return rlvr::v1::REJECT_REASON_STALE_VERSION;
    return rlvr::v1::REJECT_REASON_UNSPECIFIED;  // Accepted.
  };

  for (int step = 0; step < steps && !::testing::Test::HasFailure(); ++step) {
    const int op = static_cast<int>(rng.Below(100));
    if (op < 8) {  // A session opens.
      absl::StatusOr<uint64_t> s = table->OpenSession(1 + static_cast<int>(rng.Below(3)), now);
      ASSERT_EQ(s.ok(), m.sessions.size() < 4u);
      if (s.ok()) m.sessions.insert(*s);
    } else if (op < 12) {  // A session breaks.
      if (m.sessions.empty()) continue;
      const uint64_t s = *std::next(m.sessions.begin(), rng.Below(m.sessions.size()));
      std::vector<uint64_t> mine;
      for (const auto& [id, l] : m.outstanding) {
        if (l.session == s) mine.push_back(id);
      }
      ASSERT_EQ(table->CloseSession(s), mine.size());
      for (uint64_t id : mine) lose(id, Model::kLost);
      m.sessions.erase(s);
    } else if (op < 30) {  // Grants.
      if (m.sessions.empty()) continue;
      grant(*std::next(m.sessions.begin(), rng.Below(m.sessions.size())));
    } else if (op < 55) {  // A group: mostly for a live lease, sometimes late or wrong.
      if (known.empty()) continue;
      const WorkLease* pick = &known[rng.Below(known.size())];
      if (!m.outstanding.empty() && !rng.Chance(20)) {
        const uint64_t id =
            std::next(m.outstanding.begin(), rng.Below(m.outstanding.size()))->first;
        pick = &*std::find_if(known.begin(), known.end(),
                              [&](const WorkLease& k) { return k.lease_id() == id; });
      }
      const WorkLease& l = *pick;
      auto it = m.outstanding.find(l.lease_id());
      uint64_t s = it != m.outstanding.end() ? it->second.session : 0;
      if (s == 0 || rng.Chance(5)) {
        if (m.sessions.empty()) continue;
        s = *std::next(m.sessions.begin(), rng.Below(m.sessions.size()));
      }
      // Versions around the window, mostly the newest.
      uint64_t v = m.latest;
      if (rng.Chance(30)) v = m.latest + 1 >= 3 ? m.latest + 1 - rng.Below(4) : rng.Below(3);
      const bool valid = !rng.Chance(5);
      const rlvr::v1::RejectReason want = expected_reason(s, l, v, valid);
      ReceivedGroup g = Group(l, v, valid);
      bool requeued = false;
      table->Answered(s);
      m.streak[s] = 0;
      const Ack ack = table->Submit(s, &g, now, &requeued);
      if (want == rlvr::v1::REJECT_REASON_UNSPECIFIED) {
        ASSERT_TRUE(ack.accepted()) << ack.detail();
        m.outstanding.erase(l.lease_id());
        m.closed[l.lease_id()] = Model::kAccepted;
        m.buffered_versions.insert(v);
        ++coverage->accepted;
      } else {
        ASSERT_FALSE(ack.accepted());
        ASSERT_EQ(ack.reason(), want) << ack.detail();
        const bool live = it != m.outstanding.end() && it->second.session == s;
        ASSERT_EQ(requeued, live);
        if (live) {
          lose(l.lease_id(),
               want == rlvr::v1::REJECT_REASON_EXPIRED_LEASE ? Model::kExpired : Model::kLost);
        }
      }
    } else if (op < 60) {  // Leases given back.
      if (m.outstanding.empty()) continue;
      auto it = std::next(m.outstanding.begin(), rng.Below(m.outstanding.size()));
      const uint64_t id = it->first, s = it->second.session;
      table->Answered(s);
      m.streak[s] = 0;
      ASSERT_EQ(table->Return(s, {id, id + 1000000}), 1u);
      lose(id, Model::kLost);
    } else if (op < 70) {  // Time passes; leases expire.
      now += absl::Milliseconds(rng.Below(2500));
      LeaseTable::Expiry e = table->Expire(now);
      std::vector<uint64_t> past;
      for (const auto& [id, l] : m.outstanding) {
        if (l.deadline < now) past.push_back(id);
      }
      size_t expired = 0;
      std::vector<uint64_t> evicted;
      for (uint64_t id : past) {
        if (!m.outstanding.count(id)) continue;  // Its session was closed just now.
        const uint64_t s = m.outstanding[id].session;
        lose(id, Model::kExpired);
        ++expired;
        const int limit = o.lease_expiries_to_close;
        if (++m.streak[s] < limit || limit == 0) continue;
        evicted.push_back(s);
        m.sessions.erase(s);
        for (auto it = m.outstanding.begin(); it != m.outstanding.end();) {
          const uint64_t other = it->first;
          const bool mine = it->second.session == s;
          ++it;
          if (mine) lose(other, Model::kLost);
        }
      }
      ASSERT_EQ(e.expired, expired);
      std::vector<uint64_t> got;
      for (const auto& [s, why] : e.evicted) got.push_back(s);
      ASSERT_EQ(got, evicted);
      coverage->expired += static_cast<int>(expired);
    } else if (op < 85) {  // The trainer: take an update if ready, train, publish.
      if (!table->UpdateReady()) continue;
      training = table->TakeUpdate();
      ASSERT_EQ(training.size(), static_cast<size_t>(per_update));
      std::multiset<uint64_t> versions;
      for (const TrainingGroup& g : training) {
        versions.insert(g.group.policy_version);
        ASSERT_GE(g.group.policy_version + lag, m.latest) << "stale group trained";
      }
      // The oldest versions buffered went first.
      std::multiset<uint64_t> oldest;
      auto vit = m.buffered_versions.begin();
      for (int i = 0; i < per_update; ++i) oldest.insert(*vit++);
      if (lag > 0) {
        ASSERT_EQ(versions, oldest);
      }
      for (uint64_t v : versions) m.buffered_versions.erase(m.buffered_versions.find(v));
      for (const TrainingGroup& g : training) {
        const std::string key =
            absl::StrCat(g.group.prompt_id, "/",
                         PromptCursor::SlotSeed(o.seed, g.slot.epoch, g.slot.prompt_index));
        ASSERT_TRUE(m.in_flight.erase(key)) << key << " trained but never out";
        ASSERT_TRUE(m.trained.insert(key).second) << key << " trained twice";
      }
      table->CompleteUpdate(training);
      ++coverage->updates;
      publish(m.latest + 1);
    } else if (op < 88) {  // A version without an update (e.g. a resumed learner).
      if (m.latest == 0 || (lag > 0 && rng.Chance(20))) publish(m.latest + 1);
    } else if (op < 93) {  // Checkpoint.
      checkpoint = table->SerializeState();
      trained_at_checkpoint = m.trained;
      version_at_checkpoint = m.latest;
      lease_id_at_checkpoint = m.max_lease_id;
    } else if (op < 95) {  // The learner dies and resumes from the checkpoint.
      if (checkpoint.empty()) continue;
      table = std::make_unique<LeaseTable>(o, MakePrompts(num_prompts));
      ASSERT_TRUE(table->RestoreState(checkpoint).ok());
      m.outstanding.clear();
      m.closed.clear();
      m.sessions.clear();
      m.streak.clear();
      m.buffered_versions.clear();
      m.in_flight.clear();
      m.trained = trained_at_checkpoint;
      m.latest = 0;
      // Ids are unique past the checkpoint's (a second resume from the same
      // checkpoint may grant the ids of the first one again: its sessions
      // are gone, so a group for one is never matched to them).
      m.max_lease_id = lease_id_at_checkpoint;
      known.clear();
      publish(std::max<uint64_t>(1, version_at_checkpoint));  // Versions are >= 1.
      ++coverage->resumed;
    }
    ASSERT_EQ(table->outstanding(), m.outstanding.size());
    ASSERT_EQ(table->buffered(), m.buffered_versions.size());
    ASSERT_EQ(table->sessions(), m.sessions.size());
    ASSERT_LE(table->outstanding() + table->buffered(),
              static_cast<size_t>(std::max(buffer, per_update)));
  }
  if (::testing::Test::HasFailure()) return;

  // Wind down with a well-behaved actor until the oldest open epoch closes:
  // every one of its prompts is trained exactly once, none was lost.
  if (m.latest == 0) publish(1);
  for (uint64_t s : std::set<uint64_t>(m.sessions)) {
    table->CloseSession(s);
    m.sessions.erase(s);
  }
  m.outstanding.clear();
  const uint64_t epoch = table->cursor().epoch();
  now += absl::Hours(1);
  uint64_t s = *table->OpenSession(3, now);
  for (int round = 0; round < 40 * num_prompts && table->cursor().epoch() == epoch; ++round) {
    for (const WorkLease& l : table->Grant(s, now)) {
      ASSERT_TRUE(Submit(table.get(), s, l, m.latest, now).accepted());
      m.buffered_versions.insert(m.latest);
    }
    if (table->UpdateReady()) {
      auto groups = table->TakeUpdate();
      for (const TrainingGroup& g : groups) {
        m.buffered_versions.erase(m.buffered_versions.find(g.group.policy_version));
        const std::string key =
            absl::StrCat(g.group.prompt_id, "/",
                         PromptCursor::SlotSeed(o.seed, g.slot.epoch, g.slot.prompt_index));
        ASSERT_TRUE(m.trained.insert(key).second) << key << " trained twice";
      }
      table->CompleteUpdate(groups);
      publish(m.latest + 1);
    }
  }
  ASSERT_GT(table->cursor().epoch(), epoch)
      << "epoch " << epoch << " never closed: a slot was lost";
  for (int p = 0; p < num_prompts; ++p) {
    const std::string key =
        absl::StrCat("p", p, "/", PromptCursor::SlotSeed(o.seed, epoch, static_cast<uint64_t>(p)));
    ASSERT_TRUE(m.trained.count(key)) << key << " of the closed epoch was never trained";
  }
}

TEST(LeaseTableTest, RandomSequencesMatchTheReferenceAndLoseNothing) {
  uint64_t base = 20260301;
  if (const char* env = std::getenv("RLVR_TEST_SEED")) base = std::strtoull(env, nullptr, 10);
  constexpr int kSequences = 2000;
  Coverage c;
  for (int i = 0; i < kSequences && !HasFailure(); ++i) RunSequence(base + i, 300, &c);
  EXPECT_GT(c.accepted, 0);
  EXPECT_GT(c.revoked, 0);
  EXPECT_GT(c.stale, 0);
  EXPECT_GT(c.expired, 0);
  EXPECT_GT(c.resumed, 0);
  EXPECT_GT(c.updates, 0);
  std::printf("coverage: %d accepted, %d updates, %d revoked, %d stale, %d expired, %d resumes\n",
              c.accepted, c.updates, c.revoked, c.stale, c.expired, c.resumed);
}

}  // namespace
}  // namespace rlvr::learner
