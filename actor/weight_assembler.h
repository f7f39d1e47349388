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
// Thread-compatible: one watcher thread owns an assembler.
#ifndef RLVR_ACTOR_WEIGHT_ASSEMBLER_H_
#define RLVR_ACTOR_WEIGHT_ASSEMBLER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rlvr/v1/weights.pb.h"

namespace rlvr::actor {

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

  // True once the chunk marked `last` was added successfully.
  bool complete() const { return complete_; }
  // True after a chunk was accepted and before completion.
  bool in_progress() const { return started_ && !complete_; }
  // Version of the transfer in progress or complete (0 before the first chunk).
  uint64_t version() const { return version_; }

  // Hands out the verified blob (only when complete()) and resets.
  absl::StatusOr<std::string> TakeBlob();

  // Forgets any partial transfer.
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
  std::string blob_;
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_WEIGHT_ASSEMBLER_H_
