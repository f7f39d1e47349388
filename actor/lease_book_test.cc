// LeaseBook: targeted cases, then thousands of random event sequences checked
// against a simple reference model and against the invariant itself (every
// lease ends exactly once: submitted, given back or dropped).
//
// Reproduce a failing sequence with RLVR_TEST_SEED=<seed printed> (it then
// runs that one sequence first).
#include "actor/lease_book.h"

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

namespace rlvr::actor {
namespace {

const absl::Time kT0 = absl::FromUnixMillis(1'700'000'000'000);

rlvr::v1::WorkLease MakeLease(uint64_t id, uint64_t min_version = 0, int64_t deadline_ms = 0) {
  rlvr::v1::WorkLease l;
  l.set_lease_id(id);
  l.set_group_size(2);
  l.set_min_policy_version(min_version);
  l.set_deadline_unix_ms(deadline_ms);
  return l;
}

std::vector<uint64_t> Ids(const std::vector<rlvr::v1::WorkLease>& leases) {
  std::vector<uint64_t> ids;
  for (const auto& l : leases) ids.push_back(l.lease_id());
  return ids;
}

LeaseBookOptions Options(int capacity) {
  LeaseBookOptions o;
  o.capacity = capacity;
  o.stale_lease_wait = absl::Seconds(2);
  o.validate = [](const rlvr::v1::WorkLease& l) {
    return l.group_size() >= 1 ? absl::OkStatus() : absl::InvalidArgumentError("group_size");
  };
  return o;
}

TEST(LeaseBookTest, GrantGenerateSubmitAck) {
  LeaseBook book(Options(2));
  const uint64_t s = book.OpenSession();
  EXPECT_EQ(book.Grant(s, MakeLease(1), kT0).kind, LeaseBook::Admission::kQueued);
  EXPECT_EQ(book.Grant(s, MakeLease(2), kT0).kind, LeaseBook::Admission::kQueued);
  // Over capacity: given back at once.
  auto over = book.Grant(s, MakeLease(3), kT0);
  EXPECT_EQ(over.kind, LeaseBook::Admission::kGiveBack);
  EXPECT_EQ(over.reason, "over capacity");
  EXPECT_FALSE(book.Actionable(0, kT0));  // No weights: they wait.
  LeaseBook::Take take = book.TakeBatch(/*version=*/1, kT0);
  EXPECT_EQ(Ids(take.batch), (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(take.give_back.empty());
  EXPECT_EQ(book.held(), 2);  // Generating leases are held.
  EXPECT_EQ(book.FinishBatch(true).kind, LeaseBook::Finish::kSubmit);
  EXPECT_EQ(book.held(), 0);
  EXPECT_EQ(book.awaiting_ack(), 2);
  EXPECT_TRUE(book.Ack(1));
  EXPECT_FALSE(book.Ack(1));  // Each matched once.
  EXPECT_TRUE(book.Ack(2));
  EXPECT_EQ(book.counters().submitted, 2u);
  EXPECT_EQ(book.counters().acked, 2u);
  EXPECT_EQ(book.counters().unknown_acks, 1u);
  EXPECT_EQ(book.counters().max_held, 2);
}

TEST(LeaseBookTest, InvalidDuplicateAndWrongSessionLeases) {
  LeaseBook book(Options(4));
  const uint64_t s = book.OpenSession();
  rlvr::v1::WorkLease bad = MakeLease(1);
  bad.set_group_size(0);
  auto a = book.Grant(s, bad, kT0);
  EXPECT_EQ(a.kind, LeaseBook::Admission::kGiveBack);
  EXPECT_EQ(a.reason, "invalid lease: group_size");
  EXPECT_EQ(book.Grant(s, MakeLease(2), kT0).kind, LeaseBook::Admission::kQueued);
  EXPECT_EQ(book.Grant(s, MakeLease(2), kT0).kind, LeaseBook::Admission::kIgnored);
  EXPECT_EQ(book.Grant(s + 1, MakeLease(3), kT0).kind, LeaseBook::Admission::kIgnored);
  EXPECT_EQ(book.held(), 1);
}

TEST(LeaseBookTest, ExpiredAndStaleLeasesAreGivenBack) {
  LeaseBook book(Options(4));
  const uint64_t s = book.OpenSession();
  const int64_t now_ms = absl::ToUnixMillis(kT0);
  book.Grant(s, MakeLease(1, /*min_version=*/0, /*deadline_ms=*/now_ms + 500), kT0);
  book.Grant(s, MakeLease(2, /*min_version=*/3), kT0);
  book.Grant(s, MakeLease(3, /*min_version=*/2), kT0);
  // Version 2 held: lease 3 is ready, 2 waits, 1 is ready too.
  EXPECT_TRUE(book.Actionable(2, kT0));
  // One second later lease 1 is past its deadline and lease 2 still waits.
  LeaseBook::Take take = book.TakeBatch(2, kT0 + absl::Seconds(1));
  EXPECT_EQ(Ids(take.batch), (std::vector<uint64_t>{3}));
  ASSERT_EQ(take.give_back.size(), 1u);
  EXPECT_EQ(take.give_back[0].lease_ids, (std::vector<uint64_t>{1}));
  EXPECT_EQ(take.give_back[0].reason, "lease deadline passed");
  book.FinishBatch(true);
  EXPECT_FALSE(book.Actionable(2, kT0 + absl::Seconds(2)));
  // Past stale_lease_wait without version 3: given back.
  take = book.TakeBatch(2, kT0 + absl::Seconds(3));
  EXPECT_TRUE(take.batch.empty());
  ASSERT_EQ(take.give_back.size(), 1u);
  EXPECT_EQ(take.give_back[0].lease_ids, (std::vector<uint64_t>{2}));
  EXPECT_EQ(take.give_back[0].reason, "weights for min_policy_version did not arrive");
}

TEST(LeaseBookTest, ABrokenSessionDropsItsLeasesAndItsBatch) {
  LeaseBook book(Options(4));
  uint64_t s = book.OpenSession();
  book.Grant(s, MakeLease(1), kT0);
  book.TakeBatch(1, kT0);
  book.Grant(s, MakeLease(2), kT0);
  EXPECT_EQ(book.CloseSession(), (std::vector<uint64_t>{2}));
  EXPECT_EQ(book.held(), 0);
  s = book.OpenSession();
  book.Grant(s, MakeLease(3), kT0);
  EXPECT_EQ(book.held(), 1);  // The old session's batch is not held on this one.
  // The batch of the dead session is never submitted on the new one.
  EXPECT_EQ(book.FinishBatch(true).kind, LeaseBook::Finish::kDropped);
  EXPECT_EQ(book.counters().dropped, 2u);
  EXPECT_FALSE(book.Ack(1));
}

TEST(LeaseBookTest, ShutdownGivesBackQueuedAndAbandonedLeasesOnce) {
  LeaseBook book(Options(4));
  const uint64_t s = book.OpenSession();
  book.Grant(s, MakeLease(1), kT0);
  book.TakeBatch(1, kT0);
  book.Grant(s, MakeLease(2), kT0);
  book.StopGranting();
  EXPECT_EQ(book.Grant(s, MakeLease(3), kT0).reason, "shutting down");
  GiveBack g = book.GiveBackUnfinished(/*abandon_batch=*/true);
  EXPECT_EQ(g.reason, "sigterm");
  EXPECT_EQ(g.lease_ids, (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(book.GiveBackUnfinished(true).lease_ids.empty());
  EXPECT_EQ(book.FinishBatch(true).kind, LeaseBook::Finish::kAbandoned);
  EXPECT_EQ(book.counters().submitted, 0u);
}

TEST(LeaseBookTest, ShutdownNeverGivesBackABatchOfABrokenSession) {
  LeaseBook book(Options(4));
  uint64_t s = book.OpenSession();
  book.Grant(s, MakeLease(1), kT0);
  book.TakeBatch(1, kT0);
  book.CloseSession();
  s = book.OpenSession();
  book.Grant(s, MakeLease(2), kT0);
  // Lease 1 belongs to the dead session: the learner re-queued it already.
  EXPECT_EQ(book.GiveBackUnfinished(/*abandon_batch=*/true).lease_ids, (std::vector<uint64_t>{2}));
  EXPECT_EQ(book.FinishBatch(true).kind, LeaseBook::Finish::kDropped);
}

TEST(LeaseBookTest, AFailedBatchIsGivenBack) {
  LeaseBook book(Options(2));
  const uint64_t s = book.OpenSession();
  book.Grant(s, MakeLease(7), kT0);
  book.TakeBatch(1, kT0);
  LeaseBook::Finish f = book.FinishBatch(false);
  EXPECT_EQ(f.kind, LeaseBook::Finish::kGiveBack);
  EXPECT_EQ(f.give_back.lease_ids, (std::vector<uint64_t>{7}));
  EXPECT_EQ(f.give_back.reason, "generation error");
}

TEST(LeaseBookTest, RevokedLeasesAreNeitherGeneratedNorSubmittedNorReturned) {
  LeaseBook book(Options(3));
  const uint64_t s = book.OpenSession();
  for (uint64_t id : {1, 2, 3}) book.Grant(s, MakeLease(id), kT0);
  LeaseBook::Take take = book.TakeBatch(1, kT0);
  ASSERT_EQ(Ids(take.batch), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(book.Grant(s, MakeLease(4), kT0).kind, LeaseBook::Admission::kGiveBack);
  // Two of the batch revoked (and ids of nothing, and of another session).
  EXPECT_EQ(book.Revoke(s + 1, {1}), 0);
  EXPECT_EQ(book.Revoke(s, {1, 3, 99}), 2);
  EXPECT_EQ(book.held(), 1);
  // The revoked ones no longer count against the capacity.
  EXPECT_EQ(book.Grant(s, MakeLease(4), kT0).kind, LeaseBook::Admission::kQueued);
  EXPECT_EQ(book.Grant(s, MakeLease(5), kT0).kind, LeaseBook::Admission::kQueued);
  EXPECT_EQ(book.Revoke(s, {5}), 1);  // A queued one: forgotten.
  EXPECT_EQ(book.queued(), 1);
  LeaseBook::Finish f = book.FinishBatch(true);
  EXPECT_EQ(f.kind, LeaseBook::Finish::kSubmit);
  EXPECT_EQ(f.revoked, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(book.awaiting_ack(), 1);
  EXPECT_TRUE(book.Ack(2));
  EXPECT_FALSE(book.Ack(1));
  EXPECT_EQ(book.counters().submitted, 1u);
  EXPECT_EQ(book.counters().revoked, 3u);
  EXPECT_EQ(Ids(book.TakeBatch(1, kT0).batch), (std::vector<uint64_t>{4}));
  EXPECT_EQ(book.Revoke(s, {4}), 1);
  EXPECT_TRUE(book.GiveBackUnfinished(/*abandon_batch=*/true).lease_ids.empty());
}

// ------------------------------------------------- one lease at a time

TEST(LeaseBookTest, LeasesTakenOneByOneEndOneByOne) {
  LeaseBook book(Options(3));
  const uint64_t s = book.OpenSession();
  for (uint64_t id : {1, 2}) book.Grant(s, MakeLease(id), kT0);
  LeaseBook::Take take = book.TakeLeases(1, kT0, 1);
  EXPECT_EQ(Ids(take.batch), (std::vector<uint64_t>{1}));
  // More can be taken while 1 generates.
  EXPECT_EQ(book.Grant(s, MakeLease(3), kT0).kind, LeaseBook::Admission::kQueued);
  EXPECT_EQ(Ids(book.TakeLeases(1, kT0, 5).batch), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(book.held(), 3);
  EXPECT_EQ(book.Grant(s, MakeLease(4), kT0).reason, "over capacity");
  // Each ends on its own.
  EXPECT_EQ(book.FinishLease(2, true).kind, LeaseBook::Finish::kSubmit);
  EXPECT_EQ(book.held(), 2);
  EXPECT_EQ(book.awaiting_ack(), 1);
  LeaseBook::Finish f = book.FinishLease(1, false);
  EXPECT_EQ(f.kind, LeaseBook::Finish::kGiveBack);
  EXPECT_EQ(f.give_back.lease_ids, (std::vector<uint64_t>{1}));
  EXPECT_EQ(f.give_back.reason, "generation error");
  EXPECT_TRUE(book.generating());
  EXPECT_EQ(book.FinishLease(3, true).kind, LeaseBook::Finish::kSubmit);
  EXPECT_FALSE(book.generating());
  EXPECT_TRUE(book.Ack(2));
  EXPECT_TRUE(book.Ack(3));
  EXPECT_EQ(book.counters().submitted, 2u);
}

TEST(LeaseBookTest, TakingNoneStillGivesBackExpiredAndStaleLeases) {
  LeaseBook book(Options(4));
  const uint64_t s = book.OpenSession();
  book.Grant(s, MakeLease(1, 0, absl::ToUnixMillis(kT0) + 100), kT0);
  book.Grant(s, MakeLease(2), kT0);
  LeaseBook::Take take = book.TakeLeases(1, kT0 + absl::Seconds(1), 0);
  EXPECT_TRUE(take.batch.empty());
  ASSERT_EQ(take.give_back.size(), 1u);
  EXPECT_EQ(take.give_back[0].lease_ids, (std::vector<uint64_t>{1}));
  EXPECT_EQ(book.queued(), 1);
}

TEST(LeaseBookTest, UnwantedLeasesAreRevokedAbandonedOrOfADeadSession) {
  LeaseBook book(Options(4));
  uint64_t s = book.OpenSession();
  for (uint64_t id : {1, 2, 3}) book.Grant(s, MakeLease(id), kT0);
  book.TakeLeases(1, kT0, 3);
  EXPECT_TRUE(book.Unwanted().empty());
  EXPECT_EQ(book.Revoke(s, {2}), 1);
  EXPECT_EQ(book.Unwanted(), (std::vector<uint64_t>{2}));
  EXPECT_EQ(book.FinishLease(2, true).kind, LeaseBook::Finish::kRevoked);
  EXPECT_EQ(book.counters().submitted, 0u);
  // Shutdown past the deadline abandons the rest.
  GiveBack g = book.GiveBackUnfinished(/*abandon_batch=*/true);
  EXPECT_EQ(g.lease_ids, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(book.Unwanted(), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(book.FinishLease(3, true).kind, LeaseBook::Finish::kAbandoned);
  EXPECT_EQ(book.FinishLease(1, true).kind, LeaseBook::Finish::kAbandoned);
  EXPECT_EQ(book.held(), 0);
  // A broken session's generating lease is dropped, never submitted later.
  book.CloseSession();
  s = book.OpenSession();
  book.Grant(s, MakeLease(4), kT0);
  book.TakeLeases(1, kT0, 1);
  book.CloseSession();
  s = book.OpenSession();
  EXPECT_EQ(book.Unwanted(), (std::vector<uint64_t>{4}));
  EXPECT_EQ(book.held(), 0);
  EXPECT_EQ(book.FinishLease(4, true).kind, LeaseBook::Finish::kDropped);
  EXPECT_FALSE(book.Ack(4));
}

// Random sequences of the one-by-one API against the ledger invariant:
// every queued lease ends exactly once (submitted, given back, dropped or
// revoked), never more than capacity held, no lease of a dead session
// submitted, and the book's counts agree with the ledger.
TEST(LeaseBookTest, RandomOneByOneSequencesLoseNothing) {
  uint64_t base = 20261201;
  if (const char* env = std::getenv("RLVR_TEST_SEED")) base = std::strtoull(env, nullptr, 10);
  int submitted_total = 0, unwanted_total = 0;
  for (int seq = 0; seq < 2000 && !HasFailure(); ++seq) {
    const uint64_t seed = base + seq;
    SCOPED_TRACE(absl::StrCat("RLVR_TEST_SEED=", seed));
    uint64_t x = SplitMix64(seed);
    auto below = [&](uint64_t n) { return (x = SplitMix64(x)) % n; };
    const int capacity = 1 + static_cast<int>(below(5));
    LeaseBook book(Options(capacity));
    std::map<uint64_t, int> endings;
    std::map<uint64_t, uint64_t> session_of;
    std::set<uint64_t> generating;
    absl::Time now = kT0;
    uint64_t version = 0, next_id = 1;
    uint64_t s = book.OpenSession();
    auto end = [&](const std::vector<uint64_t>& ids) {
      for (uint64_t id : ids) {
        ASSERT_EQ(++endings[id], 1) << "lease " << id << " ended twice";
      }
    };
    for (int step = 0; step < 300 && !HasFailure(); ++step) {
      const int op = static_cast<int>(below(100));
      if (op < 30) {
        const uint64_t id = next_id++;
        rlvr::v1::WorkLease l =
            MakeLease(id, below(version + 2), below(4) == 0 ? absl::ToUnixMillis(now) + 500 : 0);
        if (book.Grant(s, l, now).kind == LeaseBook::Admission::kQueued) {
          endings[id] = 0;
          session_of[id] = s;
        }
      } else if (op < 40) {
        now += absl::Milliseconds(below(1500));
      } else if (op < 45) {
        ++version;
      } else if (op < 65) {
        LeaseBook::Take t = book.TakeLeases(version, now, static_cast<int>(below(3)));
        for (const auto& g : t.give_back) end(g.lease_ids);
        for (const auto& l : t.batch) {
          ASSERT_TRUE(generating.insert(l.lease_id()).second);
          ASSERT_GE(version, l.min_policy_version());
        }
      } else if (op < 80 && !generating.empty()) {
        auto it = generating.begin();
        std::advance(it, below(generating.size()));
        const uint64_t id = *it;
        generating.erase(it);
        const LeaseBook::Finish f = book.FinishLease(id, below(10) != 0);
        switch (f.kind) {
          case LeaseBook::Finish::kSubmit:
            ASSERT_EQ(session_of[id], s);
            ASSERT_TRUE(book.session_open());
            end({id});
            ++submitted_total;
            break;
          case LeaseBook::Finish::kGiveBack:
            end(f.give_back.lease_ids);
            break;
          case LeaseBook::Finish::kDropped:
            ASSERT_TRUE(!book.session_open() || session_of[id] != s);
            end({id});
            break;
          case LeaseBook::Finish::kAbandoned:
          case LeaseBook::Finish::kRevoked:
            break;  // Ended when given back / revoked.
        }
      } else if (op < 85) {
        for (uint64_t id : book.Unwanted()) {
          ASSERT_TRUE(generating.erase(id));
          ++unwanted_total;
          const LeaseBook::Finish f = book.FinishLease(id, true);
          ASSERT_NE(f.kind, LeaseBook::Finish::kSubmit);
          if (f.kind == LeaseBook::Finish::kDropped) end({id});
        }
      } else if (op < 90) {
        std::vector<uint64_t> ids;
        for (uint64_t id : generating) {
          if (below(3) == 0) ids.push_back(id);
        }
        for (const auto& [id, n] : endings) {
          if (n == 0 && below(5) == 0) ids.push_back(id);
        }
        if (below(4) == 0) ids.push_back(next_id + 5);  // Unknown.
        // Held leases of this session (queued or generating, not ended) are
        // revoked: they end here.
        std::vector<uint64_t> want;
        for (uint64_t id : ids) {
          if (book.session_open() && endings.count(id) && endings[id] == 0 && session_of[id] == s &&
              std::count(want.begin(), want.end(), id) == 0) {
            want.push_back(id);
          }
        }
        ASSERT_EQ(book.Revoke(s, ids), static_cast<int>(want.size()));
        end(want);
      } else if (op < 95) {
        if (book.session_open()) {
          end(book.CloseSession());
        } else {
          s = book.OpenSession();
        }
      } else {
        GiveBack g = book.GiveBackUnfinished(below(2) == 0);
        end(g.lease_ids);
      }
      ASSERT_LE(book.held(), capacity);
    }
    if (HasFailure()) break;
    // Wind down: the session breaks, generation finishes. Every lease ended once.
    if (book.session_open()) end(book.CloseSession());
    for (uint64_t id : generating) {
      const LeaseBook::Finish f = book.FinishLease(id, true);
      ASSERT_NE(f.kind, LeaseBook::Finish::kSubmit);
      if (f.kind == LeaseBook::Finish::kDropped) end({id});
    }
    for (const auto& [id, n] : endings) ASSERT_EQ(n, 1) << "lease " << id;
    EXPECT_EQ(book.held(), 0);
  }
  EXPECT_GT(submitted_total, 0);
  EXPECT_GT(unwanted_total, 0);
}

// ---------------------------------------------------------------- random

// A SplitMix64 stream per seed; each seed starts at a scrambled point, so
// the streams of neighbouring seeds do not overlap.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(SplitMix64(seed ^ 0x5eed5eed5eed5eedULL)) {}
  uint64_t Next() { return SplitMix64(state_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, n) (n small: the modulo bias is negligible).
  uint64_t Below(uint64_t n) { return Next() % n; }
  bool Chance(int percent) { return static_cast<int>(Below(100)) < percent; }

 private:
  uint64_t state_;
};

// The reference: the same rules, written as plainly as possible.
class Reference {
 public:
  explicit Reference(int capacity) : capacity_(capacity) {}

  struct Lease {
    uint64_t id;
    uint64_t min_version;
    int64_t deadline_ms;
    absl::Time received;
  };

  uint64_t Open() {
    open = true;
    return ++session;
  }
  std::vector<uint64_t> Close() {
    std::vector<uint64_t> dropped;
    if (!open) return dropped;
    open = false;
    for (const Lease& l : queued) dropped.push_back(l.id);
    queued.clear();
    awaiting.clear();
    return dropped;
  }
  bool Holds(uint64_t id) const {
    for (const Lease& l : queued) {
      if (l.id == id) return true;
    }
    const std::vector<uint64_t> live = Live();
    const bool in_batch = generating && batch_session == session && !abandoned &&
                          std::count(live.begin(), live.end(), id) > 0;
    return in_batch || awaiting.count(id) > 0;
  }
  int Held() const {
    int n = static_cast<int>(queued.size());
    if (generating && open && batch_session == session && !abandoned) n += Live().size();
    return n;
  }
  // kind: 0 queued, 1 give back, 2 ignored.
  int Grant(uint64_t s, const Lease& l, bool valid) {
    if (!open || s != session || Holds(l.id)) return 2;
    if (!granting || !valid || Held() >= capacity_) return 1;
    queued.push_back(l);
    return 0;
  }
  // 0 ready, 1 wait, 2 expired, 3 stale.
  int Fate(const Lease& l, uint64_t version, absl::Time now) const {
    if (l.deadline_ms > 0 && absl::ToUnixMillis(now) > l.deadline_ms) return 2;
    if (version == 0 || l.min_version > version) {
      return now - l.received > absl::Seconds(2) ? 3 : 1;
    }
    return 0;
  }

  int capacity_;
  bool open = false;
  bool granting = true;
  uint64_t session = 0;
  std::vector<Lease> queued;
  bool generating = false;
  std::vector<uint64_t> batch;
  uint64_t batch_session = 0;
  bool abandoned = false;
  std::vector<uint64_t> revoked;  // Of the batch in generation.
  std::set<uint64_t> awaiting;

  // The batch's leases not revoked.
  std::vector<uint64_t> Live() const {
    std::vector<uint64_t> out;
    for (uint64_t id : batch) {
      if (std::count(revoked.begin(), revoked.end(), id) == 0) out.push_back(id);
    }
    return out;
  }
  // Revoked ids that were held (queued or in the live batch), in order.
  std::vector<uint64_t> Revoke(uint64_t s, const std::vector<uint64_t>& ids) {
    std::vector<uint64_t> out;
    if (!open || s != session) return out;
    for (uint64_t id : ids) {
      auto q =
          std::find_if(queued.begin(), queued.end(), [&](const Lease& l) { return l.id == id; });
      if (q != queued.end()) {
        queued.erase(q);
        out.push_back(id);
        continue;
      }
      const std::vector<uint64_t> live = Live();
      if (generating && batch_session == session && !abandoned &&
          std::count(live.begin(), live.end(), id) > 0) {
        revoked.push_back(id);
        out.push_back(id);
      }
    }
    return out;
  }
};

// What became of each lease the book queued, from the book's own outputs.
struct Ledger {
  std::map<uint64_t, int> submitted, given_back, dropped, revoked;
  std::set<uint64_t> queued;

  int Endings(uint64_t id) const {
    auto count = [&](const std::map<uint64_t, int>& m) {
      auto it = m.find(id);
      return it == m.end() ? 0 : it->second;
    };
    return count(submitted) + count(given_back) + count(dropped) + count(revoked);
  }
};

// How often the random sequences reached the rarer situations (checked > 0,
// so that the sequences keep exercising them).
struct Coverage {
  int orphan_dropped = 0;       // A batch of a broken session finished.
  int orphan_at_give_back = 0;  // Shutdown give-back while such a batch ran.
  int abandoned = 0;            // A live batch abandoned at shutdown.
  int expired = 0, stale = 0;   // Give-backs by deadline and by missing weights.
  int revoked_generating = 0;   // Leases revoked while their batch ran.
};

void RunSequence(uint64_t seed, int steps, Coverage* coverage) {
  SCOPED_TRACE(absl::StrCat("RLVR_TEST_SEED=", seed));
  Rng rng(seed);
  const int capacity = 1 + static_cast<int>(rng.Below(5));
  LeaseBook book(Options(capacity));
  Reference ref(capacity);
  Ledger ledger;
  absl::Time now = kT0;
  uint64_t version = 0;
  uint64_t next_id = 1;
  std::vector<Reference::Lease> batch_leases;  // Of the batch in generation.

  auto end_all = [&](const std::vector<uint64_t>& ids, std::map<uint64_t, int>* fate) {
    for (uint64_t id : ids) {
      ASSERT_TRUE(ledger.queued.count(id)) << "lease " << id << " was never queued";
      ++(*fate)[id];
      ASSERT_EQ(ledger.Endings(id), 1) << "lease " << id << " ended twice";
    }
  };
  auto check_give_back = [&](const GiveBack& g, const std::vector<uint64_t>& expected,
                             const std::string& reason) {
    EXPECT_EQ(g.lease_ids, expected);
    if (!expected.empty()) {
      EXPECT_EQ(g.reason, reason);
    }
  };

  if (rng.Chance(80)) {
    EXPECT_EQ(book.OpenSession(), ref.Open());
  }
  for (int step = 0; step < steps && !::testing::Test::HasFailure(); ++step) {
    const int op = static_cast<int>(rng.Below(100));
    if (op < 35) {  // Grant.
      // Ids are unique for the learner's lifetime; a (misbehaving) repeat of
      // one held now is ignored.
      std::vector<uint64_t> held_ids(ref.awaiting.begin(), ref.awaiting.end());
      for (const Reference::Lease& l : ref.queued) held_ids.push_back(l.id);
      uint64_t id = next_id;
      if (!held_ids.empty() && rng.Chance(5)) {
        id = held_ids[rng.Below(held_ids.size())];
      } else {
        ++next_id;
      }
      uint64_t s = ref.session;
      if (rng.Chance(4)) s = rng.Below(ref.session + 2);
      Reference::Lease rl{id, rng.Below(version + 3), 0, now};
      if (rng.Chance(30)) rl.deadline_ms = absl::ToUnixMillis(now) + rng.Below(3000) - 200;
      rlvr::v1::WorkLease lease = MakeLease(id, rl.min_version, rl.deadline_ms);
      const bool valid = !rng.Chance(8);
      if (!valid) lease.set_group_size(0);
      const int expect = ref.Grant(s, rl, valid);
      const LeaseBook::Admission a = book.Grant(s, lease, now);
      ASSERT_EQ(static_cast<int>(a.kind), expect) << "grant of " << id;
      if (a.kind == LeaseBook::Admission::kQueued) {
        ASSERT_FALSE(ledger.queued.count(id)) << "lease " << id << " queued twice";
        ledger.queued.insert(id);
      }
    } else if (op < 50) {  // Time passes.
      now += absl::Milliseconds(rng.Below(1500));
    } else if (op < 55) {  // A new version arrives.
      version += 1;
    } else if (op < 70) {  // Generation takes a batch (between batches only).
      if (ref.generating) continue;
      bool ref_actionable = false;
      std::vector<uint64_t> ready, expired, stale;
      std::vector<Reference::Lease> keep;
      batch_leases.clear();
      for (const Reference::Lease& l : ref.queued) {
        const int f = ref.Fate(l, version, now);
        ref_actionable |= f != 1;
        if (f == 0 && static_cast<int>(ready.size()) < capacity) {
          ready.push_back(l.id);
          batch_leases.push_back(l);
        } else if (f == 2) {
          expired.push_back(l.id);
        } else if (f == 3) {
          stale.push_back(l.id);
        } else {
          keep.push_back(l);
        }
      }
      ASSERT_EQ(book.Actionable(version, now), ref_actionable);
      LeaseBook::Take take = book.TakeBatch(version, now);
      ref.queued = keep;
      ASSERT_EQ(Ids(take.batch), ready);
      std::vector<GiveBack> want;
      coverage->stale += !stale.empty();
      coverage->expired += !expired.empty();
      if (!stale.empty()) want.push_back({stale, "weights for min_policy_version did not arrive"});
      if (!expired.empty()) want.push_back({expired, "lease deadline passed"});
      ASSERT_EQ(take.give_back.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        check_give_back(take.give_back[i], want[i].lease_ids, want[i].reason);
        end_all(take.give_back[i].lease_ids, &ledger.given_back);
      }
      for (const rlvr::v1::WorkLease& l : take.batch) {
        // Generated only with weights it accepts, before its deadline.
        ASSERT_GE(version, l.min_policy_version());
        ASSERT_GT(version, 0u);
        if (l.deadline_unix_ms() > 0) {
          ASSERT_LE(absl::ToUnixMillis(now), l.deadline_unix_ms());
        }
      }
      if (!ready.empty()) {
        ref.generating = true;
        ref.batch = ready;
        ref.batch_session = ref.session;
        ref.abandoned = false;
        ref.revoked.clear();
      }
    } else if (op < 80) {  // The batch ends.
      if (!ref.generating) continue;
      const bool ok = rng.Chance(90);
      LeaseBook::Finish f = book.FinishBatch(ok);
      ref.generating = false;
      const std::vector<uint64_t> live = ref.Live();
      if (ref.abandoned) {
        ASSERT_EQ(f.kind, LeaseBook::Finish::kAbandoned);
      } else if (!ref.open || ref.batch_session != ref.session) {
        ASSERT_EQ(f.kind, LeaseBook::Finish::kDropped);
        ++coverage->orphan_dropped;
        end_all(live, &ledger.dropped);
      } else if (ok) {
        ASSERT_EQ(f.kind, LeaseBook::Finish::kSubmit);
        ASSERT_EQ(f.revoked, ref.revoked);
        end_all(live, &ledger.submitted);
        ref.awaiting.insert(live.begin(), live.end());
      } else {
        ASSERT_EQ(f.kind, LeaseBook::Finish::kGiveBack);
        check_give_back(f.give_back, live, "generation error");
        end_all(f.give_back.lease_ids, &ledger.given_back);
      }
    } else if (op < 84) {  // The learner revokes leases (held ones, others, unknown ids).
      std::vector<uint64_t> ids;
      for (const auto& l : ref.queued) {
        if (rng.Chance(40)) ids.push_back(l.id);
      }
      for (uint64_t id : ref.batch) {
        if (rng.Chance(40)) ids.push_back(id);
      }
      for (uint64_t id : ref.awaiting) {
        if (rng.Chance(20)) ids.push_back(id);
      }
      if (rng.Chance(20)) ids.push_back(next_id + 7);
      uint64_t s = ref.session;
      if (rng.Chance(5)) s = rng.Below(ref.session + 2);
      const bool batch_running = ref.generating && ref.batch_session == ref.session;
      const std::vector<uint64_t> want = ref.Revoke(s, ids);
      ASSERT_EQ(book.Revoke(s, ids), static_cast<int>(want.size()));
      if (batch_running && !ref.revoked.empty()) ++coverage->revoked_generating;
      end_all(want, &ledger.revoked);
    } else if (op < 90) {  // An ack (sometimes for nothing, sometimes twice).
      uint64_t id = next_id > 1 ? 1 + rng.Below(next_id - 1) : 1;
      if (!ref.awaiting.empty() && rng.Chance(80)) {
        auto it = ref.awaiting.begin();
        std::advance(it, rng.Below(ref.awaiting.size()));
        id = *it;
      }
      const bool known = ref.awaiting.erase(id) > 0;
      ASSERT_EQ(book.Ack(id), known) << "ack of " << id;
    } else if (op < 95) {  // The session breaks, or a new one opens.
      if (ref.open) {
        std::vector<uint64_t> want = ref.Close();
        std::vector<uint64_t> got = book.CloseSession();
        ASSERT_EQ(got, want);
        end_all(got, &ledger.dropped);
      } else {
        ASSERT_EQ(book.OpenSession(), ref.Open());
      }
    } else if (op < 97) {  // Shutdown begins.
      book.StopGranting();
      ref.granting = false;
    } else {  // Unfinished leases are given back (possibly abandoning the batch).
      const bool abandon = rng.Chance(50);
      if (abandon && ref.generating && ref.batch_session != ref.session) {
        ++coverage->orphan_at_give_back;
      }
      std::vector<uint64_t> want;
      if (ref.open) {
        if (abandon && ref.generating && ref.batch_session == ref.session && !ref.abandoned) {
          ref.abandoned = true;
          want = ref.Live();
          ++coverage->abandoned;
        }
        for (const auto& l : ref.queued) want.push_back(l.id);
        ref.queued.clear();
      }
      GiveBack g = book.GiveBackUnfinished(abandon);
      check_give_back(g, want, "sigterm");
      end_all(g.lease_ids, &ledger.given_back);
    }
    ASSERT_EQ(book.held(), ref.Held());
    ASSERT_LE(book.held(), capacity);
    ASSERT_EQ(book.queued(), static_cast<int>(ref.queued.size()));
    ASSERT_EQ(book.awaiting_ack(), static_cast<int>(ref.awaiting.size()));
    ASSERT_EQ(book.generating(), ref.generating);
  }
  if (::testing::Test::HasFailure()) return;
  // Wind down: the session breaks and a batch in flight finishes. Then every
  // lease the book ever queued ended exactly once.
  if (book.session_open()) end_all(book.CloseSession(), &ledger.dropped);
  if (book.generating()) {
    LeaseBook::Finish f = book.FinishBatch(true);
    if (f.kind == LeaseBook::Finish::kDropped) end_all(ref.Live(), &ledger.dropped);
  }
  for (uint64_t id : ledger.queued) ASSERT_EQ(ledger.Endings(id), 1) << "lease " << id;
  const LeaseBookCounters& c = book.counters();
  EXPECT_EQ(c.submitted, ledger.submitted.size());
  EXPECT_LE(c.max_held, capacity);
}

TEST(LeaseBookTest, RandomSequencesMatchTheReferenceAndLoseNothing) {
  uint64_t base = 20261124;
  if (const char* env = std::getenv("RLVR_TEST_SEED")) base = std::strtoull(env, nullptr, 10);
  constexpr int kSequences = 3000;
  Coverage coverage;
  for (int i = 0; i < kSequences && !HasFailure(); ++i) RunSequence(base + i, 300, &coverage);
  EXPECT_GT(coverage.orphan_dropped, 0);
  EXPECT_GT(coverage.orphan_at_give_back, 0);
  EXPECT_GT(coverage.abandoned, 0);
  EXPECT_GT(coverage.expired, 0);
  EXPECT_GT(coverage.stale, 0);
  EXPECT_GT(coverage.revoked_generating, 0);
  std::printf(
      "coverage: %d orphan batches dropped, %d give-backs with an orphan batch running, "
      "%d batches abandoned, %d expiries, %d stale give-backs, %d revocations mid-batch\n",
      coverage.orphan_dropped, coverage.orphan_at_give_back, coverage.abandoned, coverage.expired,
      coverage.stale, coverage.revoked_generating);
}

}  // namespace
}  // namespace rlvr::actor
