// CRC-32 (zlib polynomial) over byte ranges, used to checksum weight blobs and
// their chunks. Thread-safe (pure functions).
#ifndef RLVR_COMMON_BASE_CHECKSUM_H_
#define RLVR_COMMON_BASE_CHECKSUM_H_

#include <cstdint>
#include <string_view>

namespace rlvr {

// CRC-32 of `data`, continuing from `crc` (0 to start a new checksum).
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

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
