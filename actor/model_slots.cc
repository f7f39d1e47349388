#include "actor/model_slots.h"

#include <glog/logging.h>

#include <algorithm>

namespace rlvr::actor {

bool ModelSlots::Free(int slot) const {
  return slot != active_ && slot != staged_ && slot != loading_ && slot != retired_held_;
}

ModelSlots::Load ModelSlots::BeginLoad() {
  CHECK(!loading()) << "ModelSlots::BeginLoad with a load in progress";
  int pick = -1;
  for (int s = 0; s < kSlots; ++s) {
    if (!Free(s)) continue;
    if (pick < 0 || (built_[s] && !built_[pick])) pick = s;
  }
  // At most active (or a held retired slot) and staged are taken.
  CHECK_GE(pick, 0) << "ModelSlots: no free slot";
  loading_ = pick;
  return Load{pick, built_[pick], reset_count_};
}

bool ModelSlots::FinishLoad(const Load& load, bool built, bool loaded, uint64_t version) {
  CHECK_EQ(load.slot, loading_) << "ModelSlots::FinishLoad of a load not in progress";
  loading_ = -1;
  built_[load.slot] = built;
  if (!built || !loaded || load.reset_count != reset_count_ || version <= newest_version()) {
    return false;
  }
  version_[load.slot] = version;
  staged_ = load.slot;  // A staged version generation never took is free now.
  return true;
}

int ModelSlots::AdoptBuilt() {
  for (int s = 0; s < kSlots; ++s) {
    if (Free(s) && !built_[s]) {
      built_[s] = true;
      return s;
    }
  }
  return -1;
}

bool ModelSlots::SwapIn() {
  CHECK(!generating_) << "ModelSlots::SwapIn during a generation";
  if (staged_ < 0) return false;
  active_ = staged_;  // The old active slot is free: no batch holds it.
  staged_ = -1;
  return true;
}

ModelSlots::Use ModelSlots::BeginGeneration() {
  CHECK(!generating_) << "ModelSlots::BeginGeneration during a generation";
  CHECK_GE(active_, 0) << "ModelSlots::BeginGeneration without weights";
  generating_ = true;
  return Use{active_, version_[active_]};
}

void ModelSlots::EndGeneration() {
  CHECK(generating_) << "ModelSlots::EndGeneration without a generation";
  generating_ = false;
  retired_held_ = -1;
}

void ModelSlots::Reset() {
  if (generating_ && active_ >= 0) retired_held_ = active_;
  active_ = -1;
  staged_ = -1;
  ++reset_count_;
}

uint64_t ModelSlots::newest_version() const { return std::max(active_version(), staged_version()); }

}  // namespace rlvr::actor
