#include "learner/rollout_buffer.h"

#include <glog/logging.h>

#include <algorithm>
#include <deque>
#include <map>
#include <utility>

namespace rlvr::learner {

bool RolloutBuffer::Advance(uint64_t version) {
  const bool advances = !published_ || version > latest_;
  if (!advances) LOG(WARNING) << "Publish(" << version << ") does not advance " << latest_;
  latest_ = std::max(latest_, version);
  published_ = true;
  return advances;
}

namespace {

// Lag 0: the next groups_per_update cursor slots, trained together.
class SyncWindowBuffer final : public RolloutBuffer {
 public:
  explicit SyncWindowBuffer(const RolloutBufferOptions& options) : RolloutBuffer(options) {}

  std::vector<TrainingGroup> Publish(uint64_t version) override {
    Advance(version);
    if (window_.empty() || taken_) {
      window_.clear();
      for (int i = 0; i < options_.groups_per_update; ++i)
        window_.push_back(Entry{cursor_.Take(), false, std::nullopt});
      taken_ = false;
    }
    return {};
  }

  std::optional<SlotReservation> Reserve(size_t /*outstanding*/) override {
    if (taken_) return std::nullopt;
    for (Entry& e : window_) {
      if (!e.leased && !e.group.has_value()) {
        e.leased = true;
        return SlotReservation{e.slot, latest_};
      }
    }
    return std::nullopt;
  }

  void Requeue(const CursorSlot& slot) override {
    if (Entry* e = Find(slot)) {
      e->leased = false;
      return;
    }
    cursor_.Requeue(slot);
  }

  void Add(TrainingGroup group) override {
    Entry* e = Find(group.slot);
    CHECK(e != nullptr) << "a group for a slot outside the window";
    e->leased = false;
    e->group = std::move(group.group);
  }

  bool Ready() const override {
    if (taken_ || window_.size() != static_cast<size_t>(options_.groups_per_update)) return false;
    return std::all_of(window_.begin(), window_.end(),
                       [](const Entry& e) { return e.group.has_value(); });
  }

  std::vector<TrainingGroup> Take() override {
    std::vector<TrainingGroup> out;
    if (!Ready()) return out;
    std::vector<Entry*> sorted;
    for (Entry& e : window_) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(),
              [](const Entry* a, const Entry* b) { return a->slot < b->slot; });
    for (Entry* e : sorted) out.push_back(TrainingGroup{std::move(*e->group), e->slot});
    taken_ = true;
    return out;
  }

  size_t buffered() const override {
    if (taken_) return 0;
    return static_cast<size_t>(std::count_if(window_.begin(), window_.end(),
                                             [](const Entry& e) { return e.group.has_value(); }));
  }

 private:
  struct Entry {
    CursorSlot slot;
    bool leased = false;
    std::optional<Group> group;  // Set once accepted.
  };
  Entry* Find(const CursorSlot& slot) {
    for (Entry& e : window_) {
      if (e.slot == slot) return &e;
    }
    return nullptr;
  }

  std::vector<Entry> window_;  // Empty until the first Publish.
  bool taken_ = false;
};

// Lag >= 1: staleness-aware credits (see the header).
class AsyncBuffer final : public RolloutBuffer {
 public:
  explicit AsyncBuffer(const RolloutBufferOptions& options) : RolloutBuffer(options) {}

  std::vector<TrainingGroup> Publish(uint64_t version) override {
    Advance(version);
    std::vector<TrainingGroup> stale;
    const uint64_t lag = options_.max_policy_lag;
    while (!by_version_.empty() && by_version_.begin()->first + lag < latest_) {
      for (TrainingGroup& g : by_version_.begin()->second) {
        cursor_.Requeue(g.slot);
        stale.push_back(std::move(g));
      }
      size_ -= by_version_.begin()->second.size();
      by_version_.erase(by_version_.begin());
    }
    return stale;
  }

  std::optional<SlotReservation> Reserve(size_t outstanding) override {
    if (!published_) return std::nullopt;
    const uint64_t in_flight = size_ + outstanding;
    if (in_flight >= static_cast<uint64_t>(options_.buffer_groups)) return std::nullopt;
    const uint64_t lag = options_.max_policy_lag;
    // The update this group would be trained in, if work is consumed in order.
    const uint64_t next = taken_at_ < latest_ ? latest_ : latest_ + 1;
    const uint64_t k = next + in_flight / static_cast<uint64_t>(options_.groups_per_update);
    if (k > latest_ + lag) return std::nullopt;
    return SlotReservation{cursor_.Take(), k > lag ? k - lag : 0};
  }

  void Requeue(const CursorSlot& slot) override { cursor_.Requeue(slot); }

  void Add(TrainingGroup group) override {
    const uint64_t v = group.group.policy_version;
    by_version_[v].push_back(std::move(group));
    ++size_;
  }

  bool Ready() const override { return size_ >= static_cast<size_t>(options_.groups_per_update); }

  std::vector<TrainingGroup> Take() override {
    std::vector<TrainingGroup> out;
    if (!Ready()) return out;
    const size_t need = static_cast<size_t>(options_.groups_per_update);
    out.reserve(need);
    while (out.size() < need) {
      auto it = by_version_.begin();
      while (!it->second.empty() && out.size() < need) {
        out.push_back(std::move(it->second.front()));
        it->second.pop_front();
      }
      if (it->second.empty()) by_version_.erase(it);
    }
    size_ -= need;
    taken_at_ = latest_;
    return out;
  }

  size_t buffered() const override { return size_; }

 private:
  // Accepted groups by policy version, each in acceptance order.
  std::map<uint64_t, std::deque<TrainingGroup>> by_version_;
  size_t size_ = 0;
  // The newest version at the last Take (0: none yet): the update at the
  // current version is still to come iff taken_at_ < latest_.
  uint64_t taken_at_ = 0;
};

}  // namespace

std::unique_ptr<RolloutBuffer> MakeRolloutBuffer(const RolloutBufferOptions& options) {
  CHECK_GT(options.groups_per_update, 0);
  if (options.max_policy_lag == 0) return std::make_unique<SyncWindowBuffer>(options);
  return std::make_unique<AsyncBuffer>(options);
}

}  // namespace rlvr::learner
