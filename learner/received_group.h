// A RolloutGroup as the learner receives it, before validation: the
// trainer's Group plus what only the wire knows. Filled by the wire decoder
// (rollout_decoder.h) or converted from a parsed message; validated by
// rollout_validation.h; buffered by Ingest, which moves the Group on.
#ifndef RLVR_LEARNER_RECEIVED_GROUP_H_
#define RLVR_LEARNER_RECEIVED_GROUP_H_

#include <cstddef>

#include "learner/core/group.h"

namespace rlvr::learner {

struct ReceivedGroup {
  // lease_id, prompt_id, policy_version and one Rollout per completion, for
  // at most the completion limit the decoder was given. prompt and
  // prompt_index are not on the wire: Ingest sets them from the lease.
  Group group;
  // Completions in the message: more than group.rollouts.size() when the
  // message carries more than the limit (the rest are counted, not kept).
  int completions = 0;
  // Encoded size of an ActorMessage carrying this group alone (what
  // max_message_bytes is checked against; for a converted message, the
  // bound MessageBytesForLimit gives).
  size_t message_bytes = 0;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_RECEIVED_GROUP_H_
