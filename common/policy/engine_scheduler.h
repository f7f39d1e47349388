// The continuous-batching engine's decisions (engine.h), as a pure state
// machine over row and block numbers: which waiting rows are admitted into
// free slots, which KV blocks each row and each group's prompt occupy, and
// which rows are preempted when the pool runs out. No torch, no clocks; the
// engine runs the passes it plans. Tested directly (engine_scheduler_test.cc)
// with random event sequences against its invariants.
//
// Rows and groups. A group is G rows sharing one prompt of P tokens; row i
// may draw at most max_new[i] tokens. A row is waiting (never started, or
// preempted), running (it holds a slot and the KV cache of its positions) or
// done. A running row that has drawn n >= 1 tokens holds the keys and values
// of positions [0, P + n - 1) and feeds its last token at position P + n - 1
// in the next decode pass.
//
// Blocks. The pool is `num_blocks` blocks of `block_tokens` positions; a
// block is free or referenced (refcounted) by row block tables and prompt
// pins. A row's block table maps its position p to block table[p /
// block_tokens]. With share_prompt, the first row of a group admitted pins
// ceil(P / block_tokens) blocks and the group's prompt is computed into them
// once (Admission::prompt_prefills); every row started from it references the
// full prompt blocks and gets its own copy of the partial last one
// (Admission::copies, positions [0, P mod block_tokens): a copy, not a
// recomputation). The pin is dropped once every row of the group has started,
// or earlier under memory pressure (a later row of the group then computes
// the prompt again). Without share_prompt, and for a preempted row, a row
// computes its prompt and its tokens so far itself (Admission::own_prefills).
//
// Admission (Admit): waiting rows, first come first served, preempted rows
// first, take free slots (at most max_rows running) while the pool keeps,
// after the row's blocks, one free block for every running row that needs a
// new block at the next decode; otherwise the queue waits (a row is never
// admitted past the one at its head). If nothing is running and the head row
// does not fit, prompt pins are dropped until it does.
//
// Growth (PlanDecode): each running row, oldest admission first, gets a
// block when its next position starts one. When none is free, the scheduler
// drops prompt pins (groups without running rows first), then preempts the
// most recently admitted row (its blocks are freed; it waits at the head of
// the queue and recomputes its prompt and tokens when admitted again). A row
// may preempt itself when it is the most recent.
//
// No deadlock: AddGroup requires every row to fit the pool alone
// (BlocksToRunAlone <= num_blocks), and when a row is alone every other
// block can be freed, so the oldest running row always advances; every step
// with a running row draws a token.
//
// Call order per engine step: Admit; the prompt pass (prompt_prefills and
// own_prefills) and then the copies; Drew for every own-prefill and fresh
// row; PlanDecode; the decode pass; Drew for every row it planned. AddGroup
// and RemoveGroup between steps.
//
// Thread safety: none (thread-compatible).
#ifndef RLVR_COMMON_POLICY_ENGINE_SCHEDULER_H_
#define RLVR_COMMON_POLICY_ENGINE_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace rlvr::policy {

struct SchedulerOptions {
  int max_rows = 64;         // Slots: rows running at once, >= 1.
  int num_blocks = 64;       // Blocks in the KV pool, >= 1.
  int block_tokens = 16;     // Positions per block, >= 1.
  bool share_prompt = true;  // One prompt computation per group (see the header).
};

// A row: the scheduler's key of its group (AddGroup) and its index in it.
struct RowRef {
  uint64_t group = 0;
  int row = 0;
  bool operator==(const RowRef& o) const { return group == o.group && row == o.row; }
};

// Copy positions [0, tokens) of block `src` into block `dst`.
struct BlockCopy {
  int src = 0;
  int dst = 0;
  int tokens = 0;
};

class EngineScheduler {
 public:
  explicit EngineScheduler(SchedulerOptions options);

  // Blocks one row with a prompt of `prompt_len` tokens and at most
  // `max_new_tokens` tokens may need while running alone (its group's prompt
  // pin included): ceil((prompt_len + max_new_tokens) / block_tokens) + 1.
  int BlocksToRunAlone(int prompt_len, int max_new_tokens) const;

  // A new group of max_new.size() >= 1 rows, all waiting; returns its key
  // (1, 2, ... in arrival order). Requires prompt_len >= 1, every max_new
  // >= 1 and BlocksToRunAlone(prompt_len, max) <= num_blocks (CHECKed).
  uint64_t AddGroup(int prompt_len, const std::vector<int>& max_new);
  // Forgets a group in any state (done, cancelled): its rows leave their
  // slots and the queue, its blocks and its pin are released.
  void RemoveGroup(uint64_t group);

  struct Admission {
    // Groups whose prompt is computed now (positions [0, P)) into
    // PromptBlocks(group); its logits at the last position start the rows.
    std::vector<uint64_t> prompt_prefills;
    // Rows that compute their prompt and the n tokens they drew so far
    // (positions [0, P + n)) into RowBlocks(row), then draw token n.
    std::vector<RowRef> own_prefills;
    // Rows that start from their group's prompt: they draw token 0 from the
    // prompt's logits (computed now or earlier).
    std::vector<RowRef> fresh;
    // For the fresh rows' partial prompt blocks; after the prompt pass.
    std::vector<BlockCopy> copies;
  };
  Admission Admit();

  struct DecodeRow {
    RowRef row;
    int position = 0;  // Where its last token goes.
  };
  // The rows of the next decode pass (every running row that was not
  // preempted), oldest admission first, each with a block for `position`.
  std::vector<DecodeRow> PlanDecode();

  // `row` (running) drew a token; `finished`: it is done (stop token or
  // length), leaving its slot and releasing its blocks.
  void Drew(RowRef row, bool finished);

  // ---- State.
  const std::vector<int>& RowBlocks(RowRef row) const;
  const std::vector<int>& PromptBlocks(uint64_t group) const;
  int RowGenerated(RowRef row) const;  // Tokens the row drew.
  bool RowDone(RowRef row) const;
  bool GroupDone(uint64_t group) const;  // Every row done.
  // True while some row of the group has not drawn its first token.
  bool GroupHasUnstartedRows(uint64_t group) const;
  bool HasGroup(uint64_t group) const { return groups_.count(group) != 0; }
  int running_rows() const { return static_cast<int>(running_.size()); }
  int waiting_rows() const { return static_cast<int>(waiting_.size()); }
  int groups() const { return static_cast<int>(groups_.size()); }
  int free_blocks() const { return static_cast<int>(free_.size()); }
  int used_blocks() const { return options_.num_blocks - free_blocks(); }
  int peak_used_blocks() const { return peak_used_; }
  int64_t preemptions() const { return preemptions_; }
  int64_t pins_dropped() const { return pins_dropped_; }  // Dropped early, under pressure.
  const SchedulerOptions& options() const { return options_; }
  // Refcount of a block (tests).
  int RefCount(int block) const { return refs_[block]; }

 private:
  enum class State { kWaiting, kRunning, kDone };
  struct Row {
    int max_new = 0;
    int generated = 0;
    State state = State::kWaiting;
    std::vector<int> blocks;
    int kv_len = 0;  // Positions whose keys and values are in `blocks`.
  };
  struct Group {
    int prompt_len = 0;
    std::vector<Row> rows;
    std::vector<int> pin;  // The prompt's blocks while pinned.
    bool pinned = false;
    int unstarted = 0;  // Rows that have not drawn a token and are not running.
    int done = 0;
  };

  Row& RowAt(RowRef r) { return groups_.at(r.group).rows[r.row]; }
  const Row& RowAt(RowRef r) const { return groups_.at(r.group).rows[r.row]; }
  int BlocksFor(int positions) const;
  int Allocate();
  void Unref(int block);
  void ReleaseBlocks(std::vector<int>* blocks);
  void DropPin(Group& g);
  // Drops one pin, preferring groups without running rows and never
  // `keep` (0 = none); false if there is none to drop.
  bool DropOnePin(uint64_t keep);
  bool HasRunningRows(uint64_t group) const;
  // Running rows whose next decode needs a new block.
  int GrowthReserve() const;
  // Blocks admitting `r` takes now.
  int AdmissionNeed(RowRef r) const;
  void AdmitRow(RowRef r, Admission* out);
  void Preempt(RowRef r);

  const SchedulerOptions options_;
  std::map<uint64_t, Group> groups_;
  uint64_t next_group_ = 1;
  std::deque<RowRef> waiting_;
  std::vector<RowRef> running_;  // In admission order.
  std::vector<int> free_;        // Free blocks (a stack).
  std::vector<int> refs_;
  int peak_used_ = 0;
  int64_t preemptions_ = 0;
  int64_t pins_dropped_ = 0;
};

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_ENGINE_SCHEDULER_H_
