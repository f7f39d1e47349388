// Content checks of one received RolloutGroup against its lease: pure,
// torch-free, thread-safe. Lease bookkeeping (unknown, expired, duplicate), versions and
// message size are checked by Ingest, which owns that state.
#ifndef RLVR_LEARNER_ROLLOUT_VALIDATION_H_
#define RLVR_LEARNER_ROLLOUT_VALIDATION_H_

#include <string>

#include "learner/received_group.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::learner {

// What the group must match.
struct GroupExpectations {
  std::string prompt_id;   // The lease's prompt id.
  int group_size = 2;      // Completions required.
  int max_new_tokens = 8;  // Completion length cap (stop token included).
  int vocab_size = 1;      // Token ids must be in [0, vocab_size).
};

struct ValidationResult {
  rlvr::v1::RejectReason reason = rlvr::v1::REJECT_REASON_UNSPECIFIED;  // UNSPECIFIED = valid.
  std::string detail;  // <= 256 bytes, empty when valid.
  bool ok() const { return reason == rlvr::v1::REJECT_REASON_UNSPECIFIED; }
};

// Checks, in this order: group size; prompt id; for each completion its
// lengths (non-empty, <= max_new_tokens, logprobs as many as tokens), token
// range, log-probs finite and <= 0, reward finite, reward in [0, 1].
// The group size is group.completions; the rollouts are the completions
// (all of them whenever the size is right).
ValidationResult ValidateGroupContent(const ReceivedGroup& group, const GroupExpectations& expect);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_ROLLOUT_VALIDATION_H_
