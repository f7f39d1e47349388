// For a LibTorch whose headers lack Gloo: the Gloo factory MakeCommunicator
// links against, answering Unimplemented (scripts/gpu_check only).
#include "learner/trainer/communicator_backends.h"

namespace rlvr::learner::internal {

absl::StatusOr<std::unique_ptr<Communicator>> MakeGlooCommunicator(const CommunicatorOptions&) {
  return absl::UnimplementedError("gpu_check: this LibTorch ships no Gloo headers");
}

}  // namespace rlvr::learner::internal
