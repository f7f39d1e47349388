#include "common/base/memory_policy.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace rlvr {

int AllocatorArenaCap() {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::clamp<long>(cpus, 1, 8));
}

bool KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return false;
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit (half its
  // per-thread heap size); weight blobs (100s of MiB) are still mmap'ed, and
  // the actor recycles its blob buffer itself.
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1;
  const bool arenas_ok = mallopt(M_ARENA_MAX, AllocatorArenaCap()) == 1;
  return mmap_ok && trim_ok && arenas_ok;
#else
  return false;
#endif
}

}  // namespace rlvr
