// Process-wide absl::Mutex policy for the long-running roles.
//
// Debian's Abseil is built without NDEBUG, so absl::Mutex runs its debug-mode
// deadlock detector by default: every Lock records the lock order in a
// process-wide graph under a global spinlock (~400 instructions per Lock
// instead of ~20). gRPC 1.51's own mutexes are absl::Mutex too, so it is paid
// on every gRPC lock as well: 4.7% of the user-space instructions of a
// one-stream learner_bench ingest run (callgrind), on ~7 locks per group.
// Abseil built for release (NDEBUG) does not detect deadlocks by default;
// DisableMutexDeadlockDetection makes the Debian build do the same. Tests do
// not call it, so they keep the detector.
//
// Call once at process start, before other threads exist. Not thread-safe.
#ifndef RLVR_COMMON_BASE_MUTEX_POLICY_H_
#define RLVR_COMMON_BASE_MUTEX_POLICY_H_

namespace rlvr {

// absl::SetMutexDeadlockDetectionMode(kIgnore).
void DisableMutexDeadlockDetection();

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_MUTEX_POLICY_H_
