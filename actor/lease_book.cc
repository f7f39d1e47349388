#include "actor/lease_book.h"

#include <glog/logging.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rlvr::actor {

LeaseBook::LeaseBook(LeaseBookOptions options) : options_(std::move(options)) {
  CHECK_GE(options_.capacity, 1);
}

uint64_t LeaseBook::OpenSession() {
  CHECK(!open_) << "LeaseBook::OpenSession with a session open";
  open_ = true;
  return ++session_;
}

std::vector<uint64_t> LeaseBook::CloseSession() {
  std::vector<uint64_t> dropped;
  if (!open_) return dropped;
  open_ = false;
  dropped.reserve(queued_.size());
  for (const Queued& q : queued_) dropped.push_back(q.lease.lease_id());
  counters_.dropped += dropped.size();
  queued_.clear();
  // The batch in generation (if any) is now of a dead session: FinishBatch
  // drops it. Acks of this session can no longer arrive.
  state_.clear();
  return dropped;
}

LeaseBook::Admission LeaseBook::Grant(uint64_t session, rlvr::v1::WorkLease lease, absl::Time now) {
  ++counters_.received;
  const uint64_t id = lease.lease_id();
  if (!open_ || session != session_) {
    ++counters_.dropped;
    return {Admission::kIgnored, "lease of a closed session"};
  }
  if (state_.count(id) != 0) {
    ++counters_.ignored;
    return {Admission::kIgnored, "lease id already held"};
  }
  auto give_back = [&](std::string reason) {
    ++counters_.given_back;
    return Admission{Admission::kGiveBack, std::move(reason)};
  };
  if (!granting_) return give_back("shutting down");
  if (options_.validate) {
    absl::Status valid = options_.validate(lease);
    if (!valid.ok()) return give_back(absl::StrCat("invalid lease: ", valid.message()));
  }
  if (held() >= options_.capacity) return give_back("over capacity");
  state_.emplace(id, State::kQueued);
  queued_.push_back(Queued{std::move(lease), now});
  NoteHeld();
  return {Admission::kQueued, ""};
}

LeaseBook::Fate LeaseBook::FateOf(const Queued& q, uint64_t version, absl::Time now) const {
  const rlvr::v1::WorkLease& lease = q.lease;
  if (lease.deadline_unix_ms() > 0 && absl::ToUnixMillis(now) > lease.deadline_unix_ms()) {
    return Fate::kExpired;
  }
  if (version == 0 || lease.min_policy_version() > version) {
    // The learner only asks for versions it has published, so the weights
    // are on their way: wait, but not forever (a weight watch that keeps
    // failing must not pin the learner's credit).
    return now - q.received > options_.stale_lease_wait ? Fate::kStale : Fate::kWait;
  }
  return Fate::kReady;
}

bool LeaseBook::Actionable(uint64_t version, absl::Time now) const {
  return std::any_of(queued_.begin(), queued_.end(),
                     [&](const Queued& q) { return FateOf(q, version, now) != Fate::kWait; });
}

LeaseBook::Take LeaseBook::TakeBatch(uint64_t version, absl::Time now) {
  CHECK(generating_.empty()) << "LeaseBook::TakeBatch with a batch in generation";
  return TakeLeases(version, now, options_.capacity);
}

LeaseBook::Take LeaseBook::TakeLeases(uint64_t version, absl::Time now, int max_leases) {
  Take take;
  GiveBack stale{{}, "weights for min_policy_version did not arrive"};
  GiveBack expired{{}, "lease deadline passed"};
  std::deque<Queued> keep;
  for (Queued& q : queued_) {
    const uint64_t id = q.lease.lease_id();
    switch (FateOf(q, version, now)) {
      case Fate::kReady:
        if (static_cast<int>(take.batch.size()) < max_leases) {
          state_[id] = State::kGenerating;
          generating_.push_back(Generating{id, session_});
          take.batch.push_back(std::move(q.lease));
        } else {
          keep.push_back(std::move(q));
        }
        break;
      case Fate::kWait:
        keep.push_back(std::move(q));
        break;
      case Fate::kStale:
        state_.erase(id);
        stale.lease_ids.push_back(id);
        break;
      case Fate::kExpired:
        state_.erase(id);
        expired.lease_ids.push_back(id);
        break;
    }
  }
  queued_ = std::move(keep);
  for (GiveBack* g : {&stale, &expired}) {
    if (g->lease_ids.empty()) continue;
    counters_.given_back += g->lease_ids.size();
    take.give_back.push_back(std::move(*g));
  }
  return take;
}

LeaseBook::Finish LeaseBook::FinishBatch(bool ok) {
  CHECK(!generating_.empty()) << "LeaseBook::FinishBatch without a batch in generation";
  // The leases of a batch share its session and are abandoned together.
  const uint64_t batch_session = generating_.front().session;
  const bool abandoned = generating_.front().abandoned;
  Finish finish;
  // Revoked leases ended already; the rest of the batch ends here.
  std::vector<uint64_t> ids;
  for (const Generating& g : generating_) {
    if (!g.revoked) ids.push_back(g.id);
  }
  generating_.clear();
  finish.revoked = std::move(revoked_generating_);
  revoked_generating_.clear();
  if (abandoned) {
    finish.kind = Finish::kAbandoned;
    finish.revoked.clear();
  } else if (!open_ || batch_session != session_) {
    finish.kind = Finish::kDropped;
    counters_.dropped += ids.size();
    finish.revoked.clear();
  } else if (ok) {
    finish.kind = Finish::kSubmit;
    for (uint64_t id : ids) state_[id] = State::kAwaitingAck;
    counters_.submitted += ids.size();
  } else {
    finish.kind = Finish::kGiveBack;
    for (uint64_t id : ids) state_.erase(id);
    counters_.given_back += ids.size();
    finish.give_back = GiveBack{std::move(ids), "generation error"};
    finish.revoked.clear();
  }
  return finish;
}

LeaseBook::Finish LeaseBook::FinishLease(uint64_t lease_id, bool ok) {
  auto it = std::find_if(generating_.begin(), generating_.end(),
                         [lease_id](const Generating& g) { return g.id == lease_id; });
  CHECK(it != generating_.end()) << "LeaseBook::FinishLease of lease " << lease_id
                                 << " not in generation";
  const Generating g = *it;
  generating_.erase(it);
  std::erase(revoked_generating_, lease_id);
  Finish finish;
  if (g.revoked) {
    finish.kind = Finish::kRevoked;  // Counted at Revoke.
  } else if (g.abandoned) {
    finish.kind = Finish::kAbandoned;  // Given back at shutdown.
  } else if (!open_ || g.session != session_) {
    finish.kind = Finish::kDropped;
    ++counters_.dropped;
  } else if (ok) {
    finish.kind = Finish::kSubmit;
    state_[lease_id] = State::kAwaitingAck;
    ++counters_.submitted;
  } else {
    finish.kind = Finish::kGiveBack;
    state_.erase(lease_id);
    ++counters_.given_back;
    finish.give_back = GiveBack{{lease_id}, "generation error"};
  }
  return finish;
}

std::vector<uint64_t> LeaseBook::Unwanted() const {
  std::vector<uint64_t> out;
  for (const Generating& g : generating_) {
    if (!Live(g)) out.push_back(g.id);
  }
  return out;
}

int LeaseBook::Revoke(uint64_t session, const std::vector<uint64_t>& lease_ids) {
  if (!open_ || session != session_) return 0;
  int revoked = 0;
  for (uint64_t id : lease_ids) {
    auto it = state_.find(id);
    if (it == state_.end() || it->second == State::kAwaitingAck) continue;
    if (it->second == State::kQueued) {
      std::erase_if(queued_, [id](const Queued& q) { return q.lease.lease_id() == id; });
    } else {
      for (Generating& g : generating_) {
        if (g.id == id) g.revoked = true;
      }
      revoked_generating_.push_back(id);
    }
    state_.erase(it);
    ++revoked;
  }
  counters_.revoked += static_cast<uint64_t>(revoked);
  return revoked;
}

bool LeaseBook::Ack(uint64_t lease_id) {
  auto it = state_.find(lease_id);
  if (it == state_.end() || it->second != State::kAwaitingAck) {
    ++counters_.unknown_acks;
    return false;
  }
  state_.erase(it);
  ++counters_.acked;
  return true;
}

GiveBack LeaseBook::GiveBackUnfinished(bool abandon_batch) {
  GiveBack out{{}, "sigterm"};
  if (!open_) return out;
  if (abandon_batch) {
    for (Generating& g : generating_) {
      if (g.session != session_ || g.abandoned) continue;
      g.abandoned = true;
      if (!g.revoked) out.lease_ids.push_back(g.id);
    }
  }
  for (const Queued& q : queued_) out.lease_ids.push_back(q.lease.lease_id());
  queued_.clear();
  for (uint64_t id : out.lease_ids) state_.erase(id);
  counters_.given_back += out.lease_ids.size();
  return out;
}

int LeaseBook::held() const {
  int held = static_cast<int>(queued_.size());
  for (const Generating& g : generating_) held += Live(g) ? 1 : 0;
  return held;
}

int LeaseBook::awaiting_ack() const {
  return static_cast<int>(std::count_if(
      state_.begin(), state_.end(), [](const auto& e) { return e.second == State::kAwaitingAck; }));
}

void LeaseBook::NoteHeld() { counters_.max_held = std::max(counters_.max_held, held()); }

}  // namespace rlvr::actor
