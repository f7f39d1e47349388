#include "learner/weight_publisher.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstring>

#include "common/base/checksum.h"

namespace rlvr::learner {
namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(int field, int wire_type, std::string* out) {
  PutVarint(static_cast<uint64_t>((field << 3) | wire_type), out);
}

void PutFixed32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Keeps the blob alive while gRPC holds a slice that points into it.
void ReleaseBlobRef(void* user_data) {
  delete static_cast<std::shared_ptr<const std::string>*>(user_data);
}

}  // namespace

PublishedVersion::PublishedVersion(uint64_t version, std::shared_ptr<const std::string> blob,
                                   size_t chunk_bytes, std::vector<uint32_t> chunk_crcs)
    : version_(version),
      blob_(std::move(blob)),
      chunk_bytes_(std::max<size_t>(1, chunk_bytes)),
      num_chunks_(blob_->empty() ? 1 : (blob_->size() + chunk_bytes_ - 1) / chunk_bytes_),
      chunk_once_(new std::once_flag[num_chunks_]),
      crcs_given_(chunk_crcs.size() == num_chunks_),
      chunk_crc32_(crcs_given_ ? std::move(chunk_crcs) : std::vector<uint32_t>(num_chunks_, 0)) {}

size_t PublishedVersion::chunk_size(size_t index) const {
  const size_t offset = std::min(index * chunk_bytes_, blob_->size());
  return std::min(chunk_bytes_, blob_->size() - offset);
}

uint32_t PublishedVersion::ChunkCrc32(size_t index) const {
  if (crcs_given_) return chunk_crc32_[index];
  std::call_once(chunk_once_[index], [&] {
    chunk_crc32_[index] =
        Crc32(std::string_view(blob_->data() + index * chunk_bytes_, chunk_size(index)));
  });
  return chunk_crc32_[index];
}

uint32_t PublishedVersion::BlobCrc32() const {
  std::call_once(blob_once_, [&] {
    uint32_t crc = 0;
    for (size_t i = 0; i < num_chunks_; ++i) crc = Crc32Combine(crc, ChunkCrc32(i), chunk_size(i));
    blob_crc32_ = crc;
  });
  return blob_crc32_;
}

grpc::ByteBuffer EncodeWeightChunk(const std::shared_ptr<const PublishedVersion>& v, size_t index) {
  const std::string& blob = *v->blob();
  const size_t offset = index * v->chunk_bytes();
  const size_t len = v->chunk_size(index);
  const bool last = index + 1 == v->num_chunks();
  // WeightChunk fields in wire format; protobuf parsers accept fields in any
  // order, so data (field 4) goes last and can reference the blob directly.
  std::string header;
  PutTag(1, 0, &header);
  PutVarint(v->version(), &header);
  PutTag(2, 0, &header);
  PutVarint(offset, &header);
  PutTag(3, 0, &header);
  PutVarint(blob.size(), &header);
  PutTag(5, 5, &header);
  PutFixed32(v->ChunkCrc32(index), &header);
  if (last) {
    PutTag(6, 5, &header);
    PutFixed32(v->BlobCrc32(), &header);
    PutTag(7, 0, &header);
    PutVarint(1, &header);
  }
  PutTag(4, 2, &header);
  PutVarint(len, &header);
  grpc::Slice slices[2] = {
      grpc::Slice(header),
      grpc::Slice(const_cast<char*>(blob.data()) + offset, len, &ReleaseBlobRef,
                  new std::shared_ptr<const std::string>(v->blob()))};
  return grpc::ByteBuffer(slices, len > 0 ? 2 : 1);
}

// One WatchWeights stream. Lock order: publisher mu_ -> mu_ -> latest_mu_.
class WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  WatchReactor(WeightPublisher* publisher, uint64_t have_version, std::string watcher)
      : publisher_(publisher), have_(have_version), watcher_(std::move(watcher)) {}

  // Called under the publisher's mutex.
  void Wake() {
    absl::MutexLock l(&mu_);
    PumpLocked();
  }
  // Called under the publisher's mutex.
  void End(grpc::Status status) {
    absl::MutexLock l(&mu_);
    if (!finishing_) {
      finishing_ = true;
      status_ = std::move(status);
    }
    PumpLocked();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock l(&mu_);
    writing_ = false;
    if (!ok && !finishing_) {
      finishing_ = true;
      status_ = grpc::Status(grpc::StatusCode::CANCELLED, "write failed");
    }
    PumpLocked();
  }
  void OnCancel() override {
    absl::MutexLock l(&mu_);
    if (!finishing_) {
      finishing_ = true;
      status_ = grpc::Status::CANCELLED;
    }
    PumpLocked();
  }
  void OnDone() override {
    {
      absl::MutexLock l(&mu_);
      LOG(INFO) << "weight watch of '" << watcher_ << "' ended: " << status_.error_code() << " "
                << status_.error_message();
    }
    publisher_->Unregister(this);
    delete this;
  }

 private:
  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (finishing_) {
      finished_ = true;
      Finish(status_);
      return;
    }
    if (sending_ == nullptr || next_chunk_ >= sending_->num_chunks()) {
      if (sending_ != nullptr) have_ = sending_->version();
      sending_ = nullptr;
      std::shared_ptr<const PublishedVersion> latest = publisher_->latest();
      if (latest == nullptr || latest->version() <= have_) return;  // Idle until Wake.
      sending_ = std::move(latest);
      next_chunk_ = 0;
    }
    buffer_ = EncodeWeightChunk(sending_, next_chunk_++);
    writing_ = true;
    StartWrite(&buffer_);
  }

  WeightPublisher* const publisher_;
  absl::Mutex mu_;
  uint64_t have_ ABSL_GUARDED_BY(mu_);
  const std::string watcher_;
  std::shared_ptr<const PublishedVersion> sending_ ABSL_GUARDED_BY(mu_);
  size_t next_chunk_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::ByteBuffer buffer_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

WeightPublisher::WeightPublisher(LearnerMetrics* metrics, size_t chunk_bytes,
                                 const TokenChecker* auth, MemoryReleaser* releaser)
    : metrics_(metrics),
      chunk_bytes_(std::clamp<size_t>(chunk_bytes, 1, kMaxChunkBytes)),
      auth_(auth),
      releaser_(releaser) {}

WeightPublisher::~WeightPublisher() { Shutdown(); }

void WeightPublisher::Publish(uint64_t version, std::shared_ptr<const std::string> blob,
                              std::vector<uint32_t> chunk_crcs) {
  const size_t bytes = blob->size();
  const size_t given = chunk_crcs.size();
  auto v = std::make_shared<const PublishedVersion>(version, std::move(blob), chunk_bytes_,
                                                    std::move(chunk_crcs));
  if (given != 0 && given != v->num_chunks()) {
    LOG(ERROR) << "WeightPublisher: version " << version << " came with " << given
               << " chunk CRCs for " << v->num_chunks() << " chunks of " << chunk_bytes_
               << " bytes; computing them as the chunks are sent";
  }
  if (metrics_ != nullptr) metrics_->weight_publish_bytes->Set(static_cast<double>(bytes));
  {
    absl::MutexLock l(&latest_mu_);
    if (latest_ != nullptr && version <= latest_->version()) {
      LOG(WARNING) << "WeightPublisher: version " << version << " does not advance "
                   << latest_->version() << "; ignored";
      return;
    }
    latest_ = std::move(v);
  }
  absl::MutexLock l(&mu_);
  for (WatchReactor* r : reactors_) r->Wake();
}

std::shared_ptr<const PublishedVersion> WeightPublisher::latest() {
  absl::MutexLock l(&latest_mu_);
  return latest_;
}

void WeightPublisher::Shutdown() {
  absl::MutexLock l(&mu_);
  shutdown_ = true;
  for (WatchReactor* r : reactors_) {
    r->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "learner shutting down"));
  }
}

int WeightPublisher::watchers() {
  absl::MutexLock l(&mu_);
  return static_cast<int>(reactors_.size());
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* WeightPublisher::WatchWeights(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  rlvr::v1::WatchWeightsRequest req;
  std::vector<grpc::Slice> slices;
  bool parsed = false;
  // The server's receive limit is gRPC's maximum (FrontDoorServerOptions):
  // a request is a few bytes, so anything large is refused before the copy.
  constexpr size_t kMaxRequestBytes = 64 << 10;
  if (request != nullptr && request->Length() <= kMaxRequestBytes && request->Dump(&slices).ok()) {
    std::string bytes;
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    parsed = req.ParseFromString(bytes);
  }
  auto* r = new WatchReactor(this, req.have_version(), req.watcher_id().substr(0, 128));
  grpc::Status refuse = auth_ != nullptr ? auth_->Check(*context) : grpc::Status::OK;
  if (refuse.ok() && !parsed) {
    refuse = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad WatchWeightsRequest");
  }
  if (!refuse.ok()) {
    absl::MutexLock l(&mu_);
    reactors_.insert(r);
    r->End(std::move(refuse));
    return r;
  }
  LOG(INFO) << "weight watch opened: watcher '" << req.watcher_id().substr(0, 128)
            << "' has version " << req.have_version() << ", from " << context->peer();
  Register(r);
  return r;
}

void WeightPublisher::Register(WatchReactor* r) {
  absl::MutexLock l(&mu_);
  reactors_.insert(r);
  if (metrics_ != nullptr) metrics_->weight_watchers->Set(static_cast<double>(reactors_.size()));
  if (shutdown_) {
    r->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "learner shutting down"));
  } else {
    r->Wake();
  }
}

void WeightPublisher::Unregister(WatchReactor* r) {
  {
    absl::MutexLock l(&mu_);
    reactors_.erase(r);
    if (metrics_ != nullptr) metrics_->weight_watchers->Set(static_cast<double>(reactors_.size()));
  }
  if (releaser_ != nullptr) releaser_->StreamEnded();
}

}  // namespace rlvr::learner
