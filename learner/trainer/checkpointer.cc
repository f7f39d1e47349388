#include "learner/trainer/checkpointer.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/checksum.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "google/protobuf/text_format.h"
#include "rlvr/v1/trainer_sync.pb.h"

namespace rlvr::learner {
namespace {

namespace fs = std::filesystem;

constexpr char kManifest[] = "MANIFEST";
constexpr uint32_t kManifestFormat = 2;
constexpr char kManifestHeading[] =
    "# rlvr checkpoint manifest: rlvr.v1.CheckpointManifest (proto/rlvr/v1/trainer_sync.proto)\n";
constexpr char kLegacyManifestMagic[] = "rlvr-checkpoint 1";  // Format 1, still read.
constexpr char kPrefix[] = "ckpt-";

bool ValidPartName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string Hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

// Step from a "ckpt-<digits>" name; nullopt for anything else.
std::optional<uint64_t> StepFromName(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return std::nullopt;
  std::string digits = name.substr(std::strlen(kPrefix));
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  uint64_t step = 0;
  if (!absl::SimpleAtoi(digits, &step)) return std::nullopt;
  return step;
}

void RemoveTreeQuietly(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) LOG(WARNING) << "checkpointer: cannot remove " << path << ": " << ec.message();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Checkpointer>> Checkpointer::Create(
    const CheckpointerOptions& options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("checkpointer: empty dir");
  if (options.keep < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpointer: keep must be >= 1, got ", options.keep));
  }
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("checkpointer: cannot create ", options.dir, ": ", ec.message()));
  }
  return std::unique_ptr<Checkpointer>(new Checkpointer(options));
}

std::string Checkpointer::PathFor(uint64_t step) const {
  return (fs::path(options_.dir) / absl::StrCat(kPrefix, step)).string();
}

std::vector<uint64_t> Checkpointer::ListSteps() const {
  std::vector<uint64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options_.dir, ec)) {
    if (!entry.is_directory()) continue;
    if (auto step = StepFromName(entry.path().filename().string())) steps.push_back(*step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

absl::Status Checkpointer::Save(const CheckpointData& data) {
  static std::atomic<uint64_t> counter{0};
  const fs::path parent(options_.dir);
  // Leftovers of a save that crashed half-way.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".tmp-ckpt-", 0) == 0 || name.rfind(".old-ckpt-", 0) == 0) {
      RemoveTreeQuietly(entry.path());
    }
  }
  const std::string unique = absl::StrCat(data.step, "-", ::getpid(), "-", counter++);
  const fs::path tmp = parent / absl::StrCat(".tmp-ckpt-", unique);
  fs::create_directory(tmp, ec);
  if (ec) return absl::InternalError(absl::StrCat("mkdir ", tmp.string(), ": ", ec.message()));

  rlvr::v1::CheckpointManifest m;
  m.set_format(kManifestFormat);
  m.set_step(data.step);
  m.set_version(data.version);
  for (const auto& [name, bytes] : data.parts) {
    if (!ValidPartName(name)) {
      RemoveTreeQuietly(tmp);
      return absl::InvalidArgumentError(absl::StrCat("checkpointer: bad part name \"", name, "\""));
    }
    absl::Status s = WriteFileSynced((tmp / (name + ".bin")).string(), bytes);
    if (!s.ok()) {
      RemoveTreeQuietly(tmp);
      return s;
    }
    rlvr::v1::CheckpointManifest::Part* part = m.add_parts();
    part->set_name(name);
    part->set_bytes(bytes.size());
    part->set_crc32(Crc32(bytes));
  }
  std::string manifest = kManifestHeading;
  std::string text;
  google::protobuf::TextFormat::PrintToString(m, &text);
  manifest += text;
  absl::StrAppend(&manifest, "# end ", Hex32(Crc32(manifest)), "\n");
  absl::Status s = WriteFileSynced((tmp / kManifest).string(), manifest);
  if (s.ok()) s = SyncDirectory(tmp.string());
  if (!s.ok()) {
    RemoveTreeQuietly(tmp);
    return s;
  }

  const fs::path final_path = PathFor(data.step);
  if (fs::exists(final_path)) {
    // rename() cannot replace a non-empty directory: move the old one aside
    // first (a crash in between leaves it as .old-*, and the other
    // checkpoints still valid).
    const fs::path old = parent / absl::StrCat(".old-ckpt-", unique);
    fs::rename(final_path, old, ec);
    if (ec) {
      RemoveTreeQuietly(tmp);
      return absl::InternalError(absl::StrCat("rename ", final_path.string(), ": ", ec.message()));
    }
    RemoveTreeQuietly(old);
  }
  fs::rename(tmp, final_path, ec);
  if (ec) {
    RemoveTreeQuietly(tmp);
    return absl::InternalError(absl::StrCat("rename to ", final_path.string(), ": ", ec.message()));
  }
  RETURN_IF_ERROR(SyncDirectory(parent.string()));

  std::vector<uint64_t> steps = ListSteps();
  const size_t keep = static_cast<size_t>(options_.keep);
  if (steps.size() > keep) {
    for (size_t i = 0; i + keep < steps.size(); ++i) RemoveTreeQuietly(PathFor(steps[i]));
    (void)SyncDirectory(parent.string());
  }
  return absl::OkStatus();
}

namespace {

// Reads a part file and checks it against its manifest entry.
absl::StatusOr<std::string> ReadPart(const std::string& path, const std::string& name,
                                     uint64_t size, uint32_t crc) {
  if (!ValidPartName(name)) {
    return absl::DataLossError(absl::StrCat(path, ": bad part name \"", name, "\""));
  }
  absl::StatusOr<std::string> bytes = ReadFileToString((fs::path(path) / (name + ".bin")).string());
  if (!bytes.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": part ", name, ": ", bytes.status().message()));
  }
  if (bytes->size() != size) {
    return absl::DataLossError(absl::StrCat(path, ": part ", name, " has ", bytes->size(),
                                            " bytes, manifest says ", size));
  }
  if (Crc32(*bytes) != crc) {
    return absl::DataLossError(absl::StrCat(path, ": part ", name, " fails its CRC-32"));
  }
  return bytes;
}

// The body before a final "<end_prefix><crc hex>" line, checked against it.
absl::StatusOr<std::string> CheckedBody(const std::string& path, const std::string& manifest,
                                        const std::string& end_prefix) {
  const size_t end_pos = manifest.rfind(end_prefix);
  if (end_pos == std::string::npos || (end_pos > 0 && manifest[end_pos - 1] != '\n')) {
    return absl::DataLossError(absl::StrCat(path, ": manifest has no end line"));
  }
  std::string body = manifest.substr(0, end_pos);
  std::string end_line = manifest.substr(end_pos);
  if (!end_line.empty() && end_line.back() == '\n') end_line.pop_back();
  if (end_line != absl::StrCat(end_prefix, Hex32(Crc32(body)))) {
    return absl::DataLossError(absl::StrCat(path, ": manifest checksum mismatch"));
  }
  return body;
}

// Format 1: "rlvr-checkpoint 1", then "step N", "version N" and
// "part NAME BYTES CRC" lines, then "end CRC".
absl::StatusOr<CheckpointData> ReadLegacyManifest(const std::string& path,
                                                  const std::string& manifest) {
  ASSIGN_OR_RETURN(std::string body, CheckedBody(path, manifest, "end "));
  CheckpointData data;
  bool have_step = false, have_version = false;
  std::vector<std::string> lines = absl::StrSplit(body, '\n', absl::SkipEmpty());
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> f = absl::StrSplit(lines[i], ' ');
    uint64_t size = 0;
    uint32_t crc = 0;
    if (f.size() == 2 && f[0] == "step" && absl::SimpleAtoi(f[1], &data.step)) {
      have_step = true;
    } else if (f.size() == 2 && f[0] == "version" && absl::SimpleAtoi(f[1], &data.version)) {
      have_version = true;
    } else if (f.size() == 4 && f[0] == "part" && absl::SimpleAtoi(f[2], &size) &&
               absl::SimpleHexAtoi(f[3], &crc)) {
      ASSIGN_OR_RETURN(data.parts[f[1]], ReadPart(path, f[1], size, crc));
    } else {
      return absl::DataLossError(absl::StrCat(path, ": bad manifest line: ", lines[i]));
    }
  }
  if (!have_step || !have_version) {
    return absl::DataLossError(absl::StrCat(path, ": manifest lacks step or version"));
  }
  return data;
}

}  // namespace

absl::StatusOr<CheckpointData> Checkpointer::Read(const std::string& path) {
  ASSIGN_OR_RETURN(std::string manifest, ReadFileToString((fs::path(path) / kManifest).string()));
  if (manifest.rfind(absl::StrCat(kLegacyManifestMagic, "\n"), 0) == 0) {
    return ReadLegacyManifest(path, manifest);
  }
  ASSIGN_OR_RETURN(std::string body, CheckedBody(path, manifest, "# end "));
  rlvr::v1::CheckpointManifest m;
  if (!google::protobuf::TextFormat::ParseFromString(body, &m) || m.format() != kManifestFormat) {
    return absl::DataLossError(absl::StrCat(path, ": not a checkpoint manifest"));
  }
  CheckpointData data;
  data.step = m.step();
  data.version = m.version();
  for (const rlvr::v1::CheckpointManifest::Part& part : m.parts()) {
    ASSIGN_OR_RETURN(data.parts[part.name()],
                     ReadPart(path, part.name(), part.bytes(), part.crc32()));
  }
  return data;
}

absl::StatusOr<std::optional<CheckpointData>> Checkpointer::LoadLatest() const {
  std::error_code ec;
  if (!fs::is_directory(options_.dir, ec)) {
    return absl::NotFoundError(absl::StrCat("checkpointer: no directory ", options_.dir));
  }
  std::vector<uint64_t> steps = ListSteps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    absl::StatusOr<CheckpointData> data = Read(PathFor(*it));
    if (!data.ok()) {
      LOG(WARNING) << "checkpointer: skipping " << PathFor(*it) << ": " << data.status();
      continue;
    }
    if (data->step != *it) {
      LOG(WARNING) << "checkpointer: skipping " << PathFor(*it) << ": manifest step " << data->step;
      continue;
    }
    return std::optional<CheckpointData>(*std::move(data));
  }
  return std::optional<CheckpointData>();
}

}  // namespace rlvr::learner
