// Reassembles one policy version's weight blob from the WeightChunk stream of
// WeightService.WatchWeights and checks it on the way.
//
// Checks, in order of arrival: every chunk belongs to the version and total
// size of the first chunk, offsets are contiguous from 0, each chunk's CRC-32
// matches its data, the blob never grows past total_bytes; at the end the
// size equals total_bytes, `last` is set on the final chunk only and the
// whole-blob CRC-32 matches. Any failure makes the assembler unusable
// (Reset() to start over); the caller discards the transfer and retries.
//
// Two ways in: Add() takes a parsed WeightChunk; AddWire() takes the chunk's
// wire bytes as gRPC received them (a ByteBuffer of slices) and copies the
// data straight from the slices into the blob, checksumming each piece while
// it is in cache: one copy and one CRC pass per byte (the whole-blob CRC is
// combined from the chunk CRCs), where parsing a WeightChunk first costs an
// extra copy. The actor uses AddWire.
//
// Thread-compatible: one watcher thread owns an assembler.
#ifndef RLVR_ACTOR_WEIGHT_ASSEMBLER_H_
#define RLVR_ACTOR_WEIGHT_ASSEMBLER_H_

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rlvr/v1/weights.pb.h"

namespace rlvr::actor {

// The WeightChunk fields other than data, as read from the wire.
struct WeightChunkHeader {
  uint64_t version = 0;
  uint64_t offset = 0;
  uint64_t total_bytes = 0;
  uint32_t chunk_crc32 = 0;
  uint32_t blob_crc32 = 0;
  bool last = false;
};

// Parses a serialized WeightChunk held in `slices` without copying its data:
// fills `header` and appends views of the data bytes (pointing into the
// slices, valid while they live) to `data`. Fields may come in any order;
// unknown fields are skipped. INVALID_ARGUMENT for malformed wire bytes.
absl::Status ParseWeightChunkWire(const std::vector<grpc::Slice>& slices, WeightChunkHeader* header,
                                  std::vector<std::string_view>* data);

class WeightAssembler {
 public:
  // `max_total_bytes` bounds the memory a (possibly hostile) stream may make
  // us allocate.
  explicit WeightAssembler(uint64_t max_total_bytes = uint64_t{4} << 30)
      : max_total_bytes_(max_total_bytes) {}

  // Adds the next chunk. Returns DATA_LOSS for a checksum or offset error and
  // INVALID_ARGUMENT for inconsistent headers. After an error every call
  // fails until Reset().
  absl::Status Add(const rlvr::v1::WeightChunk& chunk);
  // The same for a chunk as received on the wire (see the file comment);
  // also INVALID_ARGUMENT if the bytes are not a WeightChunk. `header`, if
  // not null, receives the chunk's header fields (for logs).
  absl::Status AddWire(const grpc::ByteBuffer& wire, WeightChunkHeader* header = nullptr);
  // The same for a header and its data in pieces (concatenated in order).
  absl::Status AddPieces(const WeightChunkHeader& header,
                         const std::vector<std::string_view>& data);

  // True once the chunk marked `last` was added successfully.
  bool complete() const { return complete_; }
  // True after a chunk was accepted and before completion.
  bool in_progress() const { return started_ && !complete_; }
  // Version of the transfer in progress or complete (0 before the first chunk).
  uint64_t version() const { return version_; }

  // Hands out the verified blob (only when complete()) and resets.
  absl::StatusOr<std::string> TakeBlob();

  // Gives a blob from TakeBlob back once its contents are no longer needed
  // (the weights are loaded): the next transfer that fits writes into its
  // memory instead of a fresh allocation, whose pages the kernel would have
  // to zero on first touch (a quarter of a 100 MB transfer's CPU time).
  // Keeps one buffer at most.
  void Recycle(std::string blob);

  // Allocates a buffer for transfers of up to `bytes` and faults its pages in
  // now, so that the first version too lands in memory that exists rather
  // than in fresh pages the kernel zeroes during the transfer. The actor
  // calls it once at start, with its model's blob size, while it waits for
  // weights anyway. No-op if a buffer that large is already kept or `bytes`
  // is 0 or above the assembler's limit.
  void Reserve(uint64_t bytes);

  // Forgets any partial transfer (the kept buffers stay).
  void Reset();

 private:
  absl::Status Fail(absl::Status status);

  uint64_t max_total_bytes_;
  bool started_ = false;
  bool complete_ = false;
  bool failed_ = false;
  uint64_t version_ = 0;
  uint64_t total_bytes_ = 0;
  uint32_t blob_crc32_ = 0;
  uint32_t running_crc32_ = 0;
  // Blobs of at least this size are written with non-temporal stores.
  static constexpr uint64_t kStreamBlobBytes = uint64_t{16} << 20;

  // The transfer's buffer, sized to total_bytes_ at its first chunk; bytes
  // [0, filled_) are received and checked.
  std::string blob_;
  uint64_t filled_ = 0;
  std::string spare_;  // A recycled buffer, or empty.
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_WEIGHT_ASSEMBLER_H_
