// rlvr.v1.WeightService on learner rank 0: every policy version is serialized
// once (by the caller) into an immutable blob shared by all watchers and
// streamed in chunks of at most kMaxChunkBytes (1 MiB) with a CRC-32 per chunk
// and of the whole blob.
//
// The chunks are written as raw protobuf frames whose data field references
// the shared blob (a grpc::Slice holding a reference to it), so no watcher
// copies the blob. Each watcher has one write in flight; a watcher that is
// slow only delays itself, finishes the version it has started and then jumps
// to the newest one (skipping versions in between). Publish() never blocks on
// watchers.
//
// Thread safety: all public methods are thread-safe. The publisher must
// outlive the grpc::Server it is registered in (shut the server down first);
// Shutdown() ends every watch stream.
#ifndef RLVR_LEARNER_WEIGHT_PUBLISHER_H_
#define RLVR_LEARNER_WEIGHT_PUBLISHER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/base/memory_policy.h"
#include "common/net/auth.h"
#include "learner/learner_metrics.h"
#include "rlvr/v1/weights.grpc.pb.h"

namespace rlvr::learner {

// One published version. The blob is immutable. Its chunks' CRCs are those
// given with it (policy::SerializeWeightsInto computes them as it writes the
// blob), or else computed on first use: chunk i's by whichever watcher
// encodes chunk i first (exactly once). The whole blob's is combined from
// the chunks' when the last chunk is encoded. So Publish() does not read the
// blob either way; without given CRCs, the checksum pass of a chunk is done
// in the transfer, overlapping the sending of the chunks before it.
//
// Thread safety: every method is safe to call concurrently.
class PublishedVersion {
 public:
  // `chunk_bytes` >= 1. `chunk_crcs`, when it has num_chunks() entries, are
  // the chunks' CRC-32s (trusted: a wrong one fails every watcher's transfer
  // of this version with DATA_LOSS); otherwise they are computed on first use.
  PublishedVersion(uint64_t version, std::shared_ptr<const std::string> blob, size_t chunk_bytes,
                   std::vector<uint32_t> chunk_crcs = {});

  uint64_t version() const { return version_; }
  const std::shared_ptr<const std::string>& blob() const { return blob_; }
  size_t chunk_bytes() const { return chunk_bytes_; }
  // At least 1 (an empty blob is one empty chunk).
  size_t num_chunks() const { return num_chunks_; }
  // Bytes of chunk `index` (< num_chunks()).
  size_t chunk_size(size_t index) const;
  // CRC-32 (zlib) of chunk `index`: as given, or computed on the first call
  // for it.
  uint32_t ChunkCrc32(size_t index) const;
  // CRC-32 of the whole blob, combined from every chunk's CRC (computing
  // those not yet known).
  uint32_t BlobCrc32() const;

 private:
  const uint64_t version_;
  const std::shared_ptr<const std::string> blob_;
  const size_t chunk_bytes_;
  const size_t num_chunks_;
  const std::unique_ptr<std::once_flag[]> chunk_once_;
  const bool crcs_given_;  // chunk_crc32_ was given whole at construction.
  // [i] written once, under chunk_once_[i], unless given.
  mutable std::vector<uint32_t> chunk_crc32_;
  mutable std::once_flag blob_once_;
  mutable uint32_t blob_crc32_ = 0;  // Written once, under blob_once_.
};

class WatchReactor;

class WeightPublisher final : public rlvr::v1::WeightService::WithRawCallbackMethod_WatchWeights<
                                  rlvr::v1::WeightService::Service> {
 public:
  // The one chunk size of the weight stream: a chunk message (1 MiB of data
  // plus ~40 bytes of framing) fits the 4 MiB default receive limit of every
  // common gRPC client (C++, Go, Java, Node) with room to spare, so a client
  // need not raise its limit to watch weights. 1 MiB chunks measured the same
  // as 4 MiB ones for fan-out (docs/learner.md).
  static constexpr size_t kMaxChunkBytes = 1 << 20;

  // `metrics` may be null (benchmarks); not owned. `chunk_bytes` in [1,
  // kMaxChunkBytes].
  // `auth` (nullable, not owned) checks each call's bearer token.
  // `releaser` (nullable, not owned, must outlive the publisher) is told of
  // every watch stream that ends (common/memory_policy.h).
  explicit WeightPublisher(LearnerMetrics* metrics, size_t chunk_bytes = kMaxChunkBytes,
                           const TokenChecker* auth = nullptr, MemoryReleaser* releaser = nullptr);
  ~WeightPublisher() override;

  // Makes `blob` (the serialized weights of `version`, > every earlier one)
  // the newest version and wakes idle watchers. Returns without reading the
  // blob or waiting for any transfer. `chunk_crcs`: the CRC-32 of each
  // chunk_bytes()-long chunk of the blob (see PublishedVersion), or empty for
  // them to be computed as chunks are first sent.
  void Publish(uint64_t version, std::shared_ptr<const std::string> blob,
               std::vector<uint32_t> chunk_crcs = {});
  // The chunk size (the last chunk of a blob may be shorter).
  size_t chunk_bytes() const { return chunk_bytes_; }
  // The newest version (null before the first Publish).
  std::shared_ptr<const PublishedVersion> latest();
  // Ends every open watch stream (UNAVAILABLE) and refuses new ones.
  void Shutdown();
  int watchers();

  grpc::ServerWriteReactor<grpc::ByteBuffer>* WatchWeights(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) override;

 private:
  friend class WatchReactor;
  void Register(WatchReactor* r);
  void Unregister(WatchReactor* r);

  LearnerMetrics* const metrics_;
  const size_t chunk_bytes_;
  const TokenChecker* const auth_;
  MemoryReleaser* const releaser_;
  // Lock order: mu_ -> a reactor's mutex -> latest_mu_ (a leaf).
  absl::Mutex mu_;
  std::set<WatchReactor*> reactors_ ABSL_GUARDED_BY(mu_);
  absl::Mutex latest_mu_;
  std::shared_ptr<const PublishedVersion> latest_ ABSL_GUARDED_BY(latest_mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

// Encodes chunk `index` of `v` as a WeightChunk wire message whose data
// references the shared blob (exposed for tests and benchmarks). The whole-
// blob CRC (blob_crc32) is set on the last chunk only.
grpc::ByteBuffer EncodeWeightChunk(const std::shared_ptr<const PublishedVersion>& v, size_t index);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_WEIGHT_PUBLISHER_H_
