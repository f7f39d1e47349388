// The safetensors file format (Hugging Face): reading, validating and writing,
// torch-free.
//
// A file is: an 8-byte little-endian header length N, N bytes of UTF-8 JSON
// (an object: tensor name -> {"dtype", "shape", "data_offsets": [begin, end]},
// plus an optional "__metadata__" object of string -> string), then the data
// region; offsets are relative to the data region's start. ParseHeader
// validates everything before any tensor byte is read: header length against
// the file size, JSON syntax, duplicate keys, the exact set of keys of every
// entry, dtype (F32, BF16, F16; any other is an error), shape and offsets as
// non-negative integers, end - begin == bytes(dtype) x numel (overflow
// checked), offsets inside the data region, and the tensors tiling the data
// region in order without gaps or overlaps (as the reference implementation
// requires). Every error names the file and the tensor or key.
//
// A checkpoint directory holds either model.safetensors or shards listed by
// model.safetensors.index.json ({"weight_map": {tensor: shard file}}); shard
// names must be plain file names in that directory, every tensor of the map
// must be in its shard and every tensor of a shard in the map.
//
// Files are mapped read-only (mmap) and stay mapped while the SafetensorsFile
// lives; tensor bytes are views into the mapping (a file truncated by someone
// else while mapped is undefined behaviour, as with any mmap reader).
//
// Thread safety: objects are immutable after Open; concurrent readers are
// safe.
#ifndef RLVR_COMMON_SAFETENSORS_SAFETENSORS_H_
#define RLVR_COMMON_SAFETENSORS_SAFETENSORS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvr::safetensors {

enum class Dtype { kF32, kBF16, kF16 };

// "F32", "BF16", "F16".
const char* DtypeName(Dtype dtype);
// 4, 2, 2.
int DtypeBytes(Dtype dtype);
// InvalidArgument for any other name (naming it; known but unsupported types
// such as I64 or F64 say "unsupported").
absl::StatusOr<Dtype> ParseDtype(absl::string_view name);

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // Offsets within the data region.
  uint64_t end = 0;
  int64_t numel() const;
};

struct Header {
  uint64_t header_bytes = 0;        // N.
  uint64_t data_bytes = 0;          // File size - 8 - N.
  std::vector<TensorInfo> tensors;  // Ordered by data offset.
  std::map<std::string, std::string> metadata;
};

// Parses and validates the header of a safetensors file of `file_size`
// bytes whose first bytes are `prefix` (at least min(file_size, 8 + N)
// bytes; the whole file is fine). `source` names the file in errors.
// InvalidArgument or DataLoss (truncation, offsets beyond the file).
absl::StatusOr<Header> ParseHeader(absl::string_view prefix, uint64_t file_size,
                                   const std::string& source);

// One mapped, validated file.
class SafetensorsFile {
 public:
  // NotFound if it cannot be opened; otherwise ParseHeader's errors.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const Header& header() const { return header_; }
  // The tensor's raw little-endian bytes (a view into the mapping).
  absl::string_view Data(const TensorInfo& tensor) const;
  // Null if absent.
  const TensorInfo* Find(absl::string_view name) const;
  // Tells the kernel the tensor's pages will not be needed again
  // (madvise DONTNEED on the whole pages inside it), so a loader that has
  // copied a tensor out does not keep it resident. Data() stays valid (pages
  // are read again from the file on access).
  void Release(const TensorInfo& tensor) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  const char* map_ = nullptr;
  uint64_t size_ = 0;
  Header header_;
  std::map<std::string, size_t, std::less<>> index_;
};

// All tensors of a checkpoint directory (single file or sharded).
class Checkpoint {
 public:
  struct Entry {
    const SafetensorsFile* file;
    const TensorInfo* info;
  };
  // Opens <dir>/model.safetensors.index.json if present, else
  // <dir>/model.safetensors. NotFound if neither exists.
  static absl::StatusOr<Checkpoint> Open(const std::string& dir);

  // Every tensor, by name.
  const std::map<std::string, Entry>& tensors() const { return tensors_; }
  const Entry* Find(const std::string& name) const;
  // The files opened (one, or one per shard).
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  // The index file when sharded, else the single file: what errors about a
  // missing tensor name.
  const std::string& source() const { return source_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry> tensors_;
  std::string source_;
};

// What WriteSafetensors writes for one tensor.
struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
};

// Supplies the bytes of tensor `index` (exactly bytes(dtype) x numel,
// little-endian), valid until the next call.
using TensorBytesFn = std::function<absl::StatusOr<absl::string_view>(size_t index)>;

// Writes a safetensors file atomically (temp file in the same directory,
// fsync, rename; parent directories created), tensors laid out in the given
// order, the header padded with spaces to a multiple of 8 bytes. Names must
// be unique and non-empty and not "__metadata__". Tensors are written one at
// a time as `bytes` supplies them, so the caller needs only one converted
// tensor in memory at a time.
absl::Status WriteSafetensors(const std::string& path, const std::vector<TensorSpec>& tensors,
                              const TensorBytesFn& bytes,
                              const std::map<std::string, std::string>& metadata);

// The JSON text of model.safetensors.index.json for `weight_map` (tensor ->
// shard file name) and total_size; written by callers with their own file
// helper or WriteTextFileAtomic.
std::string IndexJson(const std::map<std::string, std::string>& weight_map, uint64_t total_size);

// Writes `text` to `path` atomically (as WriteSafetensors).
absl::Status WriteTextFileAtomic(const std::string& path, absl::string_view text);

}  // namespace rlvr::safetensors

#endif  // RLVR_COMMON_SAFETENSORS_SAFETENSORS_H_
