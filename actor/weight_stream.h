// One WeightService.WatchWeights call, read with gRPC's callback API: each
// chunk is checked and copied into the blob (WeightAssembler::AddWire) in
// OnReadDone, by the gRPC thread that has just read it from the socket and
// while it is still in that core's cache. A thread blocked in a synchronous
// Read() would usually be woken on another core and read every chunk cold;
// learner_bench measured the fan-out 10-12% slower that way with 4 and 8
// watchers on 2 cores, and ~30% slower with one.
//
// Complete blobs go to one consumer thread, which loads them into a model
// (no model code runs on gRPC threads). While the consumer has a blob the
// stream reads nothing more, so one transfer's buffer is in use at a time;
// Resume() hands the buffer back for the next version and reads on.
//
// Usage (the consumer):
//   WeightStream stream(channel, &context, request, &assembler);
//   for (WeightStream::Event e = stream.Next(); e.kind == kBlob; e = stream.Next()) {
//     ... load e.blob ...; (to stop: context.TryCancel();)
//     stream.Resume(std::move(e.blob));
//   }
//   // kEnd: the call is over (OnDone has run); the stream may be destroyed.
//
// Thread safety: Next(), Resume() and the destructor from one consumer
// thread; the assembler belongs to the stream from construction until kEnd
// or destruction.
#ifndef RLVR_ACTOR_WEIGHT_STREAM_H_
#define RLVR_ACTOR_WEIGHT_STREAM_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_callback.h>

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "actor/weight_assembler.h"
#include "rlvr/v1/weights.pb.h"

namespace rlvr::actor {

class WeightStream final : public grpc::ClientReadReactor<grpc::ByteBuffer> {
 public:
  struct Event {
    enum Kind { kBlob, kEnd };
    Kind kind = kEnd;
    // kBlob: a complete, checked blob (both CRCs verified), its version and
    // when its first chunk arrived.
    std::string blob;
    uint64_t version = 0;
    absl::Time first_chunk;
    // kEnd: why the stream ended. `transfer_error` is set when a chunk was
    // refused (the stream is then cancelled), with `chunk_version` the
    // version the bad chunk claimed; `mid_transfer` when it ended with a
    // version partly received; `status` is the call's status.
    absl::Status transfer_error;
    uint64_t chunk_version = 0;
    bool mid_transfer = false;
    grpc::Status status;
  };

  // Starts the call at once. `assembler` is Reset() and used by gRPC threads
  // until kEnd; `context` must outlive the stream (cancel the call through
  // it). Both are not owned.
  WeightStream(grpc::ChannelInterface* channel, grpc::ClientContext* context,
               const rlvr::v1::WatchWeightsRequest& request, WeightAssembler* assembler);
  // Ends the call first if it is still open (cancels it and waits for
  // OnDone), so the stream may be destroyed at any point.
  ~WeightStream() override;
  WeightStream(const WeightStream&) = delete;
  WeightStream& operator=(const WeightStream&) = delete;

  // Blocks until the next blob or the end of the call. After a kBlob call
  // Resume() before Next() (checked); after kEnd there are no more events.
  Event Next() ABSL_LOCKS_EXCLUDED(mu_);
  // Gives back the buffer of the last blob (its contents no longer needed,
  // or an empty string) and reads on.
  void Resume(std::string buffer) ABSL_LOCKS_EXCLUDED(mu_);

  void OnReadDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_);
  void OnDone(const grpc::Status& status) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  grpc::ClientContext* const context_;
  WeightAssembler* const assembler_;
  const rlvr::v1::WatchWeightsRequest request_;  // gRPC sends it from here.
  // Touched by gRPC threads only, one reaction at a time.
  grpc::ByteBuffer wire_;  // The read in flight.
  absl::Time first_chunk_;

  // Wake-up conditions (Mutex::Await): Next() waits for a blob or the end;
  // the destructor for the end or a paused stream.
  bool BlobOrDoneLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return has_blob_ || done_; }
  bool PausedOrDoneLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return paused_ || done_; }

  absl::Mutex mu_;
  // A complete blob waiting for Next():
  bool has_blob_ ABSL_GUARDED_BY(mu_) = false;
  std::string blob_ ABSL_GUARDED_BY(mu_);
  uint64_t blob_version_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time blob_first_chunk_ ABSL_GUARDED_BY(mu_);
  // No read in flight until Resume():
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  // The end of the call (done_: OnDone ran):
  absl::Status transfer_error_ ABSL_GUARDED_BY(mu_);
  uint64_t bad_chunk_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool mid_transfer_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_WEIGHT_STREAM_H_
