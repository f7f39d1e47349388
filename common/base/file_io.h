// Durable file writes: the one place the project writes a file so that a
// crash leaves either the old contents or the new, never a torn mix.
//
// WriteFileAtomically: the bytes go to a temporary file in the same
// directory, which is fsync'ed, renamed over `path`, and the directory is
// fsync'ed so that the rename itself survives a power cut. WriteFileSynced
// writes and fsyncs in place (for files inside a directory that is itself
// renamed into place later, as the checkpointer does).
//
// Errors are absl::InternalError naming the path and the failing system call;
// on error no temporary file is left behind. Thread safety: distinct paths may
// be written concurrently; two writers of one path race (the last rename wins,
// each result is whole).
#ifndef RLVR_COMMON_BASE_FILE_IO_H_
#define RLVR_COMMON_BASE_FILE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvr {

struct AtomicWriteOptions {
  bool create_parent_dirs = false;  // mkdir -p the parent directory first.
  int mode = 0644;                  // Permission bits of the new file.
};

// Replaces `path` with `bytes` atomically and durably (see above).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 const AtomicWriteOptions& options = {});

// Creates or truncates `path`, writes `bytes` and fsyncs the file.
absl::Status WriteFileSynced(const std::string& path, absl::string_view bytes, int mode = 0644);

// fsyncs the directory `dir` (its entries: creations, renames, removals).
absl::Status SyncDirectory(const std::string& dir);

// The whole contents of `path`. NotFound if it cannot be opened.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_FILE_IO_H_
