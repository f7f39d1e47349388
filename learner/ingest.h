// Ingest: the learner's rank-0 work ledger. Owns the dataset cursor, the
// leases, the credits, the rollout buffer and the synchronous-mode window.
// Session reactors call OpenSession/Grant/Submit/Return/CloseSession; the
// training loop calls WaitForUpdate/CompleteUpdate/Publish. A background
// thread (Start/Stop) expires leases whose deadline passed.
//
// Accounting invariant: every handed-out cursor slot is in exactly one of
// {leased, buffered, training, requeued}; a slot leaves the epoch only through
// CompleteUpdate (trained, including groups the batcher drops as zero
// variance). Lost leases (disconnect, return, deadline, rejected or stale
// group) go back to the queue and count in leases_reissued.
//
// Modes: max_policy_lag == 0 is synchronous: each update trains exactly the
// next groups_per_update slots of the cursor (its "window"), all sampled with
// the newest version, in cursor order; leases for the next window are granted
// only after Publish. max_policy_lag >= 1 is asynchronous: leases are granted
// while buffered + outstanding < buffer_groups; groups older than
// version - lag are rejected at submission or dropped (and re-queued) when
// the trainer takes them.
//
// Hung sessions: a session one of whose leases expires gets no new lease
// until it sends a group (accepted or not) or returns leases; after
// lease_expiries_to_close consecutive expiries it is closed (evict callback).
// Freed credits go first to the sessions that accepted a group most recently
// (SessionsByProgress).
//
// Thread safety: all methods are thread-safe. Methods never block except
// WaitForUpdate. The wake callback is invoked without Ingest's lock held.
#ifndef RLVR_LEARNER_INGEST_H_
#define RLVR_LEARNER_INGEST_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/run_config.h"
#include "learner/core/group.h"
#include "learner/learner_metrics.h"
#include "learner/prompt_cursor.h"
#include "learner/received_group.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::learner {

// One training prompt as leased to actors.
struct LeasePrompt {
  std::string id;               // Dataset id.
  std::vector<int> tokens;      // BOS + Encode(text).
  std::string answer;           // Reference answer for the verifier.
};

struct IngestOptions {
  int group_size = 8;                 // G completions per lease.
  SamplingConfig sampling;            // Copied into every lease.
  int max_policy_lag = 1;             // 0 = synchronous mode.
  int buffer_groups = 64;             // Credits: buffered + outstanding bound.
  int groups_per_update = 32;         // Groups per update.
  double lease_timeout_s = 60.0;      // Lease deadline from grant.
  int64_t max_message_bytes = 16 << 20;  // Larger ActorMessages are rejected OVERSIZE.
  int max_sessions = 256;             // Concurrent sessions.
  // Per-session token bucket (groups/s, burst of max(1, rate)); over-limit
  // submissions are rejected RATE_LIMITED (a live lease is re-queued). 0 = off.
  double max_groups_per_s = 0.0;
  // Cap on the estimated bytes of accepted groups not yet handed to the
  // trainer; a group that would exceed it is rejected UNAVAILABLE (lease
  // re-queued). <= 0 = off.
  int64_t buffer_bytes = 512LL << 20;
  uint64_t seed = 1;                  // Shuffle and sampling seeds.
  std::string task_name = "arithmetic";  // Copied into leases.
  int vocab_size = 1;                 // Token ids must be below this.
  int eos_id = 0;                     // Stop token put in every lease.
  std::vector<int> stop_ids;          // If non-empty: the stop tokens put instead of eos_id.
  double expiry_poll_s = 0.05;        // How often the expiry thread looks.
  // Hello.capacity is clamped to this (OpenSession).
  int max_capacity = 1024;
  // Hung sessions: a session one of whose leases expires is suspended (no
  // new leases) until it sends a group or returns leases; after this many
  // consecutive expired leases it is closed and the evict callback told.
  // 0 = suspended, never closed.
  int lease_expiries_to_close = 8;
};

// Everything GetStatus needs from the ingest side.
struct IngestSnapshot {
  uint32_t sessions = 0;
  uint32_t buffer_groups = 0;
  uint32_t buffer_capacity = 0;
  uint32_t leases_outstanding = 0;
  uint64_t groups_accepted = 0;
  uint64_t groups_rejected = 0;
  uint64_t leases_reissued = 0;
  uint64_t leases_granted = 0;
  uint64_t latest_version = 0;
  uint64_t epoch = 0;
  uint64_t cursor = 0;
};

// A group handed to the trainer, with its cursor slot for CompleteUpdate.
struct TrainingGroup {
  Group group;
  CursorSlot slot;
};

// The encoded size of an ActorMessage carrying `group` alone, as far as a
// comparison with `limit` needs it: a cheap upper bound when that bound is
// within `limit`, else the exact size. So `result > limit` is exact, and
// the common case does not walk every varint (ByteSizeLong does).
size_t MessageBytesForLimit(const rlvr::v1::RolloutGroup& group, int64_t limit);

class Ingest {
 public:
  // `prompts` is the task's training split (non-empty); `metrics` must outlive
  // this object.
  Ingest(IngestOptions options, std::vector<LeasePrompt> prompts, LearnerMetrics* metrics);
  ~Ingest();
  Ingest(const Ingest&) = delete;
  Ingest& operator=(const Ingest&) = delete;

  // Starts / stops the lease-expiry thread. Stop also closes: no more leases,
  // submissions answered UNAVAILABLE, WaitForUpdate returns Cancelled.
  void Start();
  void Stop();

  // Called (without locks held) whenever credits may have become available,
  // so that sessions ask Grant() again. Set before Start().
  void SetWakeCallback(std::function<void()> wake);
  // Called (without locks held, from the expiry thread) when a session is
  // closed for lease_expiries_to_close consecutive expired leases, with a
  // sentence saying why; the session's stream should end. Set before Start().
  void SetEvictCallback(std::function<void(uint64_t session, const std::string& why)> evict);

  // --- Sessions (called from gRPC reactors; never block) ---
  // RESOURCE_EXHAUSTED beyond max_sessions, INVALID_ARGUMENT for capacity < 1.
  // A capacity above max_capacity is clamped to it.
  absl::StatusOr<uint64_t> OpenSession(int capacity);
  // Open sessions that may be granted leases (not suspended), those that
  // made progress (accepted a group) most recently first: the order in
  // which freed credits should be offered.
  std::vector<uint64_t> SessionsByProgress();
  // Whether `session` is suspended for expired leases (false if unknown).
  bool Suspended(uint64_t session);
  // Re-queues the session's outstanding leases. Idempotent.
  void CloseSession(uint64_t session);
  // As many new leases as the credits allow for this session.
  std::vector<rlvr::v1::WorkLease> Grant(uint64_t session);
  // Validates and buffers groups received by the wire decoder
  // (rollout_decoder.h), (*groups)[0, count), under one lock; a bad group
  // is rejected alone. Appends one Ack per group, in order, to `acks`. An
  // accepted group's Group moves into the buffer and its slot receives a
  // recycled Group (RecycleGroups), so the next decode reuses memory.
  void SubmitReceived(uint64_t session, std::vector<ReceivedGroup>* groups, size_t count,
                      google::protobuf::RepeatedPtrField<rlvr::v1::Ack>* acks);
  // A parsed group into a slot for SubmitReceived, held to
  // max_message_bytes as if it had come alone (MessageBytesForLimit).
  void ConvertParsed(const rlvr::v1::RolloutGroup& group, ReceivedGroup* out) const;
  // The same for a parsed group; returns the Ack. `message_bytes` is the
  // ActorMessage size on the wire (MessageBytesForLimit is enough).
  rlvr::v1::Ack Submit(uint64_t session, const rlvr::v1::RolloutGroup& group,
                       size_t message_bytes);
  // The same for every group of a parsed RolloutBatch. Each group is held
  // to max_message_bytes as if it had come alone (OVERSIZE;
  // MessageBytesForLimit).
  void SubmitBatch(uint64_t session, const rlvr::v1::RolloutBatch& batch,
                   google::protobuf::RepeatedPtrField<rlvr::v1::Ack>* acks);
  // Leases given back by the actor.
  void Return(uint64_t session, const std::vector<uint64_t>& lease_ids);
  // Stops granting (shutdown drain); submissions are still accepted.
  void StopGranting();

  // --- Training loop (one thread) ---
  // Blocks until groups_per_update groups are ready (synchronous: the whole
  // window, in cursor order; asynchronous: the oldest buffered non-stale
  // groups) or `stop()` returns true (checked every poll) or Stop() was
  // called: then Cancelled.
  absl::StatusOr<std::vector<TrainingGroup>> WaitForUpdate(const std::function<bool()>& stop);
  // Marks the groups' slots trained.
  void CompleteUpdate(const std::vector<TrainingGroup>& groups);
  // Takes back groups nothing refers to any more (after CompleteUpdate and
  // whatever else reads them): groups accepted later reuse their memory, so
  // the session threads allocate nothing per group and the trainer's thread
  // frees nothing (a group is ~20 allocations; freeing them on another
  // thread than the one that allocated them was the costliest part of
  // accepting a group). Keeps at most buffer_groups + groups_per_update.
  void RecycleGroups(std::vector<TrainingGroup>&& groups);
  // A new version is available to actors: in synchronous mode this opens the
  // next window. Versions must increase.
  void Publish(uint64_t version);
  // Expires leases whose deadline is before `now` (the thread calls this).
  void ExpireLeases(absl::Time now);

  // Opaque state for checkpoints: cursor + lease id counter. Leases and
  // buffered groups at save time are re-issued after Restore.
  std::string SerializeState();
  // Call before any lease is granted.
  absl::Status RestoreState(const std::string& state);

  IngestSnapshot Snapshot();
  const IngestOptions& options() const { return options_; }
  LearnerMetrics* metrics() const { return metrics_; }

 private:
  enum class Closed { kAccepted, kExpired, kLost };
  struct Lease {
    uint64_t id = 0;
    uint64_t session = 0;
    CursorSlot slot;
    absl::Time deadline;
    uint64_t min_version = 0;
  };
  struct Session {
    int capacity = 1;
    int outstanding = 0;
    double rate_tokens = -1.0;        // Token bucket; < 0 until first use.
    absl::Time rate_time;             // Last refill.
    int expired_streak = 0;           // Leases expired since the last answer.
    bool suspended = false;           // No grants until the next answer.
    absl::Time last_progress;         // Last accepted group (or the open).
  };
  struct WindowEntry {
    CursorSlot slot;
    uint64_t lease_id = 0;            // 0 when not leased.
    std::optional<Group> group;       // Set once accepted.
  };

  // Returns a slot to the queue (window entry or cursor).
  void RequeueLocked(const CursorSlot& slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops a live lease and re-queues its slot.
  void LoseLeaseLocked(uint64_t lease_id, Closed why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether WaitForUpdate would hand out an update now (the same test).
  bool UpdateReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordClosedLocked(uint64_t lease_id, Closed why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  rlvr::v1::Ack RejectLocked(uint64_t lease_id, rlvr::v1::RejectReason reason,
                             std::string detail) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Submit's body, without gauges or wake-up; sets *wake when a lease went
  // back to the queue (credits for other sessions).
  // An accepted group's Group is moved out of `group`.
  rlvr::v1::Ack SubmitLocked(uint64_t session, ReceivedGroup* group, bool* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SubmitReceived's body; `refill` gives accepted slots a recycled Group.
  void SubmitAll(uint64_t session, std::vector<ReceivedGroup>* groups, size_t count,
                 bool refill, google::protobuf::RepeatedPtrField<rlvr::v1::Ack>* acks);
  void UpdateGaugesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes one token from the session's rate bucket; false if over the limit.
  bool TakeRateTokenLocked(uint64_t session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool SyncMode() const { return options_.max_policy_lag == 0; }
  void Wake();
  void ExpiryLoop();
  // The session sent something: it is not hung (clears a suspension).
  void AnsweredLocked(uint64_t session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateSuspendedGaugeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const IngestOptions options_;
  const std::vector<LeasePrompt> prompts_;
  LearnerMetrics* const metrics_;
  std::function<void()> wake_;
  std::function<void(uint64_t, const std::string&)> evict_;

  absl::Mutex mu_;
  absl::CondVar cv_;  // Signalled when groups are accepted or on Stop.
  PromptCursor cursor_ ABSL_GUARDED_BY(mu_);
  uint64_t next_lease_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_session_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t latest_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool published_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool granting_ ABSL_GUARDED_BY(mu_) = true;
  std::map<uint64_t, Session> sessions_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Lease> leases_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Closed> closed_ ABSL_GUARDED_BY(mu_);  // Bounded history.
  // Recycled groups (RecycleGroups), refilled by the next accepted groups.
  std::vector<Group> spare_groups_ ABSL_GUARDED_BY(mu_);
  // Asynchronous mode buffer, in acceptance order.
  std::deque<TrainingGroup> buffer_ ABSL_GUARDED_BY(mu_);
  // Synchronous mode window (empty until the first Publish).
  std::vector<WindowEntry> window_ ABSL_GUARDED_BY(mu_);
  bool window_taken_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t accepted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t rejected_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reissued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t granted_ ABSL_GUARDED_BY(mu_) = 0;
  // Estimated bytes of accepted groups not yet handed to the trainer.
  int64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;

  absl::Mutex thread_mu_;
  bool thread_stop_ ABSL_GUARDED_BY(thread_mu_) = false;
  std::thread expiry_thread_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_INGEST_H_
