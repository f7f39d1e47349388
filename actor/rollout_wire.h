// A direct encoder for the actor's rollout messages (an ActorMessage holding
// a RolloutGroup or a RolloutBatch): the same protobuf wire bytes the
// generated code writes, field for field, in two passes instead of three.
//
// Why: generated code sizes a message (one walk over every packed token id
// to size its varint), then writes it (a second walk, one varint at a time);
// gRPC's encoder sizes large messages twice more. Here the size pass counts
// varint lengths with a branch-free loop the compiler vectorises, and ids
// below 128 (one byte each: every id of a small vocabulary) are written by a
// narrowing copy. Log-probs are copied as they lie in memory (little-endian
// floats, what the packed fixed32 encoding is).
//
// Messages this encoder does not cover (Hello, ReturnLeases, anything with
// unknown fields) are reported as such; the caller uses protobuf for them.
//
// Thread safety: a RolloutWire is used by one thread at a time; the message
// must not change between Plan and Write.
#ifndef RLVR_ACTOR_ROLLOUT_WIRE_H_
#define RLVR_ACTOR_ROLLOUT_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rlvr/v1/session.pb.h"

namespace rlvr::actor {

class RolloutWire {
 public:
  // Sizes `message`; false if it is not a RolloutGroup or RolloutBatch
  // message this encoder covers (then Write must not be called).
  bool Plan(const rlvr::v1::ActorMessage& message);

  // Encoded size of the planned message, bytes.
  size_t size() const { return size_; }

  // Writes the planned message into out[0, size()); returns out + size().
  uint8_t* Write(const rlvr::v1::ActorMessage& message, uint8_t* out) const;

 private:
  // Body sizes in the order Write meets them: per group its body, then per
  // completion its body and its token ids' packed bytes.
  std::vector<uint32_t> sizes_;
  size_t size_ = 0;
  size_t batch_body_ = 0;  // RolloutBatch body bytes (batch messages only).
};

namespace internal {
// Encoded bytes of the packed int32 varints ids[0, n), as RolloutWire sizes
// them; `allow_avx2` false forces the baseline build of the loop (tests
// hold both paths equal to protobuf's sizes).
size_t PackedInt32Bytes(const int32_t* ids, int n, bool allow_avx2);
}  // namespace internal

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_ROLLOUT_WIRE_H_
