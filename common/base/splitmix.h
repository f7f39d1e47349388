// SplitMix64: a tiny, portable 64-bit mixer. Used wherever a seed must map to
// the same stream on every machine and library version (std:: distributions
// are implementation-defined): per-row sampling streams, dataset shuffles,
// batcher shuffles. Pure; thread-safe.
#ifndef RLVR_COMMON_BASE_SPLITMIX_H_
#define RLVR_COMMON_BASE_SPLITMIX_H_

#include <cstdint>

namespace rlvr {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_SPLITMIX_H_
