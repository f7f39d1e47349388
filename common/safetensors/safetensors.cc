#include "common/safetensors/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"

namespace rlvr::safetensors {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors is little-endian");

using Json = nlohmann::json;

// The reference implementation's limit on the header's size.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
// Deepest nesting a valid header has: {"t": {"shape": [..]}} is 3.
constexpr int kMaxJsonDepth = 8;
constexpr int kMaxRank = 16;
// Largest element count / byte size accepted (well inside int64 and size_t).
constexpr uint64_t kMaxBytes = uint64_t{1} << 56;

absl::Status Invalid(const std::string& source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}
absl::Status Truncated(const std::string& source, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(source, ": ", what));
}

// Largest nesting of arrays/objects, outside strings; stops early past
// kMaxJsonDepth (the JSON parser checks the syntax itself).
int JsonDepth(absl::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > kMaxJsonDepth) return max_depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

// Parses `text` as JSON, rejecting duplicate keys in any object.
absl::StatusOr<Json> ParseJsonStrict(absl::string_view text, const std::string& source) {
  if (JsonDepth(text) > kMaxJsonDepth) {
    return Invalid(source, absl::StrCat("JSON nested deeper than ", kMaxJsonDepth, " levels"));
  }
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto cb = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string() &&
            !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  Json j = Json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Invalid(source, "header is not valid JSON");
  if (!duplicate.empty()) return Invalid(source, absl::StrCat("duplicate key '", duplicate, "'"));
  return j;
}

// A JSON number that is a non-negative integer, as uint64.
bool AsUnsigned(const Json& j, uint64_t* out) {
  if (j.is_number_unsigned()) {
    *out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

absl::Status ParseEntry(const std::string& source, const std::string& name, const Json& j,
                        uint64_t data_bytes, TensorInfo* out) {
  const std::string where = absl::StrCat("tensor '", name, "': ");
  if (!j.is_object()) return Invalid(source, where + "entry is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return Invalid(source, absl::StrCat(where, "unknown key '", key, "'"));
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(key)) return Invalid(source, absl::StrCat(where, "missing key '", key, "'"));
  }
  out->name = name;
  const Json& dtype = j["dtype"];
  if (!dtype.is_string()) return Invalid(source, where + "'dtype' is not a string");
  absl::StatusOr<Dtype> parsed = ParseDtype(dtype.get<std::string>());
  if (!parsed.ok()) return Invalid(source, where + std::string(parsed.status().message()));
  out->dtype = *parsed;

  const Json& shape = j["shape"];
  if (!shape.is_array()) return Invalid(source, where + "'shape' is not an array");
  if (shape.size() > kMaxRank) {
    return Invalid(source, absl::StrCat(where, "rank ", shape.size(), " exceeds ", kMaxRank));
  }
  uint64_t numel = 1;
  for (const Json& d : shape) {
    uint64_t v = 0;
    if (!AsUnsigned(d, &v)) {
      return Invalid(source, where + "'shape' holds a value that is not a non-negative integer");
    }
    if (v > kMaxBytes || (v != 0 && numel > kMaxBytes / v)) {
      return Invalid(source, where + "shape too large");
    }
    numel *= v;
    out->shape.push_back(static_cast<int64_t>(v));
  }
  const uint64_t nbytes = numel * static_cast<uint64_t>(DtypeBytes(out->dtype));
  if (nbytes > kMaxBytes) return Invalid(source, where + "shape too large");

  const Json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !AsUnsigned(offsets[0], &out->begin) ||
      !AsUnsigned(offsets[1], &out->end)) {
    return Invalid(source, where + "'data_offsets' must be two non-negative integers");
  }
  if (out->end < out->begin) {
    return Invalid(source, absl::StrCat(where, "data_offsets [", out->begin, ", ", out->end,
                                        "] end before begin"));
  }
  if (out->end - out->begin != nbytes) {
    return Invalid(source,
                   absl::StrCat(where, "data_offsets [", out->begin, ", ", out->end, "] span ",
                                out->end - out->begin, " bytes but ", DtypeName(out->dtype), " x [",
                                absl::StrJoin(out->shape, ","), "] needs ", nbytes));
  }
  if (out->end > data_bytes) {
    return Truncated(source, absl::StrCat(where, "data_offsets [", out->begin, ", ", out->end,
                                          "] beyond the data region (", data_bytes,
                                          " bytes): truncated or corrupt file"));
  }
  return absl::OkStatus();
}

// Creates the parent directory of `path` and writes through `fill(fd)` into a
// temp file that is fsync'ed and renamed over `path`.
absl::Status WriteAtomic(const std::string& path,
                         const std::function<absl::Status(int fd, const std::string& tmp)>& fill) {
  std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("cannot create directory ",
                                              target.parent_path().string(), ": ", ec.message()));
    }
  }
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", tmp, ": ", std::strerror(errno)));
  }
  absl::Status s = fill(fd, tmp);
  if (s.ok() && ::fsync(fd) != 0) {
    s = absl::InternalError(absl::StrCat("fsync ", tmp, ": ", std::strerror(errno)));
  }
  if (::close(fd) != 0 && s.ok()) {
    s = absl::InternalError(absl::StrCat("close ", tmp, ": ", std::strerror(errno)));
  }
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = absl::InternalError(absl::StrCat("rename ", tmp, " -> ", path, ": ", std::strerror(errno)));
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& name) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("write ", name, ": ", std::strerror(errno)));
    }
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return ss.str();
}

}  // namespace

const char* DtypeName(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32:
      return "F32";
    case Dtype::kBF16:
      return "BF16";
    case Dtype::kF16:
      return "F16";
  }
  return "?";
}

int DtypeBytes(Dtype dtype) { return dtype == Dtype::kF32 ? 4 : 2; }

absl::StatusOr<Dtype> ParseDtype(absl::string_view name) {
  if (name == "F32") return Dtype::kF32;
  if (name == "BF16") return Dtype::kBF16;
  if (name == "F16") return Dtype::kF16;
  static const char* const kKnown[] = {"F64",     "I64", "U64",     "I32",     "U32",     "I16",
                                       "U16",     "I8",  "U8",      "BOOL",    "F8_E4M3", "F8_E5M2",
                                       "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};
  for (const char* known : kKnown) {
    if (name == known) {
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported dtype ", name, " (supported: F32, BF16, F16)"));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<Header> ParseHeader(absl::string_view prefix, uint64_t file_size,
                                   const std::string& source) {
  if (file_size < 8 || prefix.size() < 8) {
    return Truncated(source, absl::StrCat("file of ", file_size,
                                          " bytes is shorter than the 8-byte header length"));
  }
  uint64_t n = 0;
  std::memcpy(&n, prefix.data(), 8);
  if (n > file_size - 8) {
    return Truncated(source, absl::StrCat("header length ", n, " exceeds the file's remaining ",
                                          file_size - 8, " bytes: truncated or not safetensors"));
  }
  if (n > kMaxHeaderBytes) {
    return Invalid(source, absl::StrCat("header length ", n, " exceeds ", kMaxHeaderBytes));
  }
  if (n < 2) return Invalid(source, absl::StrCat("header length ", n, " is too small"));
  if (prefix.size() < 8 + n) {
    return Truncated(source, "header incomplete in the bytes given");
  }
  Header header;
  header.header_bytes = n;
  header.data_bytes = file_size - 8 - n;
  const absl::string_view text = prefix.substr(8, n);
  if (text.front() != '{') return Invalid(source, "header does not start with '{'");
  ASSIGN_OR_RETURN(Json j, ParseJsonStrict(text, source));
  if (!j.is_object()) return Invalid(source, "header is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) return Invalid(source, "'__metadata__' is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          return Invalid(source, absl::StrCat("'__metadata__' key '", mk, "' is not a string"));
        }
        header.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    if (key.empty()) return Invalid(source, "a tensor has an empty name");
    TensorInfo info;
    RETURN_IF_ERROR(ParseEntry(source, key, value, header.data_bytes, &info));
    header.tensors.push_back(std::move(info));
  }
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const TensorInfo& a, const TensorInfo& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t expected = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : header.tensors) {
    if (t.begin != expected) {
      if (t.begin < expected) {
        return Invalid(source, absl::StrCat("tensor '", t.name, "': data_offsets [", t.begin, ", ",
                                            t.end, "] overlap tensor '", prev->name, "' [",
                                            prev->begin, ", ", prev->end, "]"));
      }
      return Invalid(source, absl::StrCat("tensor '", t.name, "': data_offsets [", t.begin, ", ",
                                          t.end, "] leave a gap after byte ", expected));
    }
    expected = t.end;
    prev = &t;
  }
  if (expected != header.data_bytes) {
    return Invalid(source, absl::StrCat("the tensors cover ", expected, " bytes of the ",
                                        header.data_bytes, "-byte data region"));
  }
  return header;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->size_ = static_cast<uint64_t>(st.st_size);
  if (file->size_ > 0) {
    void* map = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      return absl::InternalError(absl::StrCat("mmap ", path, ": ", err));
    }
    file->map_ = static_cast<const char*>(map);
  }
  ::close(fd);
  ASSIGN_OR_RETURN(file->header_,
                   ParseHeader(absl::string_view(file->map_, file->size_), file->size_, path));
  for (size_t i = 0; i < file->header_.tensors.size(); ++i) {
    file->index_.emplace(file->header_.tensors[i].name, i);
  }
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(const_cast<char*>(map_), size_);
}

absl::string_view SafetensorsFile::Data(const TensorInfo& tensor) const {
  return absl::string_view(map_ + 8 + header_.header_bytes + tensor.begin,
                           tensor.end - tensor.begin);
}

void SafetensorsFile::Release(const TensorInfo& tensor) const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = (8 + header_.header_bytes + tensor.begin + page - 1) / page * page;
  const uint64_t end = (8 + header_.header_bytes + tensor.end) / page * page;
  if (map_ != nullptr && end > begin) {
    ::madvise(const_cast<char*>(map_) + begin, end - begin, MADV_DONTNEED);
  }
}

const TensorInfo* SafetensorsFile::Find(absl::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

absl::StatusOr<Checkpoint> Checkpoint::Open(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  const std::string single_path = (fs::path(dir) / "model.safetensors").string();
  Checkpoint ckpt;
  std::error_code ec;
  if (!fs::exists(index_path, ec)) {
    if (!fs::exists(single_path, ec)) {
      return absl::NotFoundError(
          absl::StrCat(dir, ": neither model.safetensors nor ", "model.safetensors.index.json"));
    }
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(single_path));
    ckpt.source_ = single_path;
    for (const TensorInfo& t : file->header().tensors) {
      ckpt.tensors_.emplace(t.name, Entry{file.get(), &t});
    }
    ckpt.files_.push_back(std::move(file));
    return ckpt;
  }
  ckpt.source_ = index_path;
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(index_path));
  if (text.size() > kMaxHeaderBytes) return Invalid(index_path, "index file too large");
  ASSIGN_OR_RETURN(Json j, ParseJsonStrict(text, index_path));
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    return Invalid(index_path, "missing key 'weight_map' (an object of tensor -> file)");
  }
  std::map<std::string, std::vector<std::string>> by_shard;  // Shard -> tensors.
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string()) {
      return Invalid(index_path, absl::StrCat("weight_map['", name, "'] is not a string"));
    }
    const std::string s = shard.get<std::string>();
    if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..") {
      return Invalid(index_path, absl::StrCat("weight_map['", name, "'] = '", s,
                                              "' is not a file name in the directory"));
    }
    by_shard[s].push_back(name);
  }
  for (const auto& [shard, names] : by_shard) {
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open((fs::path(dir) / shard).string()));
    std::set<std::string> listed(names.begin(), names.end());
    for (const TensorInfo& t : file->header().tensors) {
      if (!listed.count(t.name)) {
        return Invalid(file->path(), absl::StrCat("tensor '", t.name, "' is not mapped to ", shard,
                                                  " in ", index_path));
      }
    }
    for (const std::string& name : names) {
      const TensorInfo* info = file->Find(name);
      if (info == nullptr) {
        return Invalid(file->path(), absl::StrCat("tensor '", name, "' listed in ", index_path,
                                                  " is not in the file"));
      }
      ckpt.tensors_.emplace(name, Entry{file.get(), info});
    }
    ckpt.files_.push_back(std::move(file));
  }
  return ckpt;
}

const Checkpoint::Entry* Checkpoint::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

absl::Status WriteSafetensors(const std::string& path, const std::vector<TensorSpec>& tensors,
                              const TensorBytesFn& bytes,
                              const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || header.contains(t.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor name '", t.name, "' is empty, reserved or repeated"));
    }
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0)
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": tensor '", t.name, "' has a negative dimension"));
      numel *= static_cast<uint64_t>(d);
    }
    const uint64_t nbytes = numel * static_cast<uint64_t>(DtypeBytes(t.dtype));
    header[t.name] = {{"dtype", DtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + nbytes}}};
    sizes.push_back(nbytes);
    offset += nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return WriteAtomic(path, [&](int fd, const std::string& tmp) -> absl::Status {
    const uint64_t n = text.size();
    RETURN_IF_ERROR(WriteAll(fd, absl::string_view(reinterpret_cast<const char*>(&n), 8), tmp));
    RETURN_IF_ERROR(WriteAll(fd, text, tmp));
    for (size_t i = 0; i < tensors.size(); ++i) {
      ASSIGN_OR_RETURN(absl::string_view data, bytes(i));
      if (data.size() != sizes[i]) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", tensors[i].name,
                                                       "' supplied ", data.size(),
                                                       " bytes, expected ", sizes[i]));
      }
      RETURN_IF_ERROR(WriteAll(fd, data, tmp));
    }
    return absl::OkStatus();
  });
}

std::string IndexJson(const std::map<std::string, std::string>& weight_map, uint64_t total_size) {
  Json j = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
  return j.dump(2) + "\n";
}

absl::Status WriteTextFileAtomic(const std::string& path, absl::string_view text) {
  return WriteAtomic(path, [&](int fd, const std::string& tmp) { return WriteAll(fd, text, tmp); });
}

}  // namespace rlvr::safetensors
