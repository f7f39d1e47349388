// The learner's narrow collective-communication interface: all-reduce,
// broadcast and barrier across the data-parallel ranks, each bounded by a
// timeout. Three implementations sit behind it, picked by MakeCommunicator:
//   - "local": world_size 1, every collective is a no-op;
//   - "gloo":  torch c10d ProcessGroupGloo over a c10d TCPStore (CPU tensors);
//   - "nccl":  written against nccl.h and the CUDA runtime (built only when the
//              CUDA toolkit and NCCL are found, RLVR_HAVE_NCCL); works on CUDA
//              tensors, and stages CPU tensors through device memory.
//
// Rendezvous follows torch's env:// contract, but the values come in through
// CommunicatorOptions (the service main reads MASTER_ADDR/MASTER_PORT/RANK/
// WORLD_SIZE); this library never reads the environment. Rank 0 hosts the
// TCPStore on master_port.
//
// Call order: collectives are matched by order, not by name. Every rank must
// issue the same collectives, with the same shapes and dtypes, in the same
// order. A mismatch is undefined (usually a timeout or a garbled result).
//
// Timeouts: Gloo applies options.timeout inside every collective, so a
// per-call timeout longer than options.timeout is capped by it; use
// AwaitAnnouncement for long waits.
//
// Failure behaviour: a collective that does not complete within its timeout
// (a peer died, hung, or never called it) returns DeadlineExceeded, and a
// collective that fails because a peer's connection closed returns
// Unavailable; the message names the backend, the op, this rank and the world
// size. After any failed collective the communicator is unusable: later calls
// return FailedPrecondition at once (the ranks are out of step and cannot
// recover; the process should exit and be restarted).
//
// Thread safety: a Communicator is used by one thread at a time (the trainer
// thread); it is not safe to issue collectives concurrently.
#ifndef RLVR_LEARNER_TRAINER_COMMUNICATOR_H_
#define RLVR_LEARNER_TRAINER_COMMUNICATOR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace at {
class Tensor;
}  // namespace at

namespace rlvr::learner {

// How the elements of an all-reduce are combined.
enum class ReduceOp { kSum, kMax };

struct CommunicatorOptions {
  // "auto" (NCCL when LibTorch has CUDA and a GPU is visible, else Gloo;
  // "local" when world_size is 1), "gloo", "nccl" or "local".
  std::string backend = "auto";
  int rank = 0;                           // This process's rank in [0, world_size).
  int world_size = 1;                     // Number of ranks.
  std::string master_addr = "127.0.0.1";  // Host of rank 0's TCPStore.
  int master_port = 0;                    // TCPStore port; required (> 0) when world_size > 1.
  // Default timeout of every collective, and of the rendezvous itself.
  absl::Duration timeout = absl::Seconds(120);
  // Gloo: network interface to bind (torch's GLOO_SOCKET_IFNAME), "" = the
  // loopback when master_addr is a loopback address, else this host's name.
  std::string gloo_interface;
  int gloo_threads = 2;  // Gloo worker threads.
  int cuda_device = -1;  // NCCL: CUDA device; -1 = rank % device count.
};

class Communicator {
 public:
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend() const = 0;  // "local", "gloo" or "nccl".
  absl::Duration default_timeout() const { return default_timeout_; }

  // In-place element-wise reduction of each tensor across all ranks; every
  // rank ends with the result. Tensors must be contiguous, same shape and
  // dtype on every rank (float32/float64/int64/int32/uint8).
  virtual absl::Status AllReduce(const std::vector<at::Tensor>& tensors, ReduceOp op,
                                 absl::Duration timeout) = 0;
  absl::Status AllReduceSum(const std::vector<at::Tensor>& tensors);
  absl::Status AllReduceSum(const at::Tensor& flat);

  // In place: every rank ends with root's contents of `tensor` (same shape
  // and dtype on every rank).
  virtual absl::Status Broadcast(const at::Tensor& tensor, int root, absl::Duration timeout) = 0;
  absl::Status Broadcast(const at::Tensor& tensor, int root);

  // Byte strings of any length: root's *bytes is sent; on the other ranks
  // *bytes is replaced by it. Two collectives (length, then contents).
  absl::Status BroadcastBytes(std::string* bytes, int root, absl::Duration timeout);
  absl::Status BroadcastBytes(std::string* bytes, int root);

  // Returns once every rank has entered the barrier.
  virtual absl::Status Barrier(absl::Duration timeout) = 0;
  absl::Status Barrier();

  // Out-of-band signalling through the rendezvous store, for waits that may
  // legitimately last much longer than a collective (ranks > 0 waiting for
  // rank 0's next update): Announce(key) marks `key` as set (idempotent);
  // AwaitAnnouncement blocks until some rank has announced `key`, or fails
  // with DeadlineExceeded after `timeout` (Unavailable if the store is gone,
  // e.g. rank 0 died). No-ops for world_size 1.
  virtual absl::Status Announce(const std::string& key) = 0;
  virtual absl::Status AwaitAnnouncement(const std::string& key, absl::Duration timeout) = 0;

 protected:
  explicit Communicator(absl::Duration default_timeout) : default_timeout_(default_timeout) {}

 private:
  absl::Duration default_timeout_;
};

// Builds the communicator named by options.backend and completes the
// rendezvous (bounded by options.timeout). InvalidArgument for bad options,
// Unimplemented for "nccl" in a build without NCCL, DeadlineExceeded or
// Unavailable when the peers cannot be reached in time.
absl::StatusOr<std::unique_ptr<Communicator>> MakeCommunicator(const CommunicatorOptions& options);

// The backend "auto" resolves to for these options ("local", "gloo" or "nccl").
std::string ResolveCommunicatorBackend(const CommunicatorOptions& options);

// True when this binary was built with the NCCL communicator.
bool HaveNcclCommunicator();

// CUDA devices the NCCL communicator can use (0 in builds without NCCL).
int NcclVisibleDevices();

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_TRAINER_COMMUNICATOR_H_
