// Fuzz target: the learner's rollout wire decoder against protobuf.
//
// For any bytes, DecodeRolloutMessage either declines (protobuf then judges
// them) or gives exactly what parsing the bytes with protobuf and
// converting the groups gives: the same kind, the same number of groups,
// and per group the same lease, prompt id, version, completion count and
// rollouts (floats compared bit for bit). The encoded size must match
// protobuf's where the bytes are protobuf's own encoding. A batch refused as
// too large must be one, where protobuf parses it. The output slots
// are reused across inputs, as a session reuses them across messages. The
// same bytes cut into pieces decode to the same result.
#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "learner/rollout_decoder.h"
#include "rlvr/v1/session.pb.h"

namespace {

using rlvr::learner::DecodeOutcome;
using rlvr::learner::ReceivedGroup;

[[noreturn]] void Fail(const char* what, size_t group) {
  std::fprintf(stderr, "rollout_decoder disagrees with protobuf: %s (group %zu)\n", what, group);
  std::abort();
}

// Tag, length and body: the group alone in an ActorMessage.
size_t AloneBytes(const rlvr::v1::RolloutGroup& g) {
  const size_t body = g.ByteSizeLong();
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(body) + body;
}

void Compare(const ReceivedGroup& got, const ReceivedGroup& want, bool sizes, size_t i) {
  const auto& a = got.group;
  const auto& b = want.group;
  if (a.lease_id != b.lease_id) Fail("lease_id", i);
  if (a.prompt_id != b.prompt_id) Fail("prompt_id", i);
  if (a.policy_version != b.policy_version) Fail("policy_version", i);
  if (got.completions != want.completions) Fail("completion count", i);
  if (sizes && got.message_bytes != want.message_bytes) Fail("message_bytes", i);
  if (a.rollouts.size() != b.rollouts.size()) Fail("rollouts kept", i);
  for (size_t r = 0; r < a.rollouts.size(); ++r) {
    const auto& x = a.rollouts[r];
    const auto& y = b.rollouts[r];
    if (x.tokens != y.tokens) Fail("token ids", i);
    if (x.behaviour_logprobs.size() != y.behaviour_logprobs.size() ||
        (!x.behaviour_logprobs.empty() &&
         std::memcmp(x.behaviour_logprobs.data(), y.behaviour_logprobs.data(),
                     x.behaviour_logprobs.size() * sizeof(float)) != 0)) {
      Fail("log-probs", i);
    }
    if (std::memcmp(&x.reward, &y.reward, sizeof(double)) != 0) Fail("reward", i);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto* slots = new std::vector<ReceivedGroup>();
  // The limit varies with the input so that both kept and counted-only
  // completions are exercised.
  const int limit = size == 0 ? 0 : data[size - 1] % 6;
  const std::string_view wire(reinterpret_cast<const char*>(data), size);
  size_t count = 0;
  constexpr size_t kMaxGroups = 64;
  const DecodeOutcome outcome =
      rlvr::learner::DecodeRolloutMessage(wire, {limit, kMaxGroups}, slots, &count);
  // The same bytes in pieces (as gRPC hands over a large message), cut
  // where the input's own bytes say (pieces of 0 to 16 bytes), decode alike.
  {
    static auto* piece_slots = new std::vector<ReceivedGroup>();
    static auto* joined = new std::string();
    std::vector<std::string_view> pieces;
    for (size_t at = 0, i = 0; at < size; ++i) {
      // Empty pieces only in the first pass over the input: the cut ends.
      const size_t n =
          std::min<size_t>(std::max<size_t>(data[i % size] % 17, i >= size), size - at);
      pieces.push_back(wire.substr(at, n));
      at += n;
    }
    size_t piece_count = 0;
    const DecodeOutcome in_pieces = rlvr::learner::DecodeRolloutMessage(
        pieces, {limit, kMaxGroups}, piece_slots, &piece_count, joined);
    if (in_pieces != outcome) Fail("outcome in pieces", 0);
    if (outcome == DecodeOutcome::kGroup || outcome == DecodeOutcome::kBatch) {
      if (piece_count != count) Fail("group count in pieces", 0);
      for (size_t i = 0; i < count; ++i) Compare((*piece_slots)[i], (*slots)[i], true, i);
    }
  }
  if (outcome == DecodeOutcome::kDecline) return 0;
  rlvr::v1::ActorMessage parsed;
  const bool parses = parsed.ParseFromArray(data, static_cast<int>(size));
  if (outcome == DecodeOutcome::kTooManyGroups) {
    // Decided from field headers alone; where protobuf parses the message,
    // it must agree that the batch is that large.
    if (parses && parsed.group_batch().groups_size() <= static_cast<int>(kMaxGroups)) {
      Fail("too many groups, but protobuf parses fewer", 0);
    }
    return 0;
  }
  if (!parses) Fail("protobuf rejects", 0);
  std::vector<const rlvr::v1::RolloutGroup*> groups;
  if (outcome == DecodeOutcome::kGroup) {
    if (parsed.kind_case() != rlvr::v1::ActorMessage::kGroup) Fail("kind", 0);
    groups.push_back(&parsed.group());
  } else {
    if (parsed.kind_case() != rlvr::v1::ActorMessage::kGroupBatch) Fail("kind", 0);
    for (const auto& g : parsed.group_batch().groups()) groups.push_back(&g);
  }
  if (count != groups.size()) Fail("group count", 0);
  const bool canonical = parsed.SerializeAsString() == wire;
  for (size_t i = 0; i < count; ++i) {
    ReceivedGroup want;
    rlvr::learner::ConvertRolloutGroup(*groups[i], limit, AloneBytes(*groups[i]), &want);
    Compare((*slots)[i], want, canonical, i);
  }
  return 0;
}
