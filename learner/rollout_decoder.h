// Decodes the rollout messages an actor sends (ActorMessage.group and
// ActorMessage.group_batch) from their wire bytes straight into the
// trainer's Group, without building a protobuf message first.
//
// Parsing a RolloutBatch with protobuf and then copying every group into a
// Group was most of the learner's CPU time per accepted group. The decoder
// reads each field once, into Group memory the learner recycles, and
// widens runs of one-byte token ids eight at a time.
//
// It reads only the encoding protobuf itself writes (and the actor's
// RolloutWire): every field of the known types, any order, repeated packed
// runs concatenated, unknown fields skipped. Anything else (a kind field
// given twice, an unpacked repeated field, a string that is not ASCII, a
// group wire type, a truncated or malformed message) makes it decline, and
// the caller parses the message with protobuf, which is the judge of what
// is well formed. So for every input on which it does not decline it gives
// what protobuf parsing and converting would (rollout_decoder_test checks
// this on random and mutated messages; the rollout_decoder fuzz target
// keeps checking it).
//
// Pure and torch-free; one decoder per thread (it keeps no state itself,
// but the output vector is the caller's and is reused across calls).
#ifndef RLVR_LEARNER_ROLLOUT_DECODER_H_
#define RLVR_LEARNER_ROLLOUT_DECODER_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "learner/received_group.h"
#include "rlvr/v1/rollout.pb.h"

namespace rlvr::learner {

enum class DecodeOutcome {
  kGroup,          // ActorMessage.group: its one group is in (*out)[0].
  kBatch,          // ActorMessage.group_batch: its groups are in `out`.
  kDecline,        // Anything else: parse the message with protobuf.
  kTooManyGroups,  // A group_batch of more than max_groups groups.
};

struct DecodeLimits {
  // Completions kept per group (>= 0); more are counted, not stored.
  int max_completions = 0;
  // Groups one message may carry: a session answers at most as many leases
  // as it holds. A batch of more is refused before anything is decoded or
  // parsed (a message of empty groups would otherwise cost ~100 bytes of
  // memory per 2 bytes received).
  size_t max_groups = 0;
};

// Decodes `wire` (one whole ActorMessage). On kGroup and kBatch,
// (*out)[0, *count) hold the message's groups in order; slots are reused,
// so out->size() may exceed *count. kTooManyGroups is decided first, from
// the batch's field headers alone (even if the message is malformed past
// them). On kDecline and kTooManyGroups the contents of `out` and `*count`
// are unspecified.
DecodeOutcome DecodeRolloutMessage(std::string_view wire, const DecodeLimits& limits,
                                   std::vector<ReceivedGroup>* out, size_t* count);

// The same for a message held in pieces (gRPC's slices of it, in order;
// empty pieces allowed), read in place: the result is exactly what
// decoding the pieces' concatenation gives, without that copy. A group
// whose bytes are spread over more than one piece is copied into *joined
// (a buffer the caller reuses across calls; not touched for a single
// piece) and decoded from there; nothing in `out` points into the pieces
// or *joined.
DecodeOutcome DecodeRolloutMessage(std::span<const std::string_view> pieces,
                                   const DecodeLimits& limits, std::vector<ReceivedGroup>* out,
                                   size_t* count, std::string* joined);

// The same conversion from a parsed message, for groups that arrive as
// protobuf (the fallback path and direct callers): what decoding its
// encoding would give.
void ConvertRolloutGroup(const rlvr::v1::RolloutGroup& group, int max_completions,
                         size_t message_bytes, ReceivedGroup* out);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_ROLLOUT_DECODER_H_
