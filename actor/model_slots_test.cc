// ModelSlots: targeted cases, then thousands of random interleavings of the
// weight thread (load begins, load ends), the generation thread (swap,
// generate) and resets, over a simulated memory of the three models: a load
// scribbles over its slot, and a generation must read its version from its
// slot from start to end.
//
// Reproduce a failing sequence with RLVR_TEST_SEED=<seed printed>.
#include "actor/model_slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/base/splitmix.h"

namespace rlvr::actor {
namespace {

TEST(ModelSlotsTest, LoadStageSwapGenerate) {
  ModelSlots slots;
  EXPECT_FALSE(slots.has_weights());
  const int prebuilt = slots.AdoptBuilt();
  ASSERT_GE(prebuilt, 0);
  ModelSlots::Load a = slots.BeginLoad();
  EXPECT_EQ(a.slot, prebuilt);  // The model built ahead is used first.
  EXPECT_TRUE(a.built);
  EXPECT_TRUE(slots.FinishLoad(a, true, true, 1));
  EXPECT_TRUE(slots.has_weights());
  EXPECT_EQ(slots.active_version(), 0u);
  EXPECT_EQ(slots.newest_version(), 1u);
  EXPECT_TRUE(slots.SwapIn());
  ModelSlots::Use use = slots.BeginGeneration();
  EXPECT_EQ(use.slot, a.slot);
  EXPECT_EQ(use.version, 1u);
  // While version 1 generates, version 2 loads elsewhere.
  ModelSlots::Load b = slots.BeginLoad();
  EXPECT_NE(b.slot, use.slot);
  EXPECT_FALSE(b.built);
  EXPECT_TRUE(slots.FinishLoad(b, true, true, 2));
  slots.EndGeneration();
  EXPECT_TRUE(slots.SwapIn());
  EXPECT_EQ(slots.active_version(), 2u);
  // Version 3 reuses the retired model of version 1.
  ModelSlots::Load c = slots.BeginLoad();
  EXPECT_EQ(c.slot, a.slot);
  EXPECT_TRUE(c.built);
}

TEST(ModelSlotsTest, OldOrFailedLoadsAreNotStaged) {
  ModelSlots slots;
  ModelSlots::Load a = slots.BeginLoad();
  EXPECT_TRUE(slots.FinishLoad(a, true, true, 5));
  ModelSlots::Load b = slots.BeginLoad();
  EXPECT_FALSE(slots.FinishLoad(b, true, true, 5));  // Not newer.
  ModelSlots::Load c = slots.BeginLoad();
  EXPECT_FALSE(slots.FinishLoad(c, true, false, 6));  // Corrupt.
  EXPECT_TRUE(slots.built(c.slot));                   // Its model is kept for reuse.
  ModelSlots::Load d = slots.BeginLoad();
  EXPECT_TRUE(slots.FinishLoad(d, true, true, 7));  // Replaces staged 5.
  EXPECT_EQ(slots.staged_version(), 7u);
  EXPECT_TRUE(slots.SwapIn());
  EXPECT_FALSE(slots.SwapIn());
  EXPECT_EQ(slots.active_version(), 7u);
}

TEST(ModelSlotsTest, ResetKeepsTheHeldSlotUntilItsGenerationEnds) {
  ModelSlots slots;
  ModelSlots::Load a = slots.BeginLoad();
  slots.FinishLoad(a, true, true, 5);
  slots.SwapIn();
  ModelSlots::Use use = slots.BeginGeneration();
  ModelSlots::Load in_flight = slots.BeginLoad();
  slots.Reset();  // The learner went back to version 3.
  EXPECT_FALSE(slots.has_weights());
  EXPECT_EQ(slots.newest_version(), 0u);
  // A load that began before the reset is not staged.
  EXPECT_FALSE(slots.FinishLoad(in_flight, true, true, 6));
  ModelSlots::Load b = slots.BeginLoad();
  EXPECT_NE(b.slot, use.slot);  // Still held by the generation.
  EXPECT_TRUE(slots.FinishLoad(b, true, true, 3));
  ModelSlots::Load c = slots.BeginLoad();
  EXPECT_NE(c.slot, use.slot);
  slots.FinishLoad(c, true, false, 4);
  slots.EndGeneration();
  EXPECT_TRUE(slots.SwapIn());
  EXPECT_EQ(slots.active_version(), 3u);
}

// A SplitMix64 stream per seed; each seed starts at a scrambled point, so
// the streams of neighbouring seeds do not overlap.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(SplitMix64(seed ^ 0x5eed5eed5eed5eedULL)) {}
  uint64_t Next() { return SplitMix64(state_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, n) (n small: the modulo bias is negligible).
  uint64_t Below(uint64_t n) { return Next() % n; }
  bool Chance(int percent) { return static_cast<int>(Below(100)) < percent; }

 private:
  uint64_t state_;
};

constexpr int64_t kGarbage = -1;  // A model being written.
constexpr int64_t kNone = -2;     // No model built in the slot.

void RunSequence(uint64_t seed, int steps) {
  SCOPED_TRACE(absl::StrCat("RLVR_TEST_SEED=", seed));
  Rng rng(seed);
  ModelSlots slots;
  // The simulated models: which version each slot's weights are.
  std::array<int64_t, ModelSlots::kSlots> memory;
  memory.fill(kNone);
  // The reference: versions only.
  uint64_t active = 0, staged = 0;
  int active_slot = -1, staged_slot = -1;
  uint64_t resets = 0;
  bool loading = false;
  ModelSlots::Load load;
  uint64_t load_resets = 0;
  bool generating = false;
  ModelSlots::Use use;
  uint64_t last_used = 0;  // Newest version generated with since the last reset.
  uint64_t learner = 1;    // Newest version the "learner" offers.

  for (int step = 0; step < steps && !::testing::Test::HasFailure(); ++step) {
    const int op = static_cast<int>(rng.Below(100));
    if (op < 20) {  // The weight thread takes a slot for the next blob.
      if (loading) continue;
      load = slots.BeginLoad();
      ASSERT_GE(load.slot, 0);
      ASSERT_LT(load.slot, ModelSlots::kSlots);
      ASSERT_EQ(load.built, memory[load.slot] != kNone);
      // Never a slot in use: scribbling over it would be seen below.
      ASSERT_FALSE(generating && load.slot == use.slot) << "loading the model a batch holds";
      // A free slot, and one with a model built if any free slot has one.
      auto is_free = [&](int s) {
        return s != active_slot && s != staged_slot && !(generating && s == use.slot);
      };
      ASSERT_TRUE(is_free(load.slot)) << "slot " << load.slot << " is not free";
      for (int s = 0; s < ModelSlots::kSlots; ++s) {
        if (is_free(s) && memory[s] != kNone) {
          ASSERT_TRUE(load.built) << "built slot passed over";
        }
      }
      memory[load.slot] = kGarbage;
      loading = true;
      load_resets = resets;
    } else if (op < 40) {  // The load ends: built or not, loaded or not, some version.
      if (!loading) continue;
      const bool built = !rng.Chance(5);
      const bool loaded = built && !rng.Chance(15);
      uint64_t version = learner;
      if (rng.Chance(20)) version = std::max<uint64_t>(1, learner - rng.Below(3));
      if (rng.Chance(60)) ++learner;
      const bool newer = version > std::max(active, staged);
      const bool expect = built && loaded && newer && load_resets == resets;
      memory[load.slot] = built ? (loaded ? static_cast<int64_t>(version) : kGarbage) : kNone;
      ASSERT_EQ(slots.FinishLoad(load, built, loaded, version), expect);
      if (expect) {
        staged = version;
        staged_slot = load.slot;
      }
      loading = false;
    } else if (op < 60) {  // Generation, between batches: swap, then start a batch.
      if (generating) continue;
      const bool swapped = slots.SwapIn();
      ASSERT_EQ(swapped, staged != 0);
      if (swapped) {
        active = staged;
        active_slot = staged_slot;
        staged = 0;
        staged_slot = -1;
      }
      if (active == 0) continue;
      use = slots.BeginGeneration();
      generating = true;
      ASSERT_EQ(use.version, active);
      ASSERT_EQ(memory[use.slot], static_cast<int64_t>(use.version))
          << "generation reads a slot that does not hold its version";
      ASSERT_GE(use.version, last_used) << "an older version after a newer one";
      last_used = use.version;
    } else if (op < 85) {  // The batch ends.
      if (!generating) continue;
      slots.EndGeneration();
      generating = false;
      use = ModelSlots::Use{};
    } else if (op < 90) {  // The learner went back in time.
      slots.Reset();
      ++resets;
      active = staged = 0;
      active_slot = staged_slot = -1;
      last_used = 0;
      learner = 1 + rng.Below(learner);
    } else if (op < 93) {  // A model built ahead.
      const int s = slots.AdoptBuilt();
      if (s >= 0) {
        ASSERT_EQ(memory[s], kNone);
        ASSERT_FALSE(generating && s == use.slot);
        memory[s] = kGarbage;
      }
    }
    // What a generation in progress reads never changes under it.
    if (generating) {
      ASSERT_EQ(memory[use.slot], static_cast<int64_t>(use.version)) << "step " << step;
    }
    ASSERT_EQ(slots.active_version(), active);
    ASSERT_EQ(slots.staged_version(), staged);
    ASSERT_EQ(slots.newest_version(), std::max(active, staged));
    ASSERT_EQ(slots.has_weights(), active != 0 || staged != 0);
    ASSERT_EQ(slots.loading(), loading);
    ASSERT_EQ(slots.generating(), generating);
  }
}

TEST(ModelSlotsTest, RandomInterleavingsNeverLoadAModelInUse) {
  uint64_t base = 7;
  if (const char* env = std::getenv("RLVR_TEST_SEED")) base = std::strtoull(env, nullptr, 10);
  constexpr int kSequences = 3000;
  for (int i = 0; i < kSequences && !HasFailure(); ++i) RunSequence(base + i, 300);
}

}  // namespace
}  // namespace rlvr::actor
