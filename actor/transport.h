// The actor's use of the wire, shared with bench/learner_bench (which must
// measure what the actor really does) and free of LibTorch:
//  - PackGroups: the finished groups of one generation batch as few
//    ActorMessages as the learner's limits allow (RolloutBatch when the
//    learner's Welcome says batch_messages, else one RolloutGroup each);
//  - OpenSession / EncodeActorMessage: the Session stream with outgoing
//    messages encoded by the caller into one slice: rollout messages by
//    RolloutWire (actor/rollout_wire.h), others by protobuf, sized once
//    (gRPC's own encoder sizes a large message twice, and walking every
//    packed token varint was the largest user-space cost of sending groups);
//  - SetWeightChannelArgs: HTTP/2 window and frame sizes for the weight
//    channel so that 4 MiB chunks are not throttled by flow control (the
//    stream itself is actor/weight_stream.h).
//
// Thread safety: pure functions.
#ifndef RLVR_ACTOR_TRANSPORT_H_
#define RLVR_ACTOR_TRANSPORT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "rlvr/v1/session.pb.h"

namespace rlvr::actor {

// Packs `groups` (in order) into ActorMessages. With `batch_messages`, groups
// share RolloutBatch messages of at most `max_message_bytes` encoded bytes
// each (0 = no limit); a group too large on its own still travels alone (the
// learner rejects it OVERSIZE). Without, one RolloutGroup per message.
std::vector<rlvr::v1::ActorMessage> PackGroups(std::vector<rlvr::v1::RolloutGroup> groups,
                                               bool batch_messages, uint64_t max_message_bytes);

// The actor's side of SessionService.Session: writes pre-encoded
// ActorMessages (EncodeActorMessage), reads LearnerMessages.
using SessionStream = grpc::ClientReaderWriter<grpc::ByteBuffer, rlvr::v1::LearnerMessage>;

// Starts SessionService.Session on `channel`. `context` must outlive the stream.
std::unique_ptr<SessionStream> OpenSession(grpc::ChannelInterface* channel,
                                           grpc::ClientContext* context);

// `message` encoded into one slice of exactly its size; the bytes are what
// the generated stub would send.
grpc::ByteBuffer EncodeActorMessage(const rlvr::v1::ActorMessage& message);

// Sets the weight channel's HTTP/2 stream receive window (16 MiB: a few
// chunks in flight) and the largest frame the peer may send (16 MiB - 1, so a
// 4 MiB chunk is not cut into 16 KiB frames), and a receive limit that fits
// a chunk.
void SetWeightChannelArgs(grpc::ChannelArguments* args);

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_TRANSPORT_H_
