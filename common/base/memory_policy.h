// Process-wide allocator policy for the long-running roles.
//
// gRPC receives every message into freshly allocated buffers (megabytes per
// read on the weight stream) and frees them once parsed. With glibc's
// defaults such blocks are mmap'ed or trimmed back to the kernel on free,
// so the next read faults its pages in again and the kernel zeroes them: on
// the weight fan-out that was the largest cost after the socket copies
// themselves. KeepFreedMemoryForReuse makes glibc serve blocks below 32 MiB
// from its heaps and keep up to 256 MiB of freed memory for reuse.
//
// It also caps glibc's arenas (per-thread heaps) at the number of CPUs (at
// most 8; glibc's default is 8 per CPU). gRPC reads on whichever of its
// threads polls, and each thread allocates from its own arena, so with the
// default every one of a dozen gRPC threads grew its own heap of receive
// buffers, page by page, over the first versions and batches: thousands of
// first-touch page faults per version (learner_bench, 1-8 watchers) where
// the capped process takes tens. Memory freed into an arena is only reused
// by the threads on it; fewer arenas share it. No more arenas than CPUs
// costs little contention: no more threads than that run at once.
//
// Call once at process start, before other threads exist. Not thread-safe.
//
// The policy never gives freed memory back by itself, and glibc's trim (of
// the heap's top only) could not give back most of it anyway: after a burst
// of short-lived streams the freed blocks lie between live ones. A server
// that sees such bursts has a MemoryReleaser call ReleaseFreedMemory when
// one is over (the learner: its session and weight streams;
// docs/reliability.md has the figures).
#ifndef RLVR_COMMON_BASE_MEMORY_POLICY_H_
#define RLVR_COMMON_BASE_MEMORY_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rlvr {

// Applies the policy unless the operator set GLIBC_TUNABLES (their choice
// wins). Returns true if it was applied. A no-op returning false where the C
// library is not glibc.
bool KeepFreedMemoryForReuse();

// The arena cap KeepFreedMemoryForReuse sets: online CPUs, clamped to [1, 8].
int AllocatorArenaCap();

// Returns the free pages of every glibc arena to the kernel (malloc_trim(0):
// the heap's top and the free blocks inside it). It holds each arena's lock
// in turn while it works, milliseconds per 100 MB free (threads allocating
// from that arena wait), and the pages it returns fault in again when used:
// call it from a background thread, after a burst, not on a hot path.
// Thread-safe. False where the C library is not glibc.
bool ReleaseFreedMemory();

// The process's resident set size in bytes (/proc/self/statm), or -1.
int64_t ResidentBytes();

// Asks the kernel to back the 2 MiB-aligned interior of [p, p + n) with huge
// pages, where transparent huge pages are in "madvise" mode: a 100 MB buffer
// then costs ~50 page faults instead of ~25,000, and its copies miss the TLB
// less. Call before the pages are first touched. Advice only: returns
// whether the kernel took it (false where [p, p + n) holds no whole huge
// page or the kernel has no transparent huge pages).
bool AdviseHugePages(void* p, size_t n);

// When a server should call ReleaseFreedMemory: once at least
// `min_ended` streams have ended since the last release and none for
// `quiet` (the burst is over), and not within `min_interval` of the last
// release. Decides only; times are passed in.
//
// Thread safety: none (the owner serialises calls).
class BurstTrimSchedule {
 public:
  struct Options {
    // Streams ended since the last release; <= 0 never releases.
    int min_ended = 64;
    // Time since the last stream ended.
    absl::Duration quiet = absl::Milliseconds(500);
    // Time since the last release.
    absl::Duration min_interval = absl::Seconds(10);
  };
  explicit BurstTrimSchedule(Options options) : options_(options) {}

  // A stream ended at `now`.
  void Ended(absl::Time now);
  // Whether to release now.
  bool Due(absl::Time now) const;
  // Released at `now`: counting starts again.
  void Released(absl::Time now);
  // Streams ended since the last release.
  int ended() const { return ended_; }

 private:
  const Options options_;
  int ended_ = 0;
  absl::Time last_end_ = absl::InfinitePast();
  absl::Time last_release_ = absl::InfinitePast();
};

// Returns freed memory to the OS after bursts of ended streams: servers
// report each ended stream (StreamEnded, cheap), and a background thread
// calls ReleaseIfDue now and then (every 10-100 ms), which releases when the
// schedule says so and logs the RSS before and after. Owns no thread.
//
// Thread safety: all methods are thread-safe; ReleaseIfDue does its work
// without holding the lock that StreamEnded takes.
class MemoryReleaser {
 public:
  // `release` returns the memory (ReleaseFreedMemory unless a test counts).
  explicit MemoryReleaser(BurstTrimSchedule::Options schedule = {},
                          std::function<bool()> release = ReleaseFreedMemory);

  void StreamEnded() ABSL_LOCKS_EXCLUDED(mu_);
  // Releases if due; whether it did.
  bool ReleaseIfDue() ABSL_LOCKS_EXCLUDED(mu_);
  // Releases done so far.
  int releases() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::function<bool()> release_;
  absl::Mutex release_mu_;  // One release at a time; taken before mu_.
  absl::Mutex mu_;
  BurstTrimSchedule schedule_ ABSL_GUARDED_BY(mu_);
  int releases_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_MEMORY_POLICY_H_
