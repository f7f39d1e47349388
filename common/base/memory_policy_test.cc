// KeepFreedMemoryForReuse: a 16 MiB block freed and allocated again comes
// back without page faults (the pages stayed in the heap), where glibc's
// defaults would mmap it afresh and fault every page in again; and many
// threads allocating at once share at most AllocatorArenaCap() arenas.
#include "common/base/memory_policy.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/barrier.h"

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

}  // namespace
}  // namespace rlvr
