// CRC-32 (zlib polynomial) over byte ranges, used to checksum weight blobs and
// their chunks. Thread-safe (pure functions).
#ifndef RLVR_COMMON_BASE_CHECKSUM_H_
#define RLVR_COMMON_BASE_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlvr {

// CRC-32 of `data`, continuing from `crc` (0 to start a new checksum).
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

// The loop Crc32 runs on this CPU, for reports: "vpclmulqdq-512" (AVX-512),
// "vpclmulqdq-256" (AVX2), "pclmulqdq-128" or "table" (zlib's).
const char* Crc32Implementation();

// The CRC-32 of A followed by B, from A's CRC, B's CRC and B's length (zlib's
// crc32_combine, for any length).
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, size_t b_bytes);

// The same CRC of `src`, and `src` copied to `dst` in the same pass: each
// block is checksummed and then copied while it is still in the L1 cache,
// so `src` is read from memory once. With `stream`, the copy goes around
// the caches (non-temporal stores), which spares reading every destination
// line in before it is overwritten: for destinations much larger than the
// caches that are not read again at once (a weight blob of hundreds of MB).
// `src` and `dst` must not overlap.
uint32_t Crc32Copy(std::string_view src, char* dst, uint32_t crc, bool stream);

// Appends bytes to a string and keeps the CRC-32 of every `chunk_bytes`-long
// chunk of what it appended (the last chunk may be shorter), each block
// checksummed as it is copied, while it is in the cache: the checksums a
// weight stream sends with its chunks, and the whole blob's, without a pass
// over the blob of their own. Chunks count from the first byte appended
// through it. Not thread-safe; `out` must outlive it.
class ChunkCrc32Appender {
 public:
  // `chunk_bytes` >= 1.
  ChunkCrc32Appender(std::string* out, size_t chunk_bytes);

  void Append(std::string_view bytes);
  // Bytes appended so far.
  size_t size() const { return appended_; }
  // CRC-32 of everything appended so far (combined from the chunks').
  uint32_t Crc32OfAll() const;
  // [i]: CRC-32 of bytes [i * chunk_bytes, (i + 1) * chunk_bytes) of what
  // was appended; empty when nothing was.
  const std::vector<uint32_t>& chunk_crcs() const { return crcs_; }

 private:
  std::string* const out_;
  const size_t chunk_bytes_;
  size_t appended_ = 0;
  std::vector<uint32_t> crcs_;
};

namespace internal {
// The implementations Crc32 picks from (the fastest the CPU runs), forced:
// for tests that compare them on any machine. Each vector path falls back to
// the next one down where the CPU lacks the instructions (512-bit VPCLMULQDQ
// needs AVX-512; 256-bit, AVX2 and VPCLMULQDQ; 128-bit, PCLMULQDQ).
enum class Crc32Path { kVector512, kVector256, kVector128, kZlib };
uint32_t Crc32Using(Crc32Path path, std::string_view data, uint32_t crc = 0);
}  // namespace internal

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_CHECKSUM_H_
