#include "learner/trainer/communicator.h"

#include <torch/torch.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "learner/trainer/communicator_backends.h"

namespace rlvr::learner {

Communicator::~Communicator() = default;

absl::Status Communicator::AllReduceSum(const std::vector<at::Tensor>& tensors) {
  return AllReduce(tensors, ReduceOp::kSum, default_timeout_);
}

absl::Status Communicator::AllReduceSum(const at::Tensor& flat) {
  return AllReduce({flat}, ReduceOp::kSum, default_timeout_);
}

absl::Status Communicator::Broadcast(const at::Tensor& tensor, int root) {
  return Broadcast(tensor, root, default_timeout_);
}

absl::Status Communicator::BroadcastBytes(std::string* bytes, int root, absl::Duration timeout) {
  if (root < 0 || root >= world_size()) {
    return absl::InvalidArgumentError(absl::StrCat("BroadcastBytes: bad root ", root));
  }
  if (world_size() == 1) return absl::OkStatus();
  const bool is_root = rank() == root;
  torch::Tensor length = torch::zeros({1}, torch::kInt64);
  if (is_root) length[0] = static_cast<int64_t>(bytes->size());
  RETURN_IF_ERROR(Broadcast(length, root, timeout));
  const int64_t n = length[0].item<int64_t>();
  if (n == 0) {
    bytes->clear();
    return absl::OkStatus();
  }
  torch::Tensor data = torch::empty({n}, torch::kUInt8);
  if (is_root) std::memcpy(data.data_ptr<uint8_t>(), bytes->data(), static_cast<size_t>(n));
  RETURN_IF_ERROR(Broadcast(data, root, timeout));
  if (!is_root) bytes->assign(reinterpret_cast<const char*>(data.data_ptr<uint8_t>()), n);
  return absl::OkStatus();
}

absl::Status Communicator::BroadcastBytes(std::string* bytes, int root) {
  return BroadcastBytes(bytes, root, default_timeout_);
}

absl::Status Communicator::Barrier() { return Barrier(default_timeout_); }

namespace internal {
namespace {

// world_size 1: nothing to exchange.
class LocalCommunicator final : public Communicator {
 public:
  explicit LocalCommunicator(absl::Duration timeout) : Communicator(timeout) {}
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend() const override { return "local"; }
  absl::Status AllReduce(const std::vector<at::Tensor>&, ReduceOp, absl::Duration) override {
    return absl::OkStatus();
  }
  absl::Status Broadcast(const at::Tensor&, int root, absl::Duration) override {
    if (root != 0) return absl::InvalidArgumentError(absl::StrCat("Broadcast: bad root ", root));
    return absl::OkStatus();
  }
  absl::Status Barrier(absl::Duration) override { return absl::OkStatus(); }
  absl::Status Announce(const std::string&) override { return absl::OkStatus(); }
  absl::Status AwaitAnnouncement(const std::string&, absl::Duration) override {
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Communicator> MakeLocalCommunicator(const CommunicatorOptions& options) {
  return std::make_unique<LocalCommunicator>(options.timeout);
}

absl::Status CollectiveError(const std::string& backend, const std::string& op, int rank,
                             int world_size, bool timed_out, const std::string& detail) {
  std::string message = absl::StrCat(backend, " ", op, " failed on rank ", rank, " of ", world_size,
                                     timed_out ? " (timed out)" : "", ": ", detail);
  return timed_out ? absl::DeadlineExceededError(message) : absl::UnavailableError(message);
}

bool LooksLikeTimeout(const std::string& message) {
  return absl::StrContains(message, "imed out") || absl::StrContains(message, "imeout") ||
         absl::StrContains(message, "TIMEOUT");
}

}  // namespace internal

bool HaveNcclCommunicator() {
#if RLVR_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

std::string ResolveCommunicatorBackend(const CommunicatorOptions& options) {
  if (options.backend != "auto") return options.backend;
  if (options.world_size == 1) return "local";
  if (HaveNcclCommunicator() && torch::cuda::is_available()) return "nccl";
  return "gloo";
}

absl::StatusOr<std::unique_ptr<Communicator>> MakeCommunicator(const CommunicatorOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("communicator: rank ", options.rank,
                                                   " outside world of size ", options.world_size));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("communicator: timeout must be positive");
  }
  const std::string backend = ResolveCommunicatorBackend(options);
  if (backend == "local") {
    if (options.world_size != 1) {
      return absl::InvalidArgumentError("communicator: backend \"local\" needs world_size 1");
    }
    return internal::MakeLocalCommunicator(options);
  }
  if (backend != "gloo" && backend != "nccl") {
    return absl::InvalidArgumentError(absl::StrCat("communicator: unknown backend \"", backend,
                                                   "\" (auto | gloo | nccl | local)"));
  }
  if (options.master_port <= 0 || options.master_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("communicator: backend ", backend,
                                                   " needs master_port in [1, 65535], got ",
                                                   options.master_port));
  }
  if (backend == "gloo") return internal::MakeGlooCommunicator(options);
  return internal::MakeNcclCommunicator(options);
}

}  // namespace rlvr::learner
