#include "learner/prompt_cursor.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/base/splitmix.h"

namespace rlvr::learner {
namespace {}  // namespace

uint64_t PromptCursor::SlotSeed(uint64_t seed, uint64_t epoch, uint64_t prompt_index) {
  return SplitMix64(SplitMix64(SplitMix64(seed) ^ epoch) ^ (prompt_index * 0x2545F4914F6CDD1DULL));
}

PromptCursor::PromptCursor(uint64_t num_prompts, uint64_t seed)
    : num_prompts_(num_prompts == 0 ? 1 : num_prompts), seed_(seed) {}

std::vector<uint32_t> PromptCursor::Order(uint64_t epoch) const {
  // Fisher-Yates with our own generator so the order is the same on every
  // standard library.
  std::vector<uint32_t> order(num_prompts_);
  for (uint64_t i = 0; i < num_prompts_; ++i) order[i] = static_cast<uint32_t>(i);
  uint64_t state = SplitMix64(seed_ ^ SplitMix64(epoch + 0x51ed270b));
  for (uint64_t i = num_prompts_; i > 1; --i) {
    state = SplitMix64(state);
    uint64_t j = state % i;
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

PromptCursor::Epoch& PromptCursor::Open(uint64_t epoch) {
  Epoch& e = epochs_[epoch];
  e.order = Order(epoch);
  e.trained.assign(num_prompts_, false);
  if (epoch >= next_epoch_) next_epoch_ = epoch + 1;
  return e;
}

CursorSlot PromptCursor::Take() {
  for (auto& [num, e] : epochs_) {
    if (!e.requeued.empty()) {
      uint64_t pos = *e.requeued.begin();
      e.requeued.erase(e.requeued.begin());
      return CursorSlot{num, pos, e.order[pos]};
    }
  }
  for (auto& [num, e] : epochs_) {
    if (e.next_fresh < num_prompts_) {
      uint64_t pos = e.next_fresh++;
      return CursorSlot{num, pos, e.order[pos]};
    }
  }
  uint64_t num = next_epoch_;
  Epoch& e = Open(num);
  uint64_t pos = e.next_fresh++;
  return CursorSlot{num, pos, e.order[pos]};
}

void PromptCursor::Requeue(const CursorSlot& slot) {
  auto it = epochs_.find(slot.epoch);
  if (it == epochs_.end()) return;
  Epoch& e = it->second;
  if (slot.position >= e.next_fresh || e.trained[slot.position]) return;
  e.requeued.insert(slot.position);
}

void PromptCursor::MarkTrained(const CursorSlot& slot) {
  auto it = epochs_.find(slot.epoch);
  if (it == epochs_.end()) return;
  Epoch& e = it->second;
  if (slot.position >= e.next_fresh || e.trained[slot.position]) return;
  e.trained[slot.position] = true;
  e.requeued.erase(slot.position);
  ++e.trained_count;
  if (e.trained_count == num_prompts_) epochs_.erase(it);
}

uint64_t PromptCursor::epoch() const {
  return epochs_.empty() ? next_epoch_ : epochs_.begin()->first;
}

uint64_t PromptCursor::cursor() const {
  return epochs_.empty() ? 0 : epochs_.rbegin()->second.next_fresh;
}

uint64_t PromptCursor::requeued() const {
  uint64_t n = 0;
  for (const auto& [num, e] : epochs_) n += e.requeued.size();
  return n;
}

std::string PromptCursor::Serialize() const {
  nlohmann::json j;
  j["num_prompts"] = num_prompts_;
  j["seed"] = seed_;
  j["next_epoch"] = next_epoch_;
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& [num, e] : epochs_) {
    nlohmann::json pending = nlohmann::json::array();
    for (uint64_t p = 0; p < e.next_fresh; ++p) {
      if (!e.trained[p]) pending.push_back(p);
    }
    epochs.push_back({{"epoch", num}, {"next_fresh", e.next_fresh}, {"untrained", pending}});
  }
  j["epochs"] = epochs;
  return j.dump();
}

absl::Status PromptCursor::Restore(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (j.at("num_prompts").get<uint64_t>() != num_prompts_ ||
        j.at("seed").get<uint64_t>() != seed_) {
      return absl::FailedPreconditionError(
          "cursor state was saved with a different dataset size or seed");
    }
    epochs_.clear();
    next_epoch_ = j.at("next_epoch").get<uint64_t>();
    for (const auto& je : j.at("epochs")) {
      uint64_t num = je.at("epoch").get<uint64_t>();
      Epoch& e = epochs_[num];
      e.order = Order(num);
      e.trained.assign(num_prompts_, true);
      e.next_fresh = je.at("next_fresh").get<uint64_t>();
      if (e.next_fresh > num_prompts_) return absl::DataLossError("cursor beyond the dataset");
      for (uint64_t p = e.next_fresh; p < num_prompts_; ++p) e.trained[p] = false;
      e.trained_count = e.next_fresh;
      for (const auto& jp : je.at("untrained")) {
        uint64_t p = jp.get<uint64_t>();
        if (p >= e.next_fresh) return absl::DataLossError("untrained slot beyond the cursor");
        if (e.trained[p]) {
          e.trained[p] = false;
          --e.trained_count;
        }
        e.requeued.insert(p);
      }
    }
    return absl::OkStatus();
  } catch (const std::exception& e) {
    epochs_.clear();
    return absl::DataLossError(absl::StrCat("bad cursor state: ", e.what()));
  }
}

}  // namespace rlvr::learner
