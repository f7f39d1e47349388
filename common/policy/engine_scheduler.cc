#include "common/policy/engine_scheduler.h"

#include <glog/logging.h>

#include <algorithm>

namespace rlvr::policy {

EngineScheduler::EngineScheduler(SchedulerOptions options) : options_(options) {
  CHECK_GE(options_.max_rows, 1);
  CHECK_GE(options_.num_blocks, 1);
  CHECK_GE(options_.block_tokens, 1);
  refs_.assign(options_.num_blocks, 0);
  // A stack whose top is block 0: blocks are handed out in increasing order.
  for (int b = options_.num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int EngineScheduler::BlocksFor(int positions) const {
  return (positions + options_.block_tokens - 1) / options_.block_tokens;
}

int EngineScheduler::BlocksToRunAlone(int prompt_len, int max_new_tokens) const {
  return BlocksFor(prompt_len + max_new_tokens) + 1;
}

uint64_t EngineScheduler::AddGroup(int prompt_len, const std::vector<int>& max_new) {
  CHECK_GE(prompt_len, 1);
  CHECK(!max_new.empty());
  const uint64_t key = next_group_++;
  Group& g = groups_[key];
  g.prompt_len = prompt_len;
  g.rows.resize(max_new.size());
  for (size_t i = 0; i < max_new.size(); ++i) {
    CHECK_GE(max_new[i], 1);
    CHECK_LE(BlocksToRunAlone(prompt_len, max_new[i]), options_.num_blocks)
        << "a row that cannot fit the KV pool alone";
    g.rows[i].max_new = max_new[i];
    waiting_.push_back(RowRef{key, static_cast<int>(i)});
  }
  g.unstarted = static_cast<int>(max_new.size());
  return key;
}

void EngineScheduler::RemoveGroup(uint64_t group) {
  auto it = groups_.find(group);
  if (it == groups_.end()) return;
  Group& g = it->second;
  for (Row& row : g.rows) ReleaseBlocks(&row.blocks);
  DropPin(g);
  std::erase_if(running_, [group](const RowRef& r) { return r.group == group; });
  std::erase_if(waiting_, [group](const RowRef& r) { return r.group == group; });
  groups_.erase(it);
}

int EngineScheduler::Allocate() {
  CHECK(!free_.empty());
  const int b = free_.back();
  free_.pop_back();
  refs_[b] = 1;
  peak_used_ = std::max(peak_used_, used_blocks());
  return b;
}

void EngineScheduler::Unref(int block) {
  CHECK_GT(refs_[block], 0);
  if (--refs_[block] == 0) free_.push_back(block);
}

void EngineScheduler::ReleaseBlocks(std::vector<int>* blocks) {
  for (int b : *blocks) Unref(b);
  blocks->clear();
}

void EngineScheduler::DropPin(Group& g) {
  if (!g.pinned) return;
  ReleaseBlocks(&g.pin);
  g.pinned = false;
}

bool EngineScheduler::HasRunningRows(uint64_t group) const {
  return std::any_of(running_.begin(), running_.end(),
                     [group](const RowRef& r) { return r.group == group; });
}

bool EngineScheduler::DropOnePin(uint64_t keep) {
  uint64_t chosen = 0;
  for (const auto& [key, g] : groups_) {
    if (!g.pinned || key == keep) continue;
    if (!HasRunningRows(key)) {
      chosen = key;
      break;
    }
    if (chosen == 0) chosen = key;
  }
  if (chosen == 0) return false;
  DropPin(groups_.at(chosen));
  ++pins_dropped_;
  return true;
}

int EngineScheduler::GrowthReserve() const {
  int n = 0;
  for (const RowRef& r : running_) {
    const Row& row = RowAt(r);
    if (row.kv_len == static_cast<int>(row.blocks.size()) * options_.block_tokens) ++n;
  }
  return n;
}

int EngineScheduler::AdmissionNeed(RowRef r) const {
  const Group& g = groups_.at(r.group);
  const Row& row = g.rows[r.row];
  const int p = g.prompt_len;
  if (options_.share_prompt && row.generated == 0) {
    return (g.pinned ? 0 : BlocksFor(p)) + (p % options_.block_tokens != 0 ? 1 : 0);
  }
  return BlocksFor(p + row.generated);
}

void EngineScheduler::AdmitRow(RowRef r, Admission* out) {
  Group& g = groups_.at(r.group);
  Row& row = g.rows[r.row];
  const int p = g.prompt_len;
  const int bt = options_.block_tokens;
  if (options_.share_prompt && row.generated == 0) {
    if (!g.pinned) {
      for (int i = BlocksFor(p); i > 0; --i) g.pin.push_back(Allocate());
      g.pinned = true;
      out->prompt_prefills.push_back(r.group);
    }
    for (int i = 0; i < p / bt; ++i) {
      ++refs_[g.pin[i]];
      row.blocks.push_back(g.pin[i]);
    }
    if (p % bt != 0) {
      const int copy = Allocate();
      out->copies.push_back(BlockCopy{g.pin[p / bt], copy, p % bt});
      row.blocks.push_back(copy);
    }
    row.kv_len = p;
    out->fresh.push_back(r);
  } else {
    for (int i = BlocksFor(p + row.generated); i > 0; --i) row.blocks.push_back(Allocate());
    row.kv_len = p + row.generated;
    out->own_prefills.push_back(r);
  }
  if (row.generated == 0) --g.unstarted;
  row.state = State::kRunning;
  running_.push_back(r);
}

EngineScheduler::Admission EngineScheduler::Admit() {
  Admission out;
  int reserve = GrowthReserve();
  while (!waiting_.empty() && running_rows() < options_.max_rows) {
    const RowRef r = waiting_.front();
    const int need = AdmissionNeed(r);
    if (free_blocks() - need < reserve) {
      // Nothing running will free blocks: make room from the pins. A fresh
      // row keeps its own group's pin while others can go.
      const Row& head = RowAt(r);
      const bool fresh = options_.share_prompt && head.generated == 0;
      if (running_.empty() && (DropOnePin(fresh ? r.group : 0) || DropOnePin(0))) continue;
      break;
    }
    waiting_.pop_front();
    AdmitRow(r, &out);
    const Row& row = RowAt(r);
    if (row.kv_len == static_cast<int>(row.blocks.size()) * options_.block_tokens) ++reserve;
  }
  return out;
}

void EngineScheduler::Preempt(RowRef r) {
  Row& row = RowAt(r);
  CHECK(row.state == State::kRunning && row.generated >= 1);
  ReleaseBlocks(&row.blocks);
  row.kv_len = 0;
  row.state = State::kWaiting;
  std::erase(running_, r);
  waiting_.push_front(r);
  ++preemptions_;
}

std::vector<EngineScheduler::DecodeRow> EngineScheduler::PlanDecode() {
  // Pins whose group has no row left to start (the copies are done).
  for (auto& [key, g] : groups_) {
    if (g.pinned && g.unstarted == 0) DropPin(g);
  }
  std::vector<DecodeRow> plan;
  plan.reserve(running_.size());
  for (size_t i = 0; i < running_.size(); ++i) {
    const RowRef r = running_[i];
    Row& row = RowAt(r);
    CHECK_GE(row.generated, 1) << "a running row that has not drawn its first token";
    bool self_preempted = false;
    if (row.kv_len == static_cast<int>(row.blocks.size()) * options_.block_tokens) {
      while (free_.empty()) {
        if (DropOnePin(0)) continue;
        const RowRef victim = running_.back();
        Preempt(victim);
        if (victim == r) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;  // It was the last in admission order.
      row.blocks.push_back(Allocate());
    }
    plan.push_back(DecodeRow{r, row.kv_len});
    ++row.kv_len;
  }
  return plan;
}

void EngineScheduler::Drew(RowRef r, bool finished) {
  Group& g = groups_.at(r.group);
  Row& row = g.rows[r.row];
  CHECK(row.state == State::kRunning);
  ++row.generated;
  CHECK_LE(row.generated, row.max_new);
  CHECK_EQ(row.kv_len, g.prompt_len + row.generated - 1);
  if (finished || row.generated == row.max_new) {
    ReleaseBlocks(&row.blocks);
    row.state = State::kDone;
    std::erase(running_, r);
    ++g.done;
  }
}

const std::vector<int>& EngineScheduler::RowBlocks(RowRef row) const { return RowAt(row).blocks; }

const std::vector<int>& EngineScheduler::PromptBlocks(uint64_t group) const {
  return groups_.at(group).pin;
}

int EngineScheduler::RowGenerated(RowRef row) const { return RowAt(row).generated; }

bool EngineScheduler::RowDone(RowRef row) const { return RowAt(row).state == State::kDone; }

bool EngineScheduler::GroupDone(uint64_t group) const {
  const Group& g = groups_.at(group);
  return g.done == static_cast<int>(g.rows.size());
}

bool EngineScheduler::GroupHasUnstartedRows(uint64_t group) const {
  return groups_.at(group).unstarted > 0;
}

}  // namespace rlvr::policy
