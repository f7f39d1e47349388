// Internal to rlvr_trainer: the message rank 0 broadcasts to the other ranks
// at the start of every update (groups, plan, stop flag and, when the ranks
// must be re-synchronised, the full training state), and the counters record
// of a checkpoint.
//
// Format (2): the structured part is a protobuf message
// (proto/rlvr/v1/trainer_sync.proto: UpdateHeader, TrainerCounters) in a
// small frame (magic "RLVU", format u32, header length u64), followed by the
// state's weight, reference and optimizer blobs, whose sizes the header
// gives: those blobs are raw because a protobuf message stops at 2 GiB and a
// real model's state does not. Decoding fails with DataLoss on any
// truncation, trailing byte, or index out of range, never reading out of
// bounds. Counters records of format 1 (checkpoints written before format 2)
// are still read.
#ifndef RLVR_LEARNER_TRAINER_UPDATE_CODEC_H_
#define RLVR_LEARNER_TRAINER_UPDATE_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "learner/core/batcher.h"
#include "learner/core/group.h"

namespace rlvr::learner::internal {

// Counters that define where training stands.
struct TrainerCounters {
  uint64_t step = 0;             // Updates done.
  uint64_t version = 0;          // Policy version.
  uint64_t optimizer_steps = 0;  // LR-schedule position.
};

// Everything a rank needs to continue training identically to rank 0.
struct TrainerState {
  TrainerCounters counters;
  std::string weights;            // policy::SerializeWeights blob.
  std::string reference_weights;  // KL reference blob ("" when kl_coef == 0).
  std::string optimizer;          // torch::serialize archive of the AdamW state.
};

struct UpdateMessage {
  bool stop = false;                  // The job ends after this update.
  std::optional<TrainerState> state;  // Present when ranks must re-sync.
  std::vector<Group> groups;          // The update's groups (empty: no training).
  UpdatePlan plan;                    // Rank 0's plan over `groups`.
};

std::string EncodeUpdateMessage(const UpdateMessage& message);
absl::StatusOr<UpdateMessage> DecodeUpdateMessage(absl::string_view bytes);

std::string EncodeCounters(const TrainerCounters& counters);
absl::StatusOr<TrainerCounters> DecodeCounters(absl::string_view bytes);

}  // namespace rlvr::learner::internal

#endif  // RLVR_LEARNER_TRAINER_UPDATE_CODEC_H_
