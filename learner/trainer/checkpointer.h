// On-disk checkpoints of the learner: a directory of `ckpt-<step>/`
// subdirectories, each holding named binary parts (`<part>.bin`) and a
// MANIFEST that lists every part with its size and CRC-32 (common/base/checksum.h)
// and is itself checksummed: an rlvr.v1.CheckpointManifest in protobuf text
// format (proto/rlvr/v1/trainer_sync.proto) and a "# end <crc>" line; the
// line-based manifests of format 1 are still read. Torch-free: the Trainer decides what the parts
// are (model weights, optimizer state, RNG state, trainer counters, the
// ingest side's opaque state); this class only stores and verifies bytes.
//
// Atomicity: Save writes everything into a hidden temp directory in the same
// parent, fsyncs each file and the temp directory, renames it to
// `ckpt-<step>` and fsyncs the parent. A crash leaves either the previous set
// of checkpoints or the new complete one (plus, at worst, a `.tmp-*`
// directory that the next Save removes). Then all but the newest
// `keep` checkpoints (by step) are deleted.
//
// Resume: LoadLatest returns the newest checkpoint whose manifest and parts
// all verify; partial or corrupt ones are skipped with a LOG(WARNING).
//
// Thread safety: one Checkpointer per directory, used by one thread at a time
// (only learner rank 0 writes). Not safe against another process writing the
// same directory.
#ifndef RLVR_LEARNER_TRAINER_CHECKPOINTER_H_
#define RLVR_LEARNER_TRAINER_CHECKPOINTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvr::learner {

struct CheckpointerOptions {
  std::string dir;  // Parent directory of the checkpoints; created if missing.
  int keep = 3;     // Checkpoints kept after each Save (the newest K by step); >= 1.
};

// One checkpoint's contents.
struct CheckpointData {
  uint64_t step = 0;     // Updates done; names the directory.
  uint64_t version = 0;  // Policy version.
  // Part name ([a-z0-9_]+, stored as <name>.bin) -> bytes.
  std::map<std::string, std::string> parts;
};

class Checkpointer {
 public:
  // InvalidArgument for an empty dir or keep < 1; Internal if the directory
  // cannot be created.
  static absl::StatusOr<std::unique_ptr<Checkpointer>> Create(const CheckpointerOptions& options);

  // Writes `data` atomically as ckpt-<data.step> (replacing an existing one of
  // the same step), then prunes to the newest `keep`. On error nothing
  // visible changes except possibly a leftover temp directory.
  absl::Status Save(const CheckpointData& data);

  // The newest checkpoint that verifies completely, or nullopt if there is
  // none. Never fails because of a bad checkpoint (it is skipped and
  // logged); fails only if the directory cannot be listed.
  absl::StatusOr<std::optional<CheckpointData>> LoadLatest() const;

  // Reads and verifies one checkpoint directory (DataLoss / NotFound naming
  // the part on any mismatch).
  static absl::StatusOr<CheckpointData> Read(const std::string& path);

  // Steps of the ckpt-<step> directories present (complete or not), ascending.
  std::vector<uint64_t> ListSteps() const;

  // The directory a checkpoint of `step` has.
  std::string PathFor(uint64_t step) const;

  const std::string& dir() const { return options_.dir; }

 private:
  explicit Checkpointer(CheckpointerOptions options) : options_(std::move(options)) {}
  CheckpointerOptions options_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_TRAINER_CHECKPOINTER_H_
