// The Gloo factory of builds whose LibTorch ships no Gloo headers (pip's
// torch wheels; cmake/Torch.cmake sets RLVR_HAVE_GLOO): MakeCommunicator
// answers Unimplemented for "gloo". NCCL and single-rank runs are unaffected.
#include "learner/trainer/communicator_backends.h"

namespace rlvr::learner::internal {

absl::StatusOr<std::unique_ptr<Communicator>> MakeGlooCommunicator(const CommunicatorOptions&) {
  return absl::UnimplementedError(
      "the gloo communicator is not in this build: its LibTorch ships no Gloo headers "
      "(use `rlvr learner --backend nccl`, or a LibTorch with Gloo such as Debian's libtorch-dev)");
}

}  // namespace rlvr::learner::internal
