#include "actor/weight_assembler.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"

namespace rlvr::actor {

absl::Status WeightAssembler::Fail(absl::Status status) {
  failed_ = true;
  blob_.clear();
  return status;
}

absl::Status WeightAssembler::Add(const rlvr::v1::WeightChunk& chunk) {
  if (failed_) return absl::FailedPreconditionError("assembler failed earlier; Reset() first");
  if (complete_) {
    return Fail(absl::FailedPreconditionError(
        absl::StrCat("chunk after the last chunk of version ", version_)));
  }
  if (!started_) {
    if (chunk.version() == 0) return Fail(absl::InvalidArgumentError("weight chunk version 0"));
    if (chunk.total_bytes() == 0 || chunk.total_bytes() > max_total_bytes_) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("weight blob size ", chunk.total_bytes(), " out of range")));
    }
    started_ = true;
    version_ = chunk.version();
    total_bytes_ = chunk.total_bytes();
    blob_crc32_ = chunk.blob_crc32();
    running_crc32_ = 0;
    blob_.clear();
    blob_.reserve(total_bytes_);
  } else if (chunk.version() != version_ || chunk.total_bytes() != total_bytes_ ||
             chunk.blob_crc32() != blob_crc32_) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "chunk header changed mid-transfer: version ", chunk.version(), " vs ", version_,
        ", total ", chunk.total_bytes(), " vs ", total_bytes_)));
  }
  if (chunk.offset() != blob_.size()) {
    return Fail(absl::DataLossError(absl::StrCat("version ", version_, ": chunk offset ",
                                                 chunk.offset(), ", expected ", blob_.size())));
  }
  const std::string& data = chunk.data();
  if (data.size() > total_bytes_ - blob_.size()) {
    return Fail(absl::DataLossError(absl::StrCat("version ", version_, ": chunk at ",
                                                 chunk.offset(), " overruns total ",
                                                 total_bytes_)));
  }
  const std::string_view view(data.data(), data.size());
  if (Crc32(view) != chunk.chunk_crc32()) {
    return Fail(absl::DataLossError(
        absl::StrCat("version ", version_, ": chunk CRC-32 mismatch at offset ", chunk.offset())));
  }
  blob_.append(data);
  running_crc32_ = Crc32(view, running_crc32_);
  const bool full = blob_.size() == total_bytes_;
  if (chunk.last() != full) {
    return Fail(absl::DataLossError(absl::StrCat(
        "version ", version_, ": last flag ", chunk.last(), " with ", blob_.size(), " of ",
        total_bytes_, " bytes")));
  }
  if (full) {
    if (running_crc32_ != blob_crc32_) {
      return Fail(absl::DataLossError(
          absl::StrCat("version ", version_, ": whole-blob CRC-32 mismatch")));
    }
    complete_ = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> WeightAssembler::TakeBlob() {
  if (!complete_) return absl::FailedPreconditionError("weight transfer not complete");
  std::string out = std::move(blob_);
  Reset();
  return out;
}

void WeightAssembler::Reset() {
  started_ = false;
  complete_ = false;
  failed_ = false;
  version_ = 0;
  total_bytes_ = 0;
  blob_crc32_ = 0;
  running_crc32_ = 0;
  blob_.clear();
}

}  // namespace rlvr::actor
