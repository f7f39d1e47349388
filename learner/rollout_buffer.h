// RolloutBuffer: where the learner's leasable work comes from and where
// accepted groups wait for the trainer. It owns the dataset cursor
// (prompt_cursor.h) and the newest published version; the lease table
// (lease_table.h) asks it which slot to lease next, hands it back the slots of
// lost leases and the groups it accepted, and the trainer takes updates from it.
//
// Two implementations, chosen by max_policy_lag (MakeRolloutBuffer):
//
//  - Synchronous window (lag 0): each update trains exactly the next
//    groups_per_update slots of the cursor (the "window"), all sampled with the
//    newest version, in cursor order. Publish opens the next window once the
//    previous one was taken; slots of lost leases return to their window entry.
//  - Asynchronous (lag >= 1), staleness-aware: a slot is leased only if its
//    group can still be trained within the lag. Work in flight (buffered groups
//    plus outstanding leases) is assigned to the coming updates in order,
//    groups_per_update each; the next lease goes to update k = next + in_flight
//    / groups_per_update (next: the version the next update is taken at) and is
//    granted only if k <= latest + lag, with min_version = k - lag (a group of
//    that version is still fresh at update k). Updates take the oldest versions
//    first (then acceptance order); groups that Publish makes older than
//    latest - lag are dropped and their slots re-queued.
//
// Accounting: every slot taken from the cursor is in exactly one of {leased
// (the caller's), buffered, handed to the trainer, re-queued}; it leaves only
// through MarkTrained.
//
// Thread safety: none (thread-compatible); Ingest guards it with its mutex.
#ifndef RLVR_LEARNER_ROLLOUT_BUFFER_H_
#define RLVR_LEARNER_ROLLOUT_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "learner/core/group.h"
#include "learner/prompt_cursor.h"

namespace rlvr::learner {

// A group handed to the trainer, with its cursor slot for CompleteUpdate.
struct TrainingGroup {
  Group group;
  CursorSlot slot;
};

struct RolloutBufferOptions {
  int max_policy_lag = 1;      // 0 = synchronous window; versions otherwise.
  int buffer_groups = 64;      // Asynchronous: buffered + outstanding bound (groups).
  int groups_per_update = 32;  // Groups per update (> 0).
  uint64_t num_prompts = 1;    // Training prompts (>= 1).
  uint64_t seed = 1;           // Cursor shuffle seed.
};

// The next slot to lease and the oldest version its group may have.
struct SlotReservation {
  CursorSlot slot;
  uint64_t min_version = 0;
};

class RolloutBuffer {
 public:
  virtual ~RolloutBuffer() = default;

  // A new version is available (versions must not decrease; a repeat is a
  // no-op). Returns the groups it made stale (asynchronous), whose slots are
  // already re-queued.
  virtual std::vector<TrainingGroup> Publish(uint64_t version) = 0;
  // The next slot to lease with `outstanding` leases out, or nullopt when
  // none may be leased now (no version yet, window fully leased, no credit).
  virtual std::optional<SlotReservation> Reserve(size_t outstanding) = 0;
  // A reserved slot whose lease was lost goes back (to its window entry, or
  // to the cursor's re-queue set).
  virtual void Requeue(const CursorSlot& slot) = 0;
  // An accepted group for a reserved slot (its lease is closed).
  virtual void Add(TrainingGroup group) = 0;
  // Whether Take() would return an update now.
  virtual bool Ready() const = 0;
  // groups_per_update groups for the trainer (empty if !Ready()).
  virtual std::vector<TrainingGroup> Take() = 0;
  // Accepted groups not yet taken.
  virtual size_t buffered() const = 0;

  // The trained slots leave the epoch.
  void MarkTrained(const CursorSlot& slot) { cursor_.MarkTrained(slot); }
  uint64_t latest_version() const { return latest_; }
  bool published() const { return published_; }
  const PromptCursor& cursor() const { return cursor_; }
  // Replaces the cursor's state (PromptCursor::Restore); before any Reserve.
  absl::Status RestoreCursor(const std::string& json) { return cursor_.Restore(json); }

 protected:
  explicit RolloutBuffer(const RolloutBufferOptions& options)
      : options_(options), cursor_(options.num_prompts, options.seed) {}
  // Records `version`; false if it does not advance (a warning is logged).
  bool Advance(uint64_t version);

  const RolloutBufferOptions options_;
  PromptCursor cursor_;
  uint64_t latest_ = 0;
  bool published_ = false;
};

std::unique_ptr<RolloutBuffer> MakeRolloutBuffer(const RolloutBufferOptions& options);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_ROLLOUT_BUFFER_H_
