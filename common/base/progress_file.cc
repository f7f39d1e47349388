#include "common/base/progress_file.h"

#include <glog/logging.h>

#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/base/file_io.h"

namespace rlvr {

ProgressFile::ProgressFile(std::string path, absl::Duration min_interval)
    : path_(std::move(path)), min_interval_(min_interval) {}

ProgressFile::~ProgressFile() { Clear(); }

void ProgressFile::Update(absl::string_view what, int done, int total) {
  if (path_.empty()) return;
  const absl::Time now = absl::Now();
  if (done < total && now - last_write_ < min_interval_) return;
  last_write_ = now;
  absl::Status s = WriteFileAtomically(path_, absl::StrCat(done, " ", total, " ", what, "\n"));
  if (!s.ok()) {
    if (!warned_) LOG(WARNING) << "progress file: " << s;
    warned_ = true;
    return;
  }
  written_ = true;
}

void ProgressFile::Clear() {
  if (path_.empty() || !written_) return;
  std::remove(path_.c_str());
  written_ = false;
  last_write_ = absl::InfinitePast();
}

std::optional<Progress> ReadProgressFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return std::nullopt;
  std::vector<std::string> parts =
      absl::StrSplit(absl::StripSuffix(*text, "\n"), absl::MaxSplits(' ', 2));
  Progress p;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &p.done) ||
      !absl::SimpleAtoi(parts[1], &p.total) || parts[2].empty()) {
    return std::nullopt;
  }
  p.what = parts[2];
  return p;
}

}  // namespace rlvr
