// KeepFreedMemoryForReuse: a 16 MiB block freed and allocated again comes
// back without page faults (the pages stayed in the heap), where glibc's
// defaults would mmap it afresh and fault every page in again; and many
// threads allocating at once share at most AllocatorArenaCap() arenas.
// ReleaseFreedMemory gives freed blocks between live ones back (the RSS
// falls); BurstTrimSchedule releases once per burst, after it, rate limited,
// and MemoryReleaser carries it out.
#include "common/base/memory_policy.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/barrier.h"
#include "absl/time/clock.h"

namespace rlvr {
namespace {

long MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Minor page faults taken while allocating, touching and freeing `bytes`.
long FaultsToUse(size_t bytes) {
  const long before = MinorFaults();
  char* p = static_cast<char*>(std::malloc(bytes));
  std::memset(p, 1, bytes);
  asm volatile("" : : "r"(p) : "memory");  // Keep the writes.
  std::free(p);
  return MinorFaults() - before;
}

// The VmFlags of the mapping that holds `p` (/proc/self/smaps), or "".
std::string VmFlagsAt(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return "";
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  std::string flags;
  char line[512];
  while (flags.empty() && std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx ", &begin, &end) == 2) {
      inside = begin <= at && at < end;
    } else if (inside && std::strncmp(line, "VmFlags:", 8) == 0) {
      flags = line + 8;
    }
  }
  std::fclose(f);
  return flags;
}

TEST(MemoryPolicyTest, AdvisesHugePagesOnTheAlignedInteriorOnly) {
  constexpr size_t kHuge = 2 << 20;
  void* map = mmap(nullptr, 4 * kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  // At least three whole huge pages of the mapping follow `aligned`.
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(map) + kHuge - 1) &
                                          ~static_cast<uintptr_t>(kHuge - 1));
  // No whole aligned huge page inside: nothing to advise.
  EXPECT_FALSE(AdviseHugePages(aligned + 4096, kHuge));
  EXPECT_FALSE(AdviseHugePages(aligned, kHuge - 1));
  EXPECT_FALSE(AdviseHugePages(aligned + 4096, 2 * kHuge - 8192));
  EXPECT_EQ(VmFlagsAt(aligned + kHuge).find(" hg"), std::string::npos);
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0) {
    // [aligned + 4 KiB, aligned + 4 MiB + 4 KiB) holds one whole: the second.
    EXPECT_TRUE(AdviseHugePages(aligned + 4096, 2 * kHuge));
    EXPECT_NE(VmFlagsAt(aligned + kHuge).find(" hg"), std::string::npos);
    EXPECT_EQ(VmFlagsAt(aligned).find(" hg"), std::string::npos);
    EXPECT_EQ(VmFlagsAt(aligned + 2 * kHuge).find(" hg"), std::string::npos);
  }
  munmap(map, 4 * kHuge);
}

TEST(MemoryPolicyTest, FreedBlocksAreReusedWithoutFaults) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr) GTEST_SKIP() << "GLIBC_TUNABLES is set";
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc";
#endif
  // Small pages only, so that the fault counts do not depend on whether the
  // kernel backs the block with huge pages.
  ASSERT_EQ(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0), 0);
  ASSERT_TRUE(KeepFreedMemoryForReuse());
  constexpr size_t kBytes = 16 << 20;  // 4096 pages.
  const long first = FaultsToUse(kBytes);
  const long again = FaultsToUse(kBytes);
  EXPECT_GT(first, 1000) << "the first use must fault its pages in";
  EXPECT_LT(again, first / 10) << "first " << first << " faults, again " << again;
}

// The number of arenas (<heap nr=...> elements) in glibc's malloc_info.
int Arenas() {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  malloc_info(0, f);
  std::fclose(f);
  const std::string info(buf, len);
  std::free(buf);
  int n = 0;
  for (size_t at = info.find("<heap nr="); at != std::string::npos;
       at = info.find("<heap nr=", at + 1)) {
    ++n;
  }
  return n;
}

TEST(MemoryPolicyTest, ThreadsShareAtMostOneArenaPerCpu) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr) GTEST_SKIP() << "GLIBC_TUNABLES is set";
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc";
#endif
  ASSERT_TRUE(KeepFreedMemoryForReuse());
  // Threads that allocate while all of them are alive: glibc would give each
  // its own arena, up to 8 per CPU.
  constexpr int kThreads = 24;
  absl::Barrier* barrier = new absl::Barrier(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      void* p = std::malloc(64 << 10);
      asm volatile("" : : "r"(p) : "memory");
      if (barrier->Block()) delete barrier;
      std::free(p);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(Arenas(), AllocatorArenaCap());
}

// Many small blocks freed between live ones: kept by the policy (no trim of
// the heap's top can return them), returned by ReleaseFreedMemory.
TEST(MemoryPolicyTest, ReleaseFreedMemoryReturnsFreedBlocksBetweenLiveOnes) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc";
#endif
  if (std::getenv("GLIBC_TUNABLES") == nullptr) {
    ASSERT_TRUE(KeepFreedMemoryForReuse());
  }
  constexpr int kBlocks = 2048;
  constexpr size_t kBlockBytes = 32 << 10;  // 64 MiB in all.
  std::vector<char*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(kBlockBytes)));
    std::memset(blocks.back(), 1, kBlockBytes);
  }
  // Every other block freed: 32 MiB free, none of it at the heap's top.
  for (int i = 0; i < kBlocks; i += 2) std::free(blocks[i]);
  const int64_t kept = ResidentBytes();
  ASSERT_GT(kept, 0);
  ASSERT_TRUE(ReleaseFreedMemory());
  const int64_t released = ResidentBytes();
  EXPECT_LT(released, kept - (24 << 20)) << kept << " -> " << released << " bytes resident";
  for (int i = 1; i < kBlocks; i += 2) std::free(blocks[i]);
}

TEST(BurstTrimScheduleTest, OncePerBurstAfterItIsOverRateLimited) {
  BurstTrimSchedule::Options o;
  o.min_ended = 3;
  o.quiet = absl::Milliseconds(500);
  o.min_interval = absl::Seconds(10);
  BurstTrimSchedule s(o);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_FALSE(s.Due(t0));
  s.Ended(t0);
  s.Ended(t0);
  EXPECT_FALSE(s.Due(t0 + absl::Seconds(5))) << "fewer than min_ended streams";
  s.Ended(t0 + absl::Seconds(1));
  EXPECT_FALSE(s.Due(t0 + absl::Milliseconds(1400))) << "the burst may go on";
  EXPECT_TRUE(s.Due(t0 + absl::Milliseconds(1500)));
  s.Released(t0 + absl::Milliseconds(1500));
  EXPECT_EQ(s.ended(), 0);
  EXPECT_FALSE(s.Due(t0 + absl::Seconds(2)));
  // The next burst, over at once: released only 10 s after the last release.
  for (int i = 0; i < 5; ++i) s.Ended(t0 + absl::Seconds(2));
  EXPECT_FALSE(s.Due(t0 + absl::Seconds(11)));
  EXPECT_TRUE(s.Due(t0 + absl::Milliseconds(11500)));
  // min_ended <= 0: never.
  o.min_ended = 0;
  BurstTrimSchedule never(o);
  for (int i = 0; i < 100; ++i) never.Ended(t0);
  EXPECT_FALSE(never.Due(t0 + absl::Hours(1)));
}

TEST(MemoryReleaserTest, ReleasesOnceAfterABurst) {
  BurstTrimSchedule::Options o;
  o.min_ended = 10;
  o.quiet = absl::Milliseconds(50);
  o.min_interval = absl::ZeroDuration();
  int calls = 0;
  MemoryReleaser releaser(o, [&] { return ++calls > 0; });
  for (int i = 0; i < 9; ++i) releaser.StreamEnded();
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_FALSE(releaser.ReleaseIfDue());
  releaser.StreamEnded();
  EXPECT_FALSE(releaser.ReleaseIfDue()) << "released during the burst";
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_TRUE(releaser.ReleaseIfDue());
  EXPECT_FALSE(releaser.ReleaseIfDue());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(releaser.releases(), 1);
}

}  // namespace
}  // namespace rlvr
