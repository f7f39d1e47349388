#include "actor/weight_stream.h"

#include <glog/logging.h>

#include <utility>

#include "absl/time/clock.h"
#include "rlvr/v1/weights.grpc.pb.h"

namespace rlvr::actor {

WeightStream::WeightStream(grpc::ChannelInterface* channel, grpc::ClientContext* context,
                           const rlvr::v1::WatchWeightsRequest& request, WeightAssembler* assembler)
    : context_(context), assembler_(assembler), request_(request) {
  assembler_->Reset();  // A transfer cut off with an earlier stream starts over.
  static const std::string* const kMethod = new std::string(
      "/" + std::string(rlvr::v1::WeightService::service_full_name()) + "/WatchWeights");
  const grpc::internal::RpcMethod method(kMethod->c_str(),
                                         grpc::internal::RpcMethod::SERVER_STREAMING);
  // The responses stay raw bytes: AddWire copies the data straight from
  // gRPC's slices into the blob (no WeightChunk parse copy).
  grpc::internal::ClientCallbackReaderFactory<grpc::ByteBuffer>::Create(channel, method, context,
                                                                        &request_, this);
  // Resume() starts reads from the consumer's thread, outside any reaction:
  // this hold keeps OnDone away until a read has failed (then no read is
  // ever started again, and OnReadDone releases it).
  AddHold();
  StartRead(&wire_);
  StartCall();
}

WeightStream::~WeightStream() {
  {
    absl::MutexLock lock(&mu_);
    if (done_) return;
  }
  context_->TryCancel();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &WeightStream::PausedOrDoneLocked));
      if (done_) return;
      // A blob completed (before or during the cancel) and no read is in
      // flight: the hold is released by a read that fails.
      paused_ = false;
      has_blob_ = false;
    }
    StartRead(&wire_);
  }
}

void WeightStream::OnReadDone(bool ok) {
  if (!ok) {
    RemoveHold();  // The call is over; OnDone follows.
    return;
  }
  if (!assembler_->in_progress()) first_chunk_ = absl::Now();
  WeightChunkHeader header;
  absl::Status status = assembler_->AddWire(wire_, &header);
  wire_.Clear();
  if (!status.ok()) {
    {
      absl::MutexLock lock(&mu_);
      transfer_error_ = std::move(status);
      bad_chunk_version_ = header.version;
    }
    context_->TryCancel();
    StartRead(&wire_);  // Fails at once: the way to the end of the call.
    return;
  }
  if (!assembler_->complete()) {
    StartRead(&wire_);
    return;
  }
  const uint64_t version = assembler_->version();
  absl::StatusOr<std::string> blob = assembler_->TakeBlob();  // Complete: cannot fail.
  {
    absl::MutexLock lock(&mu_);  // Its release wakes the waiter.
    blob_ = std::move(*blob);
    blob_version_ = version;
    blob_first_chunk_ = first_chunk_;
    has_blob_ = true;
    paused_ = true;
  }
}

void WeightStream::OnDone(const grpc::Status& status) {
  // Set under the lock and not touched after its release: once the
  // consumer sees done_, this object may be destroyed.
  absl::MutexLock lock(&mu_);
  status_ = status;
  mid_transfer_ = assembler_->in_progress();
  done_ = true;
}

WeightStream::Event WeightStream::Next() {
  absl::MutexLock lock(&mu_);
  CHECK(has_blob_ || !paused_) << "WeightStream::Next after a blob without Resume";
  mu_.Await(absl::Condition(this, &WeightStream::BlobOrDoneLocked));
  Event event;
  if (has_blob_) {
    has_blob_ = false;
    event.kind = Event::kBlob;
    event.blob = std::move(blob_);
    blob_ = std::string();
    event.version = blob_version_;
    event.first_chunk = blob_first_chunk_;
    return event;
  }
  event.kind = Event::kEnd;
  event.transfer_error = transfer_error_;
  event.chunk_version = bad_chunk_version_;
  event.mid_transfer = mid_transfer_;
  event.status = status_;
  return event;
}

void WeightStream::Resume(std::string buffer) {
  {
    absl::MutexLock lock(&mu_);
    CHECK(paused_ && !has_blob_) << "WeightStream::Resume without a blob taken by Next()";
    paused_ = false;
  }
  // No read is in flight, so no gRPC thread touches the assembler until the
  // StartRead below (which orders this call before the next OnReadDone).
  assembler_->Recycle(std::move(buffer));
  StartRead(&wire_);
}

}  // namespace rlvr::actor
