// The training ledger: one JSON line per trained group, written by learner
// rank 0 after each update, used to audit exactly-once training.
//
// Line fields: step (the update that trained the group), epoch, position,
// prompt_index, prompt_id, lease_id, version (the policy version that
// generated the group).
//
// Crash consistency: the ledger lines of step s are appended (and fsynced,
// see LedgerWriter::Sync) before the checkpoint of step s is written. A
// learner killed between an update and its checkpoint resumes from an older
// step k and redoes the later updates; TruncateLedger(path, k) at resume
// drops the lines of the rolled-back steps (and a torn last line), so the
// ledger describes exactly the updates of the surviving model history.
//
// Thread safety: none; rank 0's training thread is the only user.
#ifndef RLVR_LEARNER_LEDGER_H_
#define RLVR_LEARNER_LEDGER_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvr::learner {

// What TruncateLedger kept and dropped.
struct LedgerTruncation {
  int64_t kept = 0;       // Lines with step <= max_step.
  int64_t dropped = 0;    // Well-formed lines with step > max_step.
  int64_t malformed = 0;  // Torn or unparsable lines (a torn last line after a crash).
};

// Rewrites `path` atomically (temp file + fsync + rename + directory fsync)
// keeping only well-formed lines whose step is <= max_step, in order. Works
// on any JSON-lines file whose lines carry an unsigned "step" (the learner
// also applies it to metrics.jsonl). A
// missing file is not an error (nothing kept). Errors: I/O failures; the
// original file is then untouched.
absl::StatusOr<LedgerTruncation> TruncateLedger(const std::string& path, uint64_t max_step);

// Appends lines to the ledger file. Open() creates the file if needed.
class LedgerWriter {
 public:
  LedgerWriter() = default;
  ~LedgerWriter();
  LedgerWriter(const LedgerWriter&) = delete;
  LedgerWriter& operator=(const LedgerWriter&) = delete;

  absl::Status Open(const std::string& path);
  bool is_open() const { return file_ != nullptr; }
  // Appends one line (a newline is added) and flushes it to the kernel.
  absl::Status Append(const std::string& line);
  // fsync: the appended lines survive a machine crash.
  absl::Status Sync();

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_LEDGER_H_
