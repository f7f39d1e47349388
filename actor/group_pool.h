// Sent RolloutGroups, handed back by a session's writer thread for the next
// generation batch to fill.
//
// A group is ~20 heap blocks (its completions and their repeated fields).
// Without the pool, generation allocated them and the writer thread freed
// them after sending: every block crossed threads, glibc's slow path, and
// every group was written into memory that was not in cache. A recycled
// group keeps its cleared completions and their capacity, so once warm,
// building a group allocates nothing and writes into memory the writer
// just read. Thread-safe.
#ifndef RLVR_ACTOR_GROUP_POOL_H_
#define RLVR_ACTOR_GROUP_POOL_H_

#include <cstddef>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::actor {

class GroupPool {
 public:
  // Keeps at most `max_groups` groups; more are freed.
  explicit GroupPool(size_t max_groups) : max_groups_(max_groups) {}

  // `n` empty groups: recycled ones (cleared, keeping their capacity)
  // first, then new ones.
  std::vector<rlvr::v1::RolloutGroup> Take(size_t n) ABSL_LOCKS_EXCLUDED(mu_);

  // Takes back the groups of a message that was sent (its group or
  // group_batch); other messages are left alone.
  void Give(rlvr::v1::ActorMessage&& sent) ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t max_groups_;
  mutable absl::Mutex mu_;
  std::vector<rlvr::v1::RolloutGroup> groups_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_GROUP_POOL_H_
