#include "actor/weight_assembler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/checksum.h"
#include "common/base/memory_policy.h"

namespace rlvr::actor {
namespace {

// Reads protobuf wire format across the slices of a received message.
class WireCursor {
 public:
  explicit WireCursor(const std::vector<grpc::Slice>& slices) : slices_(slices) { SkipEmpty(); }

  bool done() const { return i_ >= slices_.size(); }

  bool Byte(uint8_t* b) {
    if (done()) return false;
    *b = slices_[i_].begin()[pos_];
    Advance(1);
    return true;
  }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) return false;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;  // More than 10 bytes.
  }
  bool Fixed32(uint32_t* v) {
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      uint8_t b;
      if (!Byte(&b)) return false;
      *v |= static_cast<uint32_t>(b) << (8 * k);
    }
    return true;
  }
  // The next `n` bytes as views into the slices (appended to `out` unless null).
  bool Bytes(uint64_t n, std::vector<std::string_view>* out) {
    while (n > 0) {
      if (done()) return false;
      const grpc::Slice& s = slices_[i_];
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, s.size() - pos_));
      if (out != nullptr) {
        out->emplace_back(reinterpret_cast<const char*>(s.begin()) + pos_, take);
      }
      Advance(take);
      n -= take;
    }
    return true;
  }

 private:
  void Advance(size_t n) {
    pos_ += n;
    if (pos_ == slices_[i_].size()) {
      ++i_;
      pos_ = 0;
      SkipEmpty();
    }
  }
  void SkipEmpty() {
    while (i_ < slices_.size() && slices_[i_].size() == 0) ++i_;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t i_ = 0;
  size_t pos_ = 0;
};

}  // namespace

absl::Status ParseWeightChunkWire(const std::vector<grpc::Slice>& slices, WeightChunkHeader* header,
                                  std::vector<std::string_view>* data) {
  *header = WeightChunkHeader();
  data->clear();
  WireCursor in(slices);
  auto bad = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("malformed WeightChunk: ", what));
  };
  while (!in.done()) {
    uint64_t tag;
    if (!in.Varint(&tag)) return bad("tag");
    const int field = static_cast<int>(tag >> 3);
    const int wire_type = static_cast<int>(tag & 7);
    uint64_t v = 0;
    uint32_t f32 = 0;
    switch (wire_type) {
      case 0:
        if (!in.Varint(&v)) return bad("varint");
        if (field == 1) header->version = v;
        if (field == 2) header->offset = v;
        if (field == 3) header->total_bytes = v;
        if (field == 7) header->last = v != 0;
        break;
      case 1:
        if (!in.Bytes(8, nullptr)) return bad("fixed64");
        break;
      case 2: {
        if (!in.Varint(&v)) return bad("length");
        if (field == 4) {
          // Protobuf keeps the last occurrence of a bytes field.
          data->clear();
        }
        if (!in.Bytes(v, field == 4 ? data : nullptr)) return bad("truncated bytes");
        break;
      }
      case 5:
        if (!in.Fixed32(&f32)) return bad("fixed32");
        if (field == 5) header->chunk_crc32 = f32;
        if (field == 6) header->blob_crc32 = f32;
        break;
      default:
        return bad(absl::StrCat("wire type ", wire_type));
    }
  }
  return absl::OkStatus();
}

absl::Status WeightAssembler::Fail(absl::Status status) {
  failed_ = true;
  filled_ = 0;
  return status;
}

absl::Status WeightAssembler::Add(const rlvr::v1::WeightChunk& chunk) {
  WeightChunkHeader h;
  h.version = chunk.version();
  h.offset = chunk.offset();
  h.total_bytes = chunk.total_bytes();
  h.chunk_crc32 = chunk.chunk_crc32();
  h.blob_crc32 = chunk.blob_crc32();
  h.last = chunk.last();
  return AddPieces(h, {std::string_view(chunk.data().data(), chunk.data().size())});
}

absl::Status WeightAssembler::AddWire(const grpc::ByteBuffer& wire, WeightChunkHeader* header) {
  if (failed_) return absl::FailedPreconditionError("assembler failed earlier; Reset() first");
  std::vector<grpc::Slice> slices;
  WeightChunkHeader h;
  std::vector<std::string_view> data;
  // Dump shares the slices (reference counts), it does not copy bytes.
  if (!wire.Dump(&slices).ok()) return Fail(absl::InvalidArgumentError("unreadable WeightChunk"));
  absl::Status parsed = ParseWeightChunkWire(slices, &h, &data);
  if (header != nullptr) *header = h;
  if (!parsed.ok()) return Fail(parsed);
  return AddPieces(h, data);
}

absl::Status WeightAssembler::AddPieces(const WeightChunkHeader& chunk,
                                        const std::vector<std::string_view>& data) {
  if (failed_) return absl::FailedPreconditionError("assembler failed earlier; Reset() first");
  if (complete_) {
    return Fail(absl::FailedPreconditionError(
        absl::StrCat("chunk after the last chunk of version ", version_)));
  }
  if (!started_) {
    if (chunk.version == 0) return Fail(absl::InvalidArgumentError("weight chunk version 0"));
    if (chunk.total_bytes == 0 || chunk.total_bytes > max_total_bytes_) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("weight blob size ", chunk.total_bytes, " out of range")));
    }
    started_ = true;
    version_ = chunk.version;
    total_bytes_ = chunk.total_bytes;
    blob_crc32_ = chunk.blob_crc32;  // 0: not sent before the last chunk.
    running_crc32_ = 0;
    // The buffer: the larger of a recycled one and the one a reset
    // transfer left behind, sized to the blob without writing to it where
    // its bytes already exist (its pages were faulted in by an earlier
    // transfer or by Reserve).
    if (spare_.capacity() > blob_.capacity()) blob_.swap(spare_);
    spare_ = std::string();
    if (blob_.capacity() < total_bytes_) {
      blob_ = std::string();
      blob_.reserve(total_bytes_);
      AdviseHugePages(blob_.data(), blob_.capacity());
    }
    blob_.resize(total_bytes_);
    filled_ = 0;
  } else if (chunk.version != version_ || chunk.total_bytes != total_bytes_ ||
             (blob_crc32_ != 0 && chunk.blob_crc32 != 0 && chunk.blob_crc32 != blob_crc32_)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("chunk header changed mid-transfer: version ", chunk.version, " vs ", version_,
                     ", total ", chunk.total_bytes, " vs ", total_bytes_, ", blob CRC ",
                     chunk.blob_crc32, " vs ", blob_crc32_)));
  } else if (blob_crc32_ == 0) {
    blob_crc32_ = chunk.blob_crc32;
  }
  if (chunk.offset != filled_) {
    return Fail(absl::DataLossError(absl::StrCat("version ", version_, ": chunk offset ",
                                                 chunk.offset, ", expected ", filled_)));
  }
  size_t len = 0;
  for (std::string_view piece : data) len += piece.size();
  if (len > total_bytes_ - filled_) {
    return Fail(absl::DataLossError(absl::StrCat("version ", version_, ": chunk at ", chunk.offset,
                                                 " overruns total ", total_bytes_)));
  }
  // One pass per piece: each block is checksummed and copied while it is
  // in the L1 cache. A blob far larger than the caches is written around
  // them (it is read again only when the whole version is loaded). A bad
  // chunk fails the whole transfer, so copying before the check is safe.
  const bool stream = total_bytes_ >= kStreamBlobBytes;
  uint32_t crc = 0;
  for (std::string_view piece : data) {
    crc = Crc32Copy(piece, blob_.data() + filled_, crc, stream);
    filled_ += piece.size();
  }
  if (crc != chunk.chunk_crc32) {
    return Fail(absl::DataLossError(
        absl::StrCat("version ", version_, ": chunk CRC-32 mismatch at offset ", chunk.offset)));
  }
  // The whole-blob CRC follows from the chunk CRCs without a second pass.
  running_crc32_ = Crc32Combine(running_crc32_, crc, len);
  const bool full = filled_ == total_bytes_;
  if (chunk.last != full) {
    return Fail(
        absl::DataLossError(absl::StrCat("version ", version_, ": last flag ", chunk.last, " with ",
                                         filled_, " of ", total_bytes_, " bytes")));
  }
  if (full) {
    // The last chunk's blob CRC is authoritative (earlier chunks may carry it
    // too, then equal, or 0 when the sender streams before knowing it).
    if (running_crc32_ != chunk.blob_crc32 ||
        (blob_crc32_ != 0 && blob_crc32_ != chunk.blob_crc32)) {
      return Fail(
          absl::DataLossError(absl::StrCat("version ", version_, ": whole-blob CRC-32 mismatch")));
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

void WeightAssembler::Recycle(std::string blob) {
  if (blob.capacity() > spare_.capacity()) spare_ = std::move(blob);
}

void WeightAssembler::Reserve(uint64_t bytes) {
  if (bytes == 0 || bytes > max_total_bytes_ || spare_.capacity() >= bytes) return;
  std::string buffer;
  buffer.reserve(bytes);
  AdviseHugePages(buffer.data(), buffer.capacity());
  buffer.resize(bytes);  // Writes every page: the faults happen here.
  spare_ = std::move(buffer);
}

void WeightAssembler::Reset() {
  started_ = false;
  complete_ = false;
  failed_ = false;
  version_ = 0;
  total_bytes_ = 0;
  blob_crc32_ = 0;
  running_crc32_ = 0;
  filled_ = 0;
}

}  // namespace rlvr::actor
