// Internal to rlvr_trainer: the factories of the communicator backends, used
// by MakeCommunicator, and the error convention they share.
#ifndef RLVR_LEARNER_TRAINER_COMMUNICATOR_BACKENDS_H_
#define RLVR_LEARNER_TRAINER_COMMUNICATOR_BACKENDS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "learner/trainer/communicator.h"

namespace rlvr::learner::internal {

std::unique_ptr<Communicator> MakeLocalCommunicator(const CommunicatorOptions& options);
absl::StatusOr<std::unique_ptr<Communicator>> MakeGlooCommunicator(
    const CommunicatorOptions& options);
// Unimplemented in builds without RLVR_HAVE_NCCL.
absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicator(
    const CommunicatorOptions& options);

int NcclVisibleDevices();

// "<backend> <op> failed on rank R of W: <detail>", as DeadlineExceeded when
// `timed_out`, else Unavailable.
absl::Status CollectiveError(const std::string& backend, const std::string& op, int rank,
                             int world_size, bool timed_out, const std::string& detail);

// Whether an exception message from a backend reports a timeout.
bool LooksLikeTimeout(const std::string& message);

}  // namespace rlvr::learner::internal

#endif  // RLVR_LEARNER_TRAINER_COMMUNICATOR_BACKENDS_H_
