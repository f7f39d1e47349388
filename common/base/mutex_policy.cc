#include "common/base/mutex_policy.h"

#include "absl/synchronization/mutex.h"

namespace rlvr {

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace rlvr
