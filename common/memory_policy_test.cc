// KeepFreedMemoryForReuse: a 16 MiB block freed and allocated again comes
// back without page faults (the pages stayed in the heap), where glibc's
// defaults would mmap it afresh and fault every page in again.
#include "common/memory_policy.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

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

}  // namespace
}  // namespace rlvr
