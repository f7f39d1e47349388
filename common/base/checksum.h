// CRC-32 (zlib polynomial) over byte ranges, used to checksum weight blobs and
// their chunks. Thread-safe (pure functions).
#ifndef RLVR_COMMON_BASE_CHECKSUM_H_
#define RLVR_COMMON_BASE_CHECKSUM_H_

#include <cstdint>
#include <string_view>

namespace rlvr {

// CRC-32 of `data`, continuing from `crc` (0 to start a new checksum).
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

// The same CRC of `src`, and `src` copied to `dst` in the same pass: each
// block is checksummed and then copied while it is still in the L1 cache,
// so `src` is read from memory once. With `stream`, the copy goes around
// the caches (non-temporal stores), which spares reading every destination
// line in before it is overwritten: for destinations much larger than the
// caches that are not read again at once (a weight blob of hundreds of MB).
// `src` and `dst` must not overlap.
uint32_t Crc32Copy(std::string_view src, char* dst, uint32_t crc, bool stream);

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
