#include "learner/ledger.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace rlvr::learner {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// True if `line` is a JSON object with an unsigned integer "step"; sets *step.
bool ParseStep(const std::string& line, uint64_t* step) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  auto it = j.find("step");
  if (it == j.end() || !it->is_number_unsigned()) return false;
  *step = it->get<uint64_t>();
  return true;
}

}  // namespace

absl::StatusOr<LedgerTruncation> TruncateLedger(const std::string& path, uint64_t max_step) {
  LedgerTruncation t;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) return t;
    return absl::InternalError(absl::StrCat("cannot read ", path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  std::string out;
  out.reserve(all.size());
  size_t pos = 0;
  while (pos < all.size()) {
    const size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) {  // Torn last line: no newline, never complete.
      ++t.malformed;
      break;
    }
    const std::string line = all.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    uint64_t step = 0;
    if (!ParseStep(line, &step)) {
      ++t.malformed;
    } else if (step > max_step) {
      ++t.dropped;
    } else {
      ++t.kept;
      out.append(line).push_back('\n');
    }
  }
  if (t.dropped == 0 && t.malformed == 0) return t;  // Already consistent.

  RETURN_IF_ERROR(WriteFileAtomically(path, out));
  return t;
}

LedgerWriter::~LedgerWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status LedgerWriter::Open(const std::string& path) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = std::fopen(path.c_str(), "ae");
  if (file_ == nullptr) return Errno(absl::StrCat("cannot open ", path));
  path_ = path;
  return absl::OkStatus();
}

absl::Status LedgerWriter::Append(const std::string& line) {
  if (file_ == nullptr) return absl::FailedPreconditionError("ledger not open");
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fputc('\n', file_) == EOF || std::fflush(file_) != 0) {
    return Errno(absl::StrCat("write ", path_));
  }
  return absl::OkStatus();
}

absl::Status LedgerWriter::Sync() {
  if (file_ == nullptr) return absl::OkStatus();
  if (std::fflush(file_) != 0 || fsync(fileno(file_)) != 0) {
    return Errno(absl::StrCat("fsync ", path_));
  }
  return absl::OkStatus();
}

}  // namespace rlvr::learner
