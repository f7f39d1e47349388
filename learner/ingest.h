// Ingest: the threaded shell of the learner's rank-0 work ledger. Every
// decision (grants, verdicts, expiry, revocation, the buffer and the
// synchronous window, checkpoint state) is LeaseTable's (lease_table.h, with
// rollout_buffer.h); Ingest owns the mutex, the expiry thread, the trainer's
// wait, the metrics and the callbacks, and carries out what the table answers.
// Session reactors call OpenSession/Grant/Submit/Return/CloseSession; the
// training loop calls WaitForUpdate/CompleteUpdate/Publish. A background
// thread (Start/Stop) expires leases whose deadline passed.
//
// Modes (see rollout_buffer.h): max_policy_lag == 0 is synchronous: each
// update trains exactly the next groups_per_update slots of the cursor;
// leases for the next window are granted only after Publish. max_policy_lag
// >= 1 is asynchronous with staleness-aware credits: leases are granted only
// for work that can be trained within the lag, and Publish revokes the
// outstanding leases whose groups would arrive stale (the revoke callback
// tells their sessions).
//
// Thread safety: all methods are thread-safe. Methods never block except
// WaitForUpdate. Callbacks are invoked without Ingest's lock held.
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
#include "common/config/run_config.h"
#include "learner/learner_metrics.h"
#include "learner/lease_table.h"
#include "learner/received_group.h"
#include "rlvr/v1/ingest.pb.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::learner {

// Everything GetStatus and metrics.jsonl need from the ingest side: one
// definition, proto/rlvr/v1/ingest.proto, published by
// learner/diagnostics/ingest_snapshot.h.
using rlvr::v1::IngestSnapshot;

// The IngestSnapshot field counting the groups rejected for `reason` (a
// rlvr.v1.RejectReason value): groups_rejected_<reason in lower case>, or
// null for UNSPECIFIED, values outside the enum and reasons without a field.
const google::protobuf::FieldDescriptor* RejectedGroupsField(int reason);

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
  // Called (without locks held, from Publish(version)) with the leases of
  // `session` revoked as doomed (asynchronous mode); their prompts are
  // re-queued already, the session should tell its actor to drop them. Set
  // before Start().
  using RevokeCallback = std::function<void(
      uint64_t session, const std::vector<uint64_t>& lease_ids, uint64_t version)>;
  void SetRevokeCallback(RevokeCallback revoke);

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
  // The same, appended to `out` (on its arena, if it has one: the session
  // builds its LeaseBatch there, so granting allocates nothing per lease).
  void Grant(uint64_t session, google::protobuf::RepeatedPtrField<rlvr::v1::WorkLease>* out);
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
  rlvr::v1::Ack Submit(uint64_t session, const rlvr::v1::RolloutGroup& group, size_t message_bytes);
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
  // window, in cursor order; asynchronous: the buffered groups of the oldest
  // versions) or `stop()` returns true (checked every poll) or Stop() was
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
  // next window; in asynchronous mode buffered groups now stale are dropped
  // and doomed leases revoked (revoke callback). Versions must increase.
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
  // Publishes the table's counters and gauges to metrics_ (deltas since the
  // last call).
  void SyncMetricsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SubmitReceived's body; `refill` gives accepted slots a recycled Group.
  void SubmitAll(uint64_t session, std::vector<ReceivedGroup>* groups, size_t count, bool refill,
                 google::protobuf::RepeatedPtrField<rlvr::v1::Ack>* acks);
  void Wake();
  void ExpiryLoop();

  const IngestOptions options_;
  LearnerMetrics* const metrics_;
  std::function<void()> wake_;
  std::function<void(uint64_t, const std::string&)> evict_;
  RevokeCallback revoke_;

  absl::Mutex mu_;
  absl::CondVar cv_;  // Signalled when an update may be ready or on Stop.
  LeaseTable table_ ABSL_GUARDED_BY(mu_);
  LeaseTableCounters synced_ ABSL_GUARDED_BY(mu_);  // As of the last SyncMetricsLocked.
  // Recycled groups (RecycleGroups), refilled by the next accepted groups.
  std::vector<Group> spare_groups_ ABSL_GUARDED_BY(mu_);

  absl::Mutex thread_mu_;
  bool thread_stop_ ABSL_GUARDED_BY(thread_mu_) = false;
  std::thread expiry_thread_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_INGEST_H_
