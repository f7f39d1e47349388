#include "common/checksum.h"

#include <zlib.h>

#include <algorithm>

namespace rlvr {

uint32_t Crc32(std::string_view data, uint32_t crc) {
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  size_t left = data.size();
  uLong c = crc;
  // zlib takes uInt lengths; feed large buffers in pieces.
  while (left > 0) {
    uInt n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    c = crc32(c, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(c);
}

}  // namespace rlvr
