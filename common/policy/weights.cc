#include "common/policy/weights.h"

#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/checksum.h"
#include "common/base/file_io.h"
#include "common/policy/model.h"

namespace rlvr::policy {
namespace {

constexpr char kMagic[8] = {'R', 'L', 'V', 'R', 'W', 'G', 'T', '\0'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 8 + 4;
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "weights blob is little-endian");

template <typename T>
void Put(ChunkCrc32Appender* out, T value) {
  out->Append(std::string_view(reinterpret_cast<const char*>(&value), sizeof(T)));
}

// Bounds-checked little-endian reader over the blob.
class Reader {
 public:
  explicit Reader(absl::string_view data) : data_(data) {}
  template <typename T>
  bool Get(T* value) {
    if (data_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Bytes(size_t n, absl::string_view* out) {
    if (data_.size() - pos_ < n) return false;
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  absl::string_view data_;
  size_t pos_ = 0;
};

struct Entry {
  std::string name;
  torch::ScalarType dtype;
  std::vector<int64_t> shape;
  absl::string_view bytes;
};

std::string ShapeText(c10::IntArrayRef shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

absl::Status Corrupt(const std::string& what) {
  return absl::DataLossError(absl::StrCat("weights blob: ", what));
}

absl::Status CheckHeader(absl::string_view blob, uint64_t* version) {
  if (blob.size() < kHeaderBytes + 4) {
    return Corrupt(absl::StrCat("truncated (", blob.size(), " bytes)"));
  }
  if (std::memcmp(blob.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("weights blob: bad magic (not an rlvr weight blob)");
  }
  uint32_t format;
  std::memcpy(&format, blob.data() + 8, 4);
  if (format != kFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat("weights blob: unsupported format version ",
                                                   format, " (expected ", kFormatVersion, ")"));
  }
  std::memcpy(version, blob.data() + 12, 8);
  return absl::OkStatus();
}

// Bytes of one tensor's entry in the blob: name length, name, dtype, rank,
// dims, data length and data.
uint64_t EntryBytes(size_t name_bytes, size_t rank, uint64_t data_bytes) {
  return 4 + name_bytes + 1 + 4 + 8 * static_cast<uint64_t>(rank) + 8 + data_bytes;
}

}  // namespace

std::string SerializeWeights(Transformer& model, uint64_t version) {
  std::string out;
  SerializeWeightsInto(model, version, &out);
  return out;
}

void SerializeWeightsInto(Transformer& model, uint64_t version, std::string* out,
                          size_t chunk_bytes, std::vector<uint32_t>* chunk_crcs) {
  torch::NoGradGuard no_grad;
  auto params = model->named_parameters(/*recurse=*/true);
  out->clear();  // Keeps the capacity.
  uint64_t total = kHeaderBytes + 4;
  for (const auto& p : params) {
    total += EntryBytes(p.key().size(), p.value().dim(), p.value().nbytes());
  }
  out->reserve(total);
  // Without chunks asked for, 1 MiB ones: the blob's CRC is combined from them.
  ChunkCrc32Appender blob(out, chunk_bytes > 0 ? chunk_bytes : size_t{1} << 20);
  blob.Append(std::string_view(kMagic, sizeof(kMagic)));
  Put<uint32_t>(&blob, kFormatVersion);
  Put<uint64_t>(&blob, version);
  Put<uint32_t>(&blob, static_cast<uint32_t>(params.size()));
  for (const auto& p : params) {
    // A CUDA parameter is written from a CPU copy (a CPU one is used as is).
    torch::Tensor t = p.value().detach().to(torch::kCPU).contiguous();
    Put<uint32_t>(&blob, static_cast<uint32_t>(p.key().size()));
    blob.Append(p.key());
    Put<uint8_t>(&blob, static_cast<uint8_t>(t.scalar_type()));
    Put<uint32_t>(&blob, static_cast<uint32_t>(t.dim()));
    for (int64_t d : t.sizes()) Put<int64_t>(&blob, d);
    Put<uint64_t>(&blob, static_cast<uint64_t>(t.nbytes()));
    blob.Append(std::string_view(static_cast<const char*>(t.data_ptr()), t.nbytes()));
  }
  // The blob's CRC covers every byte before it; it is appended through the
  // appender too, so the last chunk's CRC covers it.
  Put<uint32_t>(&blob, blob.Crc32OfAll());
  if (chunk_crcs != nullptr) *chunk_crcs = blob.chunk_crcs();
}

uint64_t WeightsBlobBytes(Transformer& model) {
  // The layout written by SerializeWeights: header, then per tensor its name
  // length, name, dtype, rank, dims, data length and data; CRC last.
  uint64_t bytes = kHeaderBytes + 4;
  for (const auto& p : model->named_parameters(/*recurse=*/true)) {
    bytes += EntryBytes(p.key().size(), p.value().dim(), p.value().nbytes());
  }
  return bytes;
}

uint64_t WeightsBlobBytes(const rlvr::ModelConfig& config, int vocab_size) {
  uint64_t bytes = kHeaderBytes + 4;
  for (const ParameterShape& p : ParameterLayout(config, vocab_size)) {
    uint64_t numel = 1;
    for (int64_t dim : p.dims) numel *= static_cast<uint64_t>(dim);
    bytes += EntryBytes(p.name.size(), p.dims.size(), sizeof(float) * numel);
  }
  return bytes;
}

absl::StatusOr<uint64_t> PeekWeightsVersion(absl::string_view blob) {
  uint64_t version = 0;
  absl::Status s = CheckHeader(blob, &version);
  if (!s.ok()) return s;
  return version;
}

absl::Status LoadWeights(absl::string_view blob, Transformer& model, uint64_t* version_out) {
  uint64_t version = 0;
  absl::Status header = CheckHeader(blob, &version);
  if (!header.ok()) return header;
  const absl::string_view body = blob.substr(0, blob.size() - 4);
  uint32_t stored_crc;
  std::memcpy(&stored_crc, blob.data() + blob.size() - 4, 4);
  const uint32_t crc = Crc32(std::string_view(body.data(), body.size()));
  if (crc != stored_crc) {
    return Corrupt(absl::StrCat("checksum mismatch (stored ", stored_crc, ", computed ", crc,
                                "): corrupted or truncated"));
  }
  Reader reader(body);
  absl::string_view skip;
  reader.Bytes(kHeaderBytes - 4, &skip);
  uint32_t count = 0;
  reader.Get(&count);
  std::vector<Entry> entries;
  for (uint32_t i = 0; i < count; ++i) {
    Entry e;
    uint32_t name_len = 0, rank = 0;
    uint8_t dtype = 0;
    uint64_t nbytes = 0;
    absl::string_view name;
    if (!reader.Get(&name_len) || !reader.Bytes(name_len, &name) || !reader.Get(&dtype) ||
        !reader.Get(&rank) || rank > 16) {
      return Corrupt(absl::StrCat("tensor ", i, " header truncated or malformed"));
    }
    e.name = std::string(name);
    e.dtype = static_cast<torch::ScalarType>(dtype);
    for (uint32_t k = 0; k < rank; ++k) {
      int64_t d = 0;
      if (!reader.Get(&d) || d < 0) return Corrupt(absl::StrCat("tensor '", e.name, "' bad shape"));
      e.shape.push_back(d);
    }
    if (!reader.Get(&nbytes) || !reader.Bytes(nbytes, &e.bytes)) {
      return Corrupt(absl::StrCat("tensor '", e.name, "' data truncated"));
    }
    entries.push_back(std::move(e));
  }
  if (reader.pos() != body.size()) {
    return Corrupt(absl::StrCat(body.size() - reader.pos(), " trailing bytes after the tensors"));
  }

  // Every entry must match a distinct parameter exactly, and cover them all.
  auto params = model->named_parameters(/*recurse=*/true);
  std::map<std::string, torch::Tensor> by_name;
  for (const auto& p : params) by_name[p.key()] = p.value();
  std::map<std::string, const Entry*> matched;
  for (const Entry& e : entries) {
    auto it = by_name.find(e.name);
    if (it == by_name.end()) {
      return absl::InvalidArgumentError(absl::StrCat("weights blob: unknown tensor '", e.name,
                                                     "' (model has no such parameter)"));
    }
    if (!matched.emplace(e.name, &e).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("weights blob: duplicate tensor '", e.name, "'"));
    }
    const torch::Tensor& t = it->second;
    // The one conversion allowed: float32 (the learner's master weights)
    // into a reduced-precision model (an actor computing in bfloat16).
    const bool narrowing = e.dtype == torch::kFloat32 &&
                           (t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kHalf);
    if (e.dtype != t.scalar_type() && !narrowing) {
      return absl::InvalidArgumentError(absl::StrCat(
          "weights blob: tensor '", e.name, "' has dtype code ", static_cast<int>(e.dtype),
          ", model expects ", c10::toString(t.scalar_type())));
    }
    if (c10::IntArrayRef(e.shape) != t.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat("weights blob: tensor '", e.name,
                                                     "' has shape ", ShapeText(e.shape),
                                                     ", model expects ", ShapeText(t.sizes())));
    }
    const size_t expected_bytes = t.numel() * torch::elementSize(e.dtype);
    if (e.bytes.size() != expected_bytes) {
      return Corrupt(absl::StrCat("tensor '", e.name, "' has ", e.bytes.size(), " bytes, expected ",
                                  expected_bytes));
    }
  }
  if (matched.size() != by_name.size()) {
    for (const auto& [name, t] : by_name) {
      if (!matched.count(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("weights blob: missing tensor '", name, "'"));
      }
    }
  }

  // Validated: copy in. Nothing below can fail on valid input.
  torch::NoGradGuard no_grad;
  for (const Entry& e : entries) {
    torch::Tensor& t = by_name[e.name];
    torch::Tensor src = torch::from_blob(const_cast<char*>(e.bytes.data()), e.shape,
                                         torch::TensorOptions().dtype(e.dtype));
    t.copy_(src);
  }
  if (version_out != nullptr) *version_out = version;
  return absl::OkStatus();
}

absl::Status SaveWeightsFile(const std::string& path, Transformer& model, uint64_t version) {
  AtomicWriteOptions options;
  options.create_parent_dirs = true;
  return WriteFileAtomically(path, SerializeWeights(model, version), options);
}

absl::Status LoadWeightsFile(const std::string& path, Transformer& model, uint64_t* version_out) {
  absl::StatusOr<std::string> blob = ReadFileToString(path);
  if (!blob.ok()) {
    return absl::NotFoundError(
        absl::StrCat("cannot open weights file ", path, ": ", blob.status().message()));
  }
  absl::Status s = LoadWeights(*blob, model, version_out);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  return absl::OkStatus();
}

}  // namespace rlvr::policy
