// A one-line progress file that another process polls: `rlvr eval` and the
// learner write how far a long step (a held-out evaluation) is, and `rlvr
// run` shows it in its progress line. The line is "DONE TOTAL WHAT", e.g.
// "40 200 base policy, greedy, held-out prompts".
//
// Writes replace the file atomically (WriteFileAtomically), at most every
// min_interval unless the step is complete; a failed write is logged once
// and otherwise ignored (progress is never worth failing a run). Clear()
// removes the file. An empty path makes every call a no-op.
//
// Thread safety: one writer object per path, used from one thread.
#ifndef RLVR_COMMON_BASE_PROGRESS_FILE_H_
#define RLVR_COMMON_BASE_PROGRESS_FILE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace rlvr {

struct Progress {
  int done = 0;
  int total = 0;
  std::string what;
};

class ProgressFile {
 public:
  explicit ProgressFile(std::string path, absl::Duration min_interval = absl::Milliseconds(250));
  ~ProgressFile();

  // `what` must not contain a newline.
  void Update(absl::string_view what, int done, int total);
  void Clear();

 private:
  const std::string path_;
  const absl::Duration min_interval_;
  absl::Time last_write_ = absl::InfinitePast();
  bool warned_ = false;
  bool written_ = false;
};

// The file's progress; nullopt when it is absent or not a progress line.
std::optional<Progress> ReadProgressFile(const std::string& path);

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_PROGRESS_FILE_H_
