#include "common/memory_policy.h"

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace rlvr {

bool KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return false;
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit (half its
  // per-thread heap size); weight blobs (100s of MiB) are still mmap'ed, and
  // the actor recycles its blob buffer itself.
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1;
  return mmap_ok && trim_ok;
#else
  return false;
#endif
}

}  // namespace rlvr
