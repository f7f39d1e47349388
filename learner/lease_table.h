// LeaseTable: the learner's rank-0 work ledger as a pure state machine. It
// holds the actor sessions, the outstanding leases and the RolloutBuffer
// (rollout_buffer.h: the dataset cursor, the accepted groups, the synchronous
// window or the staleness-aware asynchronous credits), and decides every
// grant, verdict, expiry, revocation and update. No locks, threads, gRPC or
// clocks: time is passed in. Ingest (ingest.h) is its threaded shell.
//
// A lease moves through
//
//   Grant ─► outstanding ─► Submit accepted ─► buffered ─► TakeUpdate ─► CompleteUpdate
//                │
//                └ Submit rejected, Return, Expire, CloseSession, Revoke: lost
//
// Invariant ("never lose, never double-count"): every slot taken from the
// cursor is in exactly one of {outstanding lease, buffered, taken for
// training, re-queued}; it leaves the epoch only through CompleteUpdate. A
// lost lease's slot is re-queued at once and counted in `reissued`; its id is
// remembered (a bounded history), so a late group for it is rejected with the
// reason (EXPIRED_LEASE, STALE_VERSION for a revoked one, DUPLICATE for one
// already accepted, UNKNOWN_LEASE) and never buffered twice. Lease ids are
// never reused, across RestoreState included.
//
// Revocation (asynchronous mode): Publish(v) revokes every outstanding lease
// whose group would be stale at v (granted at version g with minimum version
// m: max(g, m) + lag < v): the slot is re-queued and the ids returned per
// session, for the actor to stop generating them. An actor that ignores the
// revocation only wastes the work: its late group is rejected STALE_VERSION.
//
// Hung sessions: a session one of whose leases expires gets no new lease
// until it answers (Answered: a group, accepted or not, or returned leases);
// after lease_expiries_to_close consecutive expiries it is closed (Expire
// returns it). SessionsByProgress orders the others by their last accepted group.
//
// Thread safety: none (thread-compatible); Ingest guards it with its mutex.
#ifndef RLVR_LEARNER_LEASE_TABLE_H_
#define RLVR_LEARNER_LEASE_TABLE_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config/run_config.h"
#include "learner/received_group.h"
#include "learner/rollout_buffer.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::learner {

// One training prompt as leased to actors.
struct LeasePrompt {
  std::string id;           // Dataset id.
  std::vector<int> tokens;  // BOS + Encode(text).
  std::string answer;       // Reference answer for the verifier.
};

struct IngestOptions {
  int group_size = 8;                    // G completions per lease.
  SamplingConfig sampling;               // Copied into every lease.
  int max_policy_lag = 1;                // 0 = synchronous mode.
  int buffer_groups = 64;                // Credits: buffered + outstanding bound.
  int groups_per_update = 32;            // Groups per update.
  double lease_timeout_s = 60.0;         // Lease deadline from grant.
  int64_t max_message_bytes = 16 << 20;  // Larger ActorMessages are rejected OVERSIZE.
  int max_sessions = 256;                // Concurrent sessions.
  // Per-session token bucket (groups/s, burst of max(1, rate)) for groups that
  // answer no live lease of the session; over-limit ones are rejected
  // RATE_LIMITED. Groups for live leases are never metered. 0 = off.
  double max_groups_per_s = 0.0;
  // Cap on the estimated bytes of accepted groups not yet handed to the
  // trainer; a group that would exceed it is rejected UNAVAILABLE (lease
  // re-queued). <= 0 = off.
  int64_t buffer_bytes = 512LL << 20;
  uint64_t seed = 1;                     // Shuffle and sampling seeds.
  std::string task_name = "arithmetic";  // Copied into leases.
  int vocab_size = 1;                    // Token ids must be below this.
  int eos_id = 0;                        // Stop token put in every lease.
  std::vector<int> stop_ids;             // If non-empty: the stop tokens put instead of eos_id.
  double expiry_poll_s = 0.05;           // How often Ingest's expiry thread looks, seconds.
  // Hello.capacity is clamped to this (OpenSession).
  int max_capacity = 1024;
  // Hung sessions: a session one of whose leases expires is suspended (no
  // new leases) until it sends a group or returns leases; after this many
  // consecutive expired leases it is closed and the evict callback told.
  // 0 = suspended, never closed.
  int lease_expiries_to_close = 8;
};

// What the table counted since construction.
struct LeaseTableCounters {
  uint64_t granted = 0;                           // Leases granted.
  uint64_t accepted = 0;                          // Groups buffered.
  uint64_t rejected = 0;                          // Groups rejected (any reason).
  uint64_t reissued = 0;                          // Slots re-queued (lost leases, stale groups).
  uint64_t dropped_stale = 0;                     // Buffered groups dropped as stale by Publish.
  uint64_t revoked = 0;                           // Leases revoked by Publish (also in reissued).
  std::array<uint64_t, 16> rejected_by_reason{};  // By RejectReason value.
};

// The estimated memory of a buffered group (buffer_bytes accounting).
int64_t GroupBytes(const Group& group);

class LeaseTable {
 public:
  // `prompts` is the task's training split (non-empty).
  LeaseTable(IngestOptions options, std::vector<LeasePrompt> prompts);

  // ---- Sessions.
  // RESOURCE_EXHAUSTED beyond max_sessions, INVALID_ARGUMENT for capacity < 1,
  // UNAVAILABLE once stopped. A capacity above max_capacity is clamped to it.
  absl::StatusOr<uint64_t> OpenSession(int capacity, absl::Time now);
  // Re-queues the session's outstanding leases; how many (0 if unknown). Idempotent.
  size_t CloseSession(uint64_t session);
  // Sessions that may be granted leases (not suspended), most recent progress first.
  std::vector<uint64_t> SessionsByProgress() const;
  bool Suspended(uint64_t session) const;
  // The session sent something: it is not hung (clears a suspension).
  void Answered(uint64_t session);

  // ---- Leases.
  // As many new leases as the session's capacity and the buffer allow.
  std::vector<rlvr::v1::WorkLease> Grant(uint64_t session, absl::Time now);
  // The same, appended to `out` (on its arena, if it has one); how many.
  size_t Grant(uint64_t session, absl::Time now,
               google::protobuf::RepeatedPtrField<rlvr::v1::WorkLease>* out);
  // Validates one group and buffers it or rejects it (a live lease is then
  // re-queued: *requeued set). An accepted group's Group is moved out.
  rlvr::v1::Ack Submit(uint64_t session, ReceivedGroup* group, absl::Time now, bool* requeued);
  // Leases given back by the session; how many were live.
  size_t Return(uint64_t session, const std::vector<uint64_t>& lease_ids);

  struct Expiry {
    size_t expired = 0;  // Leases past their deadline, re-queued.
    // Sessions closed for lease_expiries_to_close expiries in a row, with why.
    std::vector<std::pair<uint64_t, std::string>> evicted;
  };
  // Expires leases whose deadline is before `now`.
  Expiry Expire(absl::Time now);

  // ---- Versions and updates.
  struct Published {
    std::vector<TrainingGroup> stale;                   // Dropped, slots re-queued.
    std::map<uint64_t, std::vector<uint64_t>> revoked;  // Session -> lease ids.
  };
  // A new version is available to actors (see the header comment).
  Published Publish(uint64_t version);
  bool UpdateReady() const { return buffer_->Ready(); }
  // groups_per_update groups for the trainer, or none if !UpdateReady().
  std::vector<TrainingGroup> TakeUpdate();
  // Marks the groups' slots trained.
  void CompleteUpdate(const std::vector<TrainingGroup>& groups);

  // ---- Shutdown.
  void StopGranting() { granting_ = false; }
  // No more sessions or leases; submissions are rejected UNAVAILABLE.
  void Stop() {
    stopped_ = true;
    granting_ = false;
  }
  bool stopped() const { return stopped_; }

  // ---- Checkpoints: cursor + lease id counter. Leases and buffered groups at
  // save time are re-issued after RestoreState, which comes before any grant.
  std::string SerializeState() const;
  absl::Status RestoreState(const std::string& state);

  const IngestOptions& options() const { return options_; }
  const LeaseTableCounters& counters() const { return counters_; }
  size_t sessions() const { return sessions_.size(); }
  size_t suspended_sessions() const;
  size_t outstanding() const { return leases_.size(); }
  size_t buffered() const { return buffer_->buffered(); }
  uint64_t latest_version() const { return buffer_->latest_version(); }
  const PromptCursor& cursor() const { return buffer_->cursor(); }

 private:
  enum class Closed { kAccepted, kExpired, kLost, kRevoked };
  struct Lease {
    uint64_t session = 0;
    CursorSlot slot;
    absl::Time deadline;
    uint64_t min_version = 0;
    uint64_t granted_at = 0;  // Newest version at grant.
  };
  struct Session {
    int capacity = 1;
    int outstanding = 0;
    double rate_tokens = -1.0;  // Token bucket; < 0 until first use.
    absl::Time rate_time;       // Last refill.
    int expired_streak = 0;     // Leases expired since the last answer.
    bool suspended = false;     // No grants until the next answer.
    absl::Time last_progress;   // Last accepted group (or the open).
  };

  // Drops a live lease and re-queues its slot.
  void Lose(uint64_t lease_id, Closed why);
  void RecordClosed(uint64_t lease_id, Closed why);
  rlvr::v1::Ack Reject(uint64_t lease_id, rlvr::v1::RejectReason reason, std::string detail);
  // The verdict on a group whose lease is not live on `session`.
  rlvr::v1::Ack RejectNotLive(uint64_t lease_id);
  bool TakeRateToken(uint64_t session, absl::Time now);
  void MakeWorkLease(uint64_t id, const Lease& lease, rlvr::v1::WorkLease* w) const;

  const IngestOptions options_;
  const std::vector<LeasePrompt> prompts_;
  std::unique_ptr<RolloutBuffer> buffer_;
  uint64_t next_lease_id_ = 1;
  uint64_t next_session_id_ = 1;
  bool stopped_ = false;
  bool granting_ = true;
  std::map<uint64_t, Session> sessions_;
  std::map<uint64_t, Lease> leases_;
  std::map<uint64_t, Closed> closed_;  // Bounded history.
  // Estimated bytes of accepted groups not yet handed to the trainer.
  int64_t held_bytes_ = 0;
  LeaseTableCounters counters_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_LEASE_TABLE_H_
