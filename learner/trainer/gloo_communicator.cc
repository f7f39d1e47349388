// The Gloo communicator: torch c10d ProcessGroupGloo over a c10d TCPStore
// hosted by rank 0. Every c10d/Gloo exception is caught here and turned into
// an absl::Status.
#include <torch/torch.h>

#include <chrono>
#include <exception>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "learner/trainer/communicator_backends.h"

namespace rlvr::learner::internal {
namespace {

std::chrono::milliseconds ToMillis(absl::Duration d) {
  return std::chrono::milliseconds(std::max<int64_t>(1, absl::ToInt64Milliseconds(d)));
}

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || absl::StartsWith(addr, "127.");
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const CommunicatorOptions& options, c10::intrusive_ptr<c10d::Store> store,
                   c10::intrusive_ptr<c10d::ProcessGroupGloo> group)
      : Communicator(options.timeout),
        rank_(options.rank),
        world_size_(options.world_size),
        store_(std::move(store)),
        group_(std::move(group)) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string backend() const override { return "gloo"; }

  absl::Status AllReduce(const std::vector<at::Tensor>& tensors, ReduceOp op,
                         absl::Duration timeout) override {
    if (tensors.empty()) return absl::OkStatus();
    return Run("all_reduce", timeout, [&] {
      std::vector<at::Tensor> list(tensors.begin(), tensors.end());
      c10d::AllreduceOptions opts;
      opts.reduceOp = op == ReduceOp::kSum ? c10d::ReduceOp::SUM : c10d::ReduceOp::MAX;
      opts.timeout = ToMillis(timeout);
      // One Gloo call per tensor keeps each buffer in place (the coalesced
      // variant copies); the trainer passes one flat tensor anyway.
      for (auto& t : list) {
        std::vector<at::Tensor> one = {t};
        group_->allreduce(one, opts)->wait(ToMillis(timeout + absl::Seconds(5)));
      }
    });
  }

  absl::Status Broadcast(const at::Tensor& tensor, int root, absl::Duration timeout) override {
    if (root < 0 || root >= world_size_) {
      return absl::InvalidArgumentError(absl::StrCat("Broadcast: bad root ", root));
    }
    return Run("broadcast", timeout, [&] {
      std::vector<at::Tensor> list = {tensor};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      opts.rootTensor = 0;
      opts.timeout = ToMillis(timeout);
      group_->broadcast(list, opts)->wait(ToMillis(timeout + absl::Seconds(5)));
    });
  }

  absl::Status Barrier(absl::Duration timeout) override {
    return Run("barrier", timeout, [&] {
      c10d::BarrierOptions opts;
      opts.timeout = ToMillis(timeout);
      group_->barrier(opts)->wait(ToMillis(timeout + absl::Seconds(5)));
    });
  }

  absl::Status Announce(const std::string& key) override {
    return Run("announce", default_timeout(), /*breaks=*/false,
               [&] { store_->set(absl::StrCat("rlvr/announce/", key), std::vector<uint8_t>{1}); });
  }

  absl::Status AwaitAnnouncement(const std::string& key, absl::Duration timeout) override {
    return Run("await_announcement", timeout, /*breaks=*/false,
               [&] { store_->wait({absl::StrCat("rlvr/announce/", key)}, ToMillis(timeout)); });
  }

 private:
  // Runs one collective; Gloo's own per-op timeout is `timeout` (capped by
  // the context's), and the wait on the work handle has a few seconds of
  // slack beyond it as a backstop. A failed collective breaks the
  // communicator; a failed store operation (`breaks` false) does not, since
  // it leaves the order of collectives intact.
  template <typename Fn>
  absl::Status Run(const char* op, absl::Duration timeout, Fn&& fn) {
    return Run(op, timeout, /*breaks=*/true, std::forward<Fn>(fn));
  }
  template <typename Fn>
  absl::Status Run(const char* op, absl::Duration timeout, bool breaks, Fn&& fn) {
    if (broken_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "gloo ", op, " on rank ", rank_, ": communicator unusable after an earlier failure"));
    }
    try {
      fn();
      return absl::OkStatus();
    } catch (const std::exception& e) {
      if (breaks) broken_ = true;
      const std::string what = e.what();
      return CollectiveError(
          "gloo", op, rank_, world_size_, LooksLikeTimeout(what),
          absl::StrCat(what.substr(0, 400), " (timeout ", absl::FormatDuration(timeout), ")"));
    }
  }

  const int rank_;
  const int world_size_;
  bool broken_ = false;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> MakeGlooCommunicator(
    const CommunicatorOptions& options) {
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(options.master_port);
    store_options.isServer = options.rank == 0;
    store_options.numWorkers = options.world_size;
    store_options.waitWorkers = false;  // The process-group rendezvous waits instead.
    store_options.timeout = ToMillis(options.timeout);
    auto store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);

    auto pg_options = c10d::ProcessGroupGloo::Options::create(ToMillis(options.timeout));
    if (!options.gloo_interface.empty()) {
      pg_options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForInterface(options.gloo_interface));
    } else if (IsLoopback(options.master_addr)) {
      pg_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      pg_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    pg_options->threads = std::max(1, options.gloo_threads);
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, options.rank,
                                                             options.world_size, pg_options);
    return std::unique_ptr<Communicator>(
        std::make_unique<GlooCommunicator>(options, std::move(store), std::move(group)));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return CollectiveError(
        "gloo", absl::StrCat("rendezvous at ", options.master_addr, ":", options.master_port),
        options.rank, options.world_size, LooksLikeTimeout(what), what.substr(0, 400));
  }
}

}  // namespace rlvr::learner::internal
