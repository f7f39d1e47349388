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
#ifndef RLVR_COMMON_BASE_MEMORY_POLICY_H_
#define RLVR_COMMON_BASE_MEMORY_POLICY_H_

namespace rlvr {

// Applies the policy unless the operator set GLIBC_TUNABLES (their choice
// wins). Returns true if it was applied. A no-op returning false where the C
// library is not glibc.
bool KeepFreedMemoryForReuse();

// The arena cap KeepFreedMemoryForReuse sets: online CPUs, clamped to [1, 8].
int AllocatorArenaCap();

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_MEMORY_POLICY_H_
