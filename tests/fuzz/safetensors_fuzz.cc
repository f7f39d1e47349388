// Fuzz target: arbitrary bytes as a safetensors file image. ParseHeader must
// return a Status, never crash, hang or read outside the input; a header it
// accepts must describe tensors that tile the data region inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/safetensors/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto header = rlvr::safetensors::ParseHeader(bytes, bytes.size(), "fuzz");
  if (!header.ok()) return 0;
  uint64_t end = 0;
  for (const auto& t : header->tensors) {
    if (t.begin != end || t.end < t.begin) std::abort();
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) *
                            static_cast<uint64_t>(rlvr::safetensors::DtypeBytes(t.dtype));
    if (t.end - t.begin != nbytes) std::abort();
    end = t.end;
  }
  if (end != header->data_bytes || 8 + header->header_bytes + end != size) std::abort();
  return 0;
}
