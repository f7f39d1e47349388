#include "common/base/memory_policy.h"

#include <glog/logging.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace rlvr {

bool AdviseHugePages(void* p, size_t n) {
  constexpr uintptr_t kHuge = 2 << 20;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = (at + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (at + n) & ~(kHuge - 1);
  if (n < kHuge || end <= begin) return false;
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) == 0;
}

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

bool ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
  return true;
#else
  return false;
#endif
}

int64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long long pages_total = 0;
  long long pages_resident = 0;
  const int got = std::fscanf(f, "%lld %lld", &pages_total, &pages_resident);
  std::fclose(f);
  if (got != 2) return -1;
  return static_cast<int64_t>(pages_resident) * sysconf(_SC_PAGESIZE);
}

void BurstTrimSchedule::Ended(absl::Time now) {
  ++ended_;
  last_end_ = std::max(last_end_, now);
}

bool BurstTrimSchedule::Due(absl::Time now) const {
  return options_.min_ended > 0 && ended_ >= options_.min_ended &&
         now - last_end_ >= options_.quiet && now - last_release_ >= options_.min_interval;
}

void BurstTrimSchedule::Released(absl::Time now) {
  ended_ = 0;
  last_release_ = now;
}

MemoryReleaser::MemoryReleaser(BurstTrimSchedule::Options schedule, std::function<bool()> release)
    : release_(std::move(release)), schedule_(schedule) {}

void MemoryReleaser::StreamEnded() {
  absl::MutexLock l(&mu_);
  schedule_.Ended(absl::Now());
}

bool MemoryReleaser::ReleaseIfDue() {
  absl::MutexLock one(&release_mu_);
  int ended;
  {
    absl::MutexLock l(&mu_);
    const absl::Time now = absl::Now();
    if (!schedule_.Due(now)) return false;
    ended = schedule_.ended();
    schedule_.Released(now);
  }
  // Milliseconds of work: streams that end meanwhile do not wait for it.
  const int64_t before = ResidentBytes();
  const absl::Time t0 = absl::Now();
  release_();
  const absl::Duration took = absl::Now() - t0;
  const int64_t after = ResidentBytes();
  LOG(INFO) << "returned freed memory to the OS after " << ended << " streams ended: RSS "
            << before / 1000000 << " -> " << after / 1000000 << " MB in "
            << absl::ToDoubleMilliseconds(took) << " ms";
  absl::MutexLock l(&mu_);
  ++releases_;
  return true;
}

int MemoryReleaser::releases() {
  absl::MutexLock l(&mu_);
  return releases_;
}

}  // namespace rlvr
