// CRC-32 (zlib polynomial) over byte ranges, used to checksum weight blobs and
// their chunks. Thread-safe (pure functions).
#ifndef RLVR_COMMON_CHECKSUM_H_
#define RLVR_COMMON_CHECKSUM_H_

#include <cstdint>
#include <string_view>

namespace rlvr {

// CRC-32 of `data`, continuing from `crc` (0 to start a new checksum).
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

}  // namespace rlvr

#endif  // RLVR_COMMON_CHECKSUM_H_
