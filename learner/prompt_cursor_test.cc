#include "learner/prompt_cursor.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr::learner {
namespace {

TEST(PromptCursorTest, EpochVisitsEveryPromptOnceInSeededOrder) {
  PromptCursor a(10, 3), b(10, 3), c(10, 4);
  std::set<uint64_t> seen;
  bool differs = false;
  for (int i = 0; i < 10; ++i) {
    CursorSlot s = a.Take();
    CursorSlot t = b.Take();
    CursorSlot u = c.Take();
    EXPECT_EQ(s, t);
    differs = differs || s.prompt_index != u.prompt_index;
    EXPECT_EQ(s.epoch, 0u);
    EXPECT_EQ(s.position, static_cast<uint64_t>(i));
    seen.insert(s.prompt_index);
  }
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_TRUE(differs);
  // The 11th slot opens epoch 1 (epoch 0 is still open: nothing trained).
  EXPECT_EQ(a.Take().epoch, 1u);
  EXPECT_EQ(a.epoch(), 0u);
}

TEST(PromptCursorTest, RequeuedSlotsComeBackFirstAndEpochClosesWhenAllTrained) {
  PromptCursor cur(4, 1);
  std::vector<CursorSlot> slots;
  for (int i = 0; i < 4; ++i) slots.push_back(cur.Take());
  cur.Requeue(slots[2]);
  cur.Requeue(slots[1]);
  EXPECT_EQ(cur.requeued(), 2u);
  EXPECT_EQ(cur.Take(), slots[1]);
  EXPECT_EQ(cur.Take(), slots[2]);
  for (const auto& s : slots) cur.MarkTrained(s);
  cur.MarkTrained(slots[0]);  // Idempotent.
  EXPECT_EQ(cur.epoch(), 1u);
  // Requeue of a trained slot is ignored.
  cur.Requeue(slots[0]);
  CursorSlot next = cur.Take();
  EXPECT_EQ(next.epoch, 1u);
  EXPECT_EQ(next.position, 0u);
}

TEST(PromptCursorTest, SerializeRestoreRequeuesUntrainedSlots) {
  PromptCursor cur(6, 9);
  std::vector<CursorSlot> slots;
  for (int i = 0; i < 4; ++i) slots.push_back(cur.Take());
  cur.MarkTrained(slots[0]);
  cur.MarkTrained(slots[2]);
  const std::string state = cur.Serialize();

  PromptCursor restored(6, 9);
  ASSERT_TRUE(restored.Restore(state).ok());
  EXPECT_EQ(restored.requeued(), 2u);
  EXPECT_EQ(restored.Take(), slots[1]);
  EXPECT_EQ(restored.Take(), slots[3]);
  CursorSlot fresh = restored.Take();
  EXPECT_EQ(fresh.position, 4u);
  EXPECT_EQ(fresh, cur.Take());

  PromptCursor other(7, 9);
  EXPECT_FALSE(other.Restore(state).ok());
  EXPECT_FALSE(other.Restore("not json").ok());
}

TEST(PromptCursorTest, SlotSeedDependsOnEveryInput) {
  const uint64_t s = PromptCursor::SlotSeed(1, 2, 3);
  EXPECT_EQ(s, PromptCursor::SlotSeed(1, 2, 3));
  EXPECT_NE(s, PromptCursor::SlotSeed(2, 2, 3));
  EXPECT_NE(s, PromptCursor::SlotSeed(1, 3, 3));
  EXPECT_NE(s, PromptCursor::SlotSeed(1, 2, 4));
}

// The cursor names prompts by index: a learner restarted on the same JSONL
// files rebuilds the same training split, so the restored cursor hands out
// the same prompts (by id) as an uninterrupted run would.
TEST(PromptCursorTest, ResumesOnAReloadedJsonlTask) {
  const std::string path = ::testing::TempDir() + "/rlvr_cursor_resume.jsonl";
  {
    std::ofstream out(path, std::ios::trunc);
    for (int i = 0; i < 40; ++i) {
      out << "{\"question\":\"" << std::string(1 + i % 7, 'x') << i << "\",\"answer\":" << i
          << "}\n";
    }
  }
  rlvr::TaskConfig config;
  config.kind = "jsonl";
  config.train_path = path;
  config.heldout_fraction = 0.25;
  auto tokenizer = rlvr::MakeCharTokenizer();
  rlvr::TaskOptions options;
  options.max_prompt_tokens = 8;  // Drops the longer questions: the filter must repeat too.
  auto first = rlvr::MakeTask(config, *tokenizer, options);
  ASSERT_TRUE(first.ok()) << first.status();
  const auto& train = (*first)->train();
  ASSERT_GT(train.size(), 10u);
  ASSERT_GT((*first)->skipped_too_long(), 0);

  PromptCursor cur(train.size(), 3);
  std::vector<CursorSlot> taken;
  for (int i = 0; i < 7; ++i) taken.push_back(cur.Take());
  for (int i = 0; i < 5; ++i) cur.MarkTrained(taken[i]);
  const std::string state = cur.Serialize();
  std::vector<std::string> expected;  // What the uninterrupted run leases next.
  expected.push_back(train[taken[5].prompt_index].id);
  expected.push_back(train[taken[6].prompt_index].id);
  for (int i = 0; i < 5; ++i) expected.push_back(train[cur.Take().prompt_index].id);

  auto second = rlvr::MakeTask(config, *tokenizer, options);  // "After a restart".
  ASSERT_TRUE(second.ok()) << second.status();
  PromptCursor restored((*second)->train().size(), 3);
  ASSERT_TRUE(restored.Restore(state).ok());
  for (const std::string& id : expected) {
    EXPECT_EQ((*second)->train()[restored.Take().prompt_index].id, id);
  }
}

}  // namespace
}  // namespace rlvr::learner
