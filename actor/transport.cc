#include "actor/transport.h"

#include <glog/logging.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/sync_stream.h>

#include <string>
#include <utility>

#include "actor/rollout_wire.h"
#include "rlvr/v1/session.grpc.pb.h"

namespace rlvr::actor {
namespace {

// Encoded size of `group` as a field of a RolloutBatch (tag + length + body).
uint64_t FieldBytes(const rlvr::v1::RolloutGroup& group) {
  const uint64_t body = group.ByteSizeLong();
  uint64_t len_bytes = 1;
  for (uint64_t v = body; v >= 0x80; v >>= 7) ++len_bytes;
  return 1 + len_bytes + body;
}

// An upper bound of FieldBytes that does not walk every varint: fields at
// their largest (varint 10 bytes, tag 1, length 5, float 4), 64 bytes for
// the fixed fields of a group and of a completion. Unknown fields are never
// set by the actor. Same bound as the learner's MessageBytesForLimit.
uint64_t FieldBytesBound(const rlvr::v1::RolloutGroup& group) {
  uint64_t bound = 64 + group.prompt_id().size();
  for (const rlvr::v1::Completion& c : group.completions()) {
    bound += 64 + 10 * static_cast<uint64_t>(c.token_ids_size()) +
             4 * static_cast<uint64_t>(c.behaviour_logprobs_size()) + c.verifier_reason().size();
  }
  return bound;
}

}  // namespace

std::vector<rlvr::v1::ActorMessage> PackGroups(std::vector<rlvr::v1::RolloutGroup> groups,
                                               bool batch_messages, uint64_t max_message_bytes) {
  std::vector<rlvr::v1::ActorMessage> out;
  if (groups.empty()) return out;
  if (!batch_messages) {
    out.reserve(groups.size());
    for (rlvr::v1::RolloutGroup& g : groups) {
      *out.emplace_back().mutable_group() = std::move(g);
    }
    return out;
  }
  // The RolloutBatch sits in ActorMessage field 4: its own tag and length
  // cost at most 6 bytes on top of the groups.
  constexpr uint64_t kFraming = 6;
  // Usually the whole batch fits by the cheap bound: one message, no sizing.
  uint64_t bound = kFraming;
  for (const rlvr::v1::RolloutGroup& g : groups) bound += FieldBytesBound(g);
  if (max_message_bytes == 0 || bound <= max_message_bytes) {
    rlvr::v1::ActorMessage& m = out.emplace_back();
    auto* batch = m.mutable_group_batch()->mutable_groups();
    batch->Reserve(static_cast<int>(groups.size()));
    for (rlvr::v1::RolloutGroup& g : groups) *batch->Add() = std::move(g);
    return out;
  }
  uint64_t size = 0;
  for (rlvr::v1::RolloutGroup& g : groups) {
    const uint64_t bytes = FieldBytes(g);
    if (out.empty() ||
        (max_message_bytes > 0 && size + bytes + kFraming > max_message_bytes && size > 0)) {
      out.emplace_back().mutable_group_batch();
      size = 0;
    }
    *out.back().mutable_group_batch()->add_groups() = std::move(g);
    size += bytes;
  }
  return out;
}

std::unique_ptr<SessionStream> OpenSession(grpc::ChannelInterface* channel,
                                           grpc::ClientContext* context) {
  static const std::string* const kMethod = new std::string(
      "/" + std::string(rlvr::v1::SessionService::service_full_name()) + "/Session");
  const grpc::internal::RpcMethod method(kMethod->c_str(),
                                         grpc::internal::RpcMethod::BIDI_STREAMING);
  return std::unique_ptr<SessionStream>(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, rlvr::v1::LearnerMessage>::Create(
          channel, method, context));
}

grpc::ByteBuffer EncodeActorMessage(const rlvr::v1::ActorMessage& message) {
  thread_local RolloutWire wire;
  const bool direct = wire.Plan(message);
  // Protobuf's way sizes the message once here (the one walk over the varints).
  grpc::Slice slice(direct ? wire.size() : message.ByteSizeLong());
  auto* begin = const_cast<uint8_t*>(slice.begin());
  uint8_t* end =
      direct ? wire.Write(message, begin) : message.SerializeWithCachedSizesToArray(begin);
  CHECK_EQ(end, slice.end()) << "ActorMessage changed while being encoded";
  return grpc::ByteBuffer(&slice, 1);
}

void SetWeightChannelArgs(grpc::ChannelArguments* args) {
  args->SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  args->SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1);
  args->SetMaxReceiveMessageSize(64 << 20);
}

}  // namespace rlvr::actor
