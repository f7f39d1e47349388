// The NCCL communicator, written against nccl.h and the CUDA runtime (not
// torch's ProcessGroupNCCL, which Debian's CPU LibTorch does not ship). The
// ncclUniqueId travels through a c10d TCPStore hosted by rank 0.
//
// Tensors: CUDA tensors are reduced in place (after a device synchronize,
// because without c10_cuda we cannot join torch's current stream); CPU
// tensors are staged through a device buffer, so the trainer can use NCCL
// with a CPU LibTorch too.
//
// Timeouts: the communicator is created non-blocking (NCCL >= 2.14) and every
// wait polls the stream and ncclCommGetAsyncError against a deadline; past
// it the communicator is aborted (ncclCommAbort) and DeadlineExceeded is
// returned. Before NCCL 2.14 only the store-side rendezvous is bounded.
#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "learner/trainer/communicator.h"
#include "learner/trainer/communicator_backends.h"

#if RLVR_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

namespace rlvr::learner::internal {

#if RLVR_HAVE_NCCL

#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
#define RLVR_NCCL_NONBLOCKING 1
#else
#define RLVR_NCCL_NONBLOCKING 0
#endif

namespace {

std::chrono::milliseconds ToMillis(absl::Duration d) {
  return std::chrono::milliseconds(std::max<int64_t>(1, absl::ToInt64Milliseconds(d)));
}

absl::StatusOr<ncclDataType_t> NcclType(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return ncclFloat32;
    case at::kDouble:
      return ncclFloat64;
    case at::kHalf:
      return ncclFloat16;
    case at::kLong:
      return ncclInt64;
    case at::kInt:
      return ncclInt32;
    case at::kByte:
      return ncclUint8;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("nccl: unsupported dtype ", std::string(c10::toString(t.scalar_type()))));
  }
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const CommunicatorOptions& options, int device)
      : Communicator(options.timeout),
        rank_(options.rank),
        world_size_(options.world_size),
        device_(device) {}

  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    if (comm_ != nullptr) {
      if (broken_) {
        ncclCommAbort(comm_);
      } else {
        ncclCommDestroy(comm_);
      }
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (staging_ != nullptr) cudaFree(staging_);
  }

  // Rendezvous and communicator creation, bounded by options.timeout.
  absl::Status Init(const CommunicatorOptions& options) {
    const auto deadline = absl::Now() + options.timeout;
    ncclUniqueId id;
    try {
      c10d::TCPStoreOptions store_options;
      store_options.port = static_cast<uint16_t>(options.master_port);
      store_options.isServer = rank_ == 0;
      store_options.numWorkers = world_size_;
      store_options.waitWorkers = false;
      store_options.timeout = ToMillis(options.timeout);
      store_ = c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
      const std::string key = "rlvr/nccl/unique_id";
      if (rank_ == 0) {
        if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
          return Fail("init", false, ncclGetErrorString(r));
        }
        std::vector<uint8_t> bytes(sizeof(id));
        std::memcpy(bytes.data(), &id, sizeof(id));
        store_->set(key, bytes);
      }
      // Store-side barrier: every rank announces itself and waits for all, so
      // that a missing rank fails here, bounded, before NCCL init.
      store_->set(absl::StrCat("rlvr/nccl/ready/", rank_), std::vector<uint8_t>{1});
      std::vector<std::string> keys;
      for (int r = 0; r < world_size_; ++r) keys.push_back(absl::StrCat("rlvr/nccl/ready/", r));
      store_->wait(keys, ToMillis(options.timeout));
      std::vector<uint8_t> bytes = store_->get(key);
      if (bytes.size() != sizeof(id)) return Fail("init", false, "bad ncclUniqueId in store");
      std::memcpy(&id, bytes.data(), sizeof(id));
    } catch (const std::exception& e) {
      const std::string what = e.what();
      return Fail("rendezvous", LooksLikeTimeout(what), what.substr(0, 400));
    }
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
      return Fail("init", false, cudaGetErrorString(e));
    }
    if (cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
        e != cudaSuccess) {
      return Fail("init", false, cudaGetErrorString(e));
    }
#if RLVR_NCCL_NONBLOCKING
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&comm_, world_size_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) return Fail("init", false, ncclGetErrorString(r));
    while (true) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclSuccess) break;
      if (state != ncclInProgress) return Fail("init", false, ncclGetErrorString(state));
      if (absl::Now() > deadline) return Fail("init", true, "ncclCommInitRankConfig");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
#else
    (void)deadline;
    if (ncclResult_t r = ncclCommInitRank(&comm_, world_size_, id, rank_); r != ncclSuccess) {
      return Fail("init", false, ncclGetErrorString(r));
    }
#endif
    return absl::OkStatus();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string backend() const override { return "nccl"; }

  absl::Status AllReduce(const std::vector<at::Tensor>& tensors, ReduceOp op,
                         absl::Duration timeout) override {
    for (const at::Tensor& t : tensors) {
      absl::Status s = OnTensor("all_reduce", t, timeout, [&](void* buf, ncclDataType_t type) {
        return ncclAllReduce(buf, buf, t.numel(), type, op == ReduceOp::kSum ? ncclSum : ncclMax,
                             comm_, stream_);
      });
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status Broadcast(const at::Tensor& tensor, int root, absl::Duration timeout) override {
    if (root < 0 || root >= world_size_) {
      return absl::InvalidArgumentError(absl::StrCat("Broadcast: bad root ", root));
    }
    return OnTensor("broadcast", tensor, timeout, [&](void* buf, ncclDataType_t type) {
      return ncclBroadcast(buf, buf, tensor.numel(), type, root, comm_, stream_);
    });
  }

  absl::Status Barrier(absl::Duration timeout) override {
    at::Tensor one = at::ones({1}, at::kFloat);
    return AllReduce({one}, ReduceOp::kSum, timeout);
  }

  absl::Status Announce(const std::string& key) override {
    return StoreOp("announce", [&] {
      store_->set(absl::StrCat("rlvr/announce/", key), std::vector<uint8_t>{1});
    });
  }

  absl::Status AwaitAnnouncement(const std::string& key, absl::Duration timeout) override {
    return StoreOp("await_announcement",
                   [&] { store_->wait({absl::StrCat("rlvr/announce/", key)}, ToMillis(timeout)); });
  }

 private:
  template <typename Fn>
  absl::Status StoreOp(const char* op, Fn&& fn) {
    if (broken_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "nccl ", op, " on rank ", rank_, ": communicator unusable after an earlier failure"));
    }
    try {
      fn();
      return absl::OkStatus();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      // A store failure leaves the order of collectives intact: not fatal.
      return CollectiveError("nccl", op, rank_, world_size_, LooksLikeTimeout(what),
                             what.substr(0, 400));
    }
  }

  absl::Status Fail(const std::string& op, bool timed_out, const std::string& detail) {
    broken_ = true;
    return CollectiveError("nccl", op, rank_, world_size_, timed_out, detail);
  }

  // Launches `launch(buffer, type)` on the tensor's data (staged through
  // device memory for a CPU tensor) and waits for it against the deadline.
  template <typename Launch>
  absl::Status OnTensor(const char* op, const at::Tensor& t, absl::Duration timeout,
                        Launch&& launch) {
    if (broken_ || comm_ == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "nccl ", op, " on rank ", rank_, ": communicator unusable after an earlier failure"));
    }
    if (!t.is_contiguous()) return absl::InvalidArgumentError("nccl: tensor not contiguous");
    auto type = NcclType(t);
    if (!type.ok()) return type.status();
    if (t.numel() == 0) return absl::OkStatus();
    const size_t bytes = t.numel() * t.element_size();
    const auto deadline = absl::Now() + timeout;
    cudaSetDevice(device_);
    void* buf = nullptr;
    const bool staged = !t.is_cuda();
    if (staged) {
      if (bytes > staging_bytes_) {
        if (staging_ != nullptr) cudaFree(staging_);
        staging_ = nullptr;
        staging_bytes_ = 0;
        if (cudaError_t e = cudaMalloc(&staging_, bytes); e != cudaSuccess) {
          return Fail(op, false, cudaGetErrorString(e));
        }
        staging_bytes_ = bytes;
      }
      buf = staging_;
      if (cudaError_t e =
              cudaMemcpyAsync(buf, t.data_ptr(), bytes, cudaMemcpyHostToDevice, stream_);
          e != cudaSuccess) {
        return Fail(op, false, cudaGetErrorString(e));
      }
    } else {
      // Torch may still be writing the tensor on its own stream.
      if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
        return Fail(op, false, cudaGetErrorString(e));
      }
      buf = t.data_ptr();
    }
    ncclResult_t r = launch(buf, *type);
#if RLVR_NCCL_NONBLOCKING
    if (r != ncclSuccess && r != ncclInProgress) return Fail(op, false, ncclGetErrorString(r));
#else
    if (r != ncclSuccess) return Fail(op, false, ncclGetErrorString(r));
#endif
    absl::Status done = Wait(op, deadline, timeout);
    if (!done.ok() || !staged) return done;
    // Copy back only once the collective has completed: a copy into pageable
    // host memory blocks the host, which must never wait on a hung peer.
    if (cudaError_t e = cudaMemcpy(t.data_ptr(), buf, bytes, cudaMemcpyDeviceToHost);
        e != cudaSuccess) {
      return Fail(op, false, cudaGetErrorString(e));
    }
    return absl::OkStatus();
  }

  absl::Status Wait(const char* op, absl::Time deadline, absl::Duration timeout) {
    while (true) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
#if RLVR_NCCL_NONBLOCKING
      if (state != ncclSuccess && state != ncclInProgress) {
        return Fail(op, false, ncclGetErrorString(state));
      }
#else
      if (state != ncclSuccess) return Fail(op, false, ncclGetErrorString(state));
#endif
      if (state == ncclSuccess) {
        cudaError_t e = cudaStreamQuery(stream_);
        if (e == cudaSuccess) return absl::OkStatus();
        if (e != cudaErrorNotReady) return Fail(op, false, cudaGetErrorString(e));
      }
      if (absl::Now() > deadline) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        return Fail(op, true,
                    absl::StrCat("no completion within ", absl::FormatDuration(timeout),
                                 " (a peer rank died, hung or skipped the collective)"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  const int rank_;
  const int world_size_;
  const int device_;
  bool broken_ = false;
  c10::intrusive_ptr<c10d::Store> store_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicator(
    const CommunicatorOptions& options) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    return absl::UnavailableError(
        absl::StrCat("nccl communicator on rank ", options.rank, ": no CUDA device visible"));
  }
  const int device = options.cuda_device >= 0 ? options.cuda_device : options.rank % devices;
  auto comm = std::make_unique<NcclCommunicator>(options, device);
  absl::Status status = comm->Init(options);
  if (!status.ok()) return status;
  return std::unique_ptr<Communicator>(std::move(comm));
}

int NcclVisibleDevices() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) return 0;
  return devices;
}

#else  // !RLVR_HAVE_NCCL

absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicator(
    const CommunicatorOptions& options) {
  return absl::UnimplementedError(
      "nccl communicator: this build has no NCCL (configure with the CUDA toolkit and NCCL "
      "present, RLVR_WITH_CUDA=AUTO|ON)");
}

int NcclVisibleDevices() { return 0; }

#endif  // RLVR_HAVE_NCCL

}  // namespace rlvr::learner::internal

namespace rlvr::learner {
int NcclVisibleDevices() { return internal::NcclVisibleDevices(); }
}  // namespace rlvr::learner
