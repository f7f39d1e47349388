#include "actor/group_pool.h"

#include <utility>

namespace rlvr::actor {

std::vector<rlvr::v1::RolloutGroup> GroupPool::Take(size_t n) {
  std::vector<rlvr::v1::RolloutGroup> out(n);
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < n && !groups_.empty(); ++i) {
      out[i].Swap(&groups_.back());  // Same arena (none): swaps pointers only.
      groups_.pop_back();
    }
  }
  // Cleared here, by the thread that fills them: RepeatedPtrField::Clear
  // keeps the cleared completions for the next add_completions().
  for (rlvr::v1::RolloutGroup& g : out) g.Clear();
  return out;
}

void GroupPool::Give(rlvr::v1::ActorMessage&& sent) {
  absl::MutexLock lock(&mu_);
  auto keep = [&](rlvr::v1::RolloutGroup* g) {
    if (groups_.size() >= max_groups_) return;
    groups_.emplace_back().Swap(g);
  };
  if (sent.has_group()) keep(sent.mutable_group());
  if (sent.has_group_batch()) {
    for (rlvr::v1::RolloutGroup& g : *sent.mutable_group_batch()->mutable_groups()) keep(&g);
  }
}

size_t GroupPool::size() const {
  absl::MutexLock lock(&mu_);
  return groups_.size();
}

}  // namespace rlvr::actor
