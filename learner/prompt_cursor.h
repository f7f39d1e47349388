// The dataset cursor: which training prompt is leased next, epoch by epoch,
// with exactly-once accounting.
//
// Each epoch visits every prompt once, in an order shuffled by (seed, epoch).
// A slot (epoch, position) is handed out by Take(); it leaves the epoch only
// when MarkTrained() is called for it. A slot whose lease is lost goes back
// with Requeue() and is handed out again before any fresh slot, smallest
// (epoch, position) first. A new epoch opens when every slot of the open ones
// has been handed out; an epoch closes when all its slots are trained.
//
// Thread safety: none (owned by Ingest, used under its mutex).
#ifndef RLVR_LEARNER_PROMPT_CURSOR_H_
#define RLVR_LEARNER_PROMPT_CURSOR_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rlvr::learner {

struct CursorSlot {
  uint64_t epoch = 0;         // Dataset epoch (from 0).
  uint64_t position = 0;      // Position in the epoch's shuffled order.
  uint64_t prompt_index = 0;  // Index into the task's training prompts.
  auto operator<=>(const CursorSlot&) const = default;
};

class PromptCursor {
 public:
  // `num_prompts` >= 1.
  PromptCursor(uint64_t num_prompts, uint64_t seed);

  // The next slot to lease (requeued slots first). Never fails.
  CursorSlot Take();
  // Gives a handed-out, untrained slot back.
  void Requeue(const CursorSlot& slot);
  // Marks a handed-out slot as trained (idempotent).
  void MarkTrained(const CursorSlot& slot);

  // Oldest open epoch.
  uint64_t epoch() const;
  // Slots handed out (fresh) in the newest open epoch.
  uint64_t cursor() const;
  // Slots waiting in the requeue set.
  uint64_t requeued() const;
  uint64_t num_prompts() const { return num_prompts_; }

  // Compact JSON: per open epoch the fresh cursor and the handed-out slots
  // not yet trained. Restore() requeues those, so leases outstanding and
  // groups buffered at save time are re-issued after a restart.
  std::string Serialize() const;
  // Replaces the state; the seed and prompt count must match the saved run.
  absl::Status Restore(const std::string& json);

  // The sampling seed of a lease for (seed, epoch, prompt index).
  static uint64_t SlotSeed(uint64_t seed, uint64_t epoch, uint64_t prompt_index);

 private:
  struct Epoch {
    std::vector<uint32_t> order;  // position -> prompt index.
    uint64_t next_fresh = 0;      // Positions [0, next_fresh) were handed out.
    std::vector<bool> trained;    // Per position.
    uint64_t trained_count = 0;
    std::set<uint64_t> requeued;  // Positions waiting to be handed out again.
  };
  Epoch& Open(uint64_t epoch);
  std::vector<uint32_t> Order(uint64_t epoch) const;

  uint64_t num_prompts_;
  uint64_t seed_;
  uint64_t next_epoch_ = 0;  // The epoch Open() creates next.
  std::map<uint64_t, Epoch> epochs_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_PROMPT_CURSOR_H_
