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
// Call once at process start, before other threads exist. Not thread-safe.
#ifndef RLVR_COMMON_MEMORY_POLICY_H_
#define RLVR_COMMON_MEMORY_POLICY_H_

namespace rlvr {

// Applies the policy unless the operator set GLIBC_TUNABLES (their choice
// wins). Returns true if it was applied. A no-op returning false where the C
// library is not glibc.
bool KeepFreedMemoryForReuse();

}  // namespace rlvr

#endif  // RLVR_COMMON_MEMORY_POLICY_H_
