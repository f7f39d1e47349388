#include "learner/rollout_decoder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "rlvr/v1/session.pb.h"

namespace rlvr::learner {
namespace {

constexpr size_t kMaxGroups = 64;

// Tag, length and body: the group alone in an ActorMessage.
size_t AloneBytes(const rlvr::v1::RolloutGroup& g) {
  const size_t body = g.ByteSizeLong();
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(body) + body;
}

google::protobuf::UnknownFieldSet* Unknown(google::protobuf::Message* m) {
  return m->GetReflection()->MutableUnknownFields(m);
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

// `sizes`: compare message_bytes too, which only a canonical encoding
// (protobuf's own) gives protobuf's ByteSizeLong; the decoder counts the
// bytes as they came.
void ExpectSame(const ReceivedGroup& got, const ReceivedGroup& want, bool sizes) {
  EXPECT_EQ(got.group.lease_id, want.group.lease_id);
  EXPECT_EQ(got.group.prompt_id, want.group.prompt_id);
  EXPECT_EQ(got.group.policy_version, want.group.policy_version);
  EXPECT_EQ(got.completions, want.completions);
  if (sizes) {
    EXPECT_EQ(got.message_bytes, want.message_bytes);
  }
  ASSERT_EQ(got.group.rollouts.size(), want.group.rollouts.size());
  for (size_t i = 0; i < got.group.rollouts.size(); ++i) {
    const Rollout& a = got.group.rollouts[i];
    const Rollout& b = want.group.rollouts[i];
    EXPECT_EQ(a.tokens, b.tokens) << "completion " << i;
    ASSERT_EQ(a.behaviour_logprobs.size(), b.behaviour_logprobs.size()) << "completion " << i;
    for (size_t t = 0; t < a.behaviour_logprobs.size(); ++t) {
      EXPECT_TRUE(SameBits(a.behaviour_logprobs[t], b.behaviour_logprobs[t])) << i << "," << t;
    }
    EXPECT_TRUE(SameBits(a.reward, b.reward)) << "completion " << i;
  }
}

// `wire` cut into pieces, as gRPC may hand a message over: at random
// points, with empty pieces and one-byte pieces among them.
std::vector<std::string_view> RandomPieces(std::string_view wire, std::mt19937_64& rng) {
  std::vector<std::string_view> pieces;
  size_t at = 0;
  while (at < wire.size()) {
    size_t n = 0;
    switch (rng() % 4) {
      case 0:
        n = 0;
        break;
      case 1:
        n = 1;
        break;
      default:
        n = rng() % (wire.size() - at + 1);
    }
    pieces.push_back(wire.substr(at, n));
    at += n;
  }
  if (rng() % 2 == 0) pieces.push_back(wire.substr(wire.size()));  // A trailing empty piece.
  return pieces;
}

// Decoding `wire` in pieces gives what decoding it whole gave (`outcome`,
// (*whole)[0, count)), for several ways of cutting it.
void ExpectSameInPieces(std::string_view wire, int limit, DecodeOutcome outcome, size_t count,
                        const std::vector<ReceivedGroup>& whole) {
  std::mt19937_64 rng(wire.size());
  std::vector<ReceivedGroup> slots;
  std::string joined;
  for (int cut = 0; cut < 3; ++cut) {
    const std::vector<std::string_view> pieces = RandomPieces(wire, rng);
    size_t n = 0;
    ASSERT_EQ(DecodeRolloutMessage(pieces, {limit, kMaxGroups}, &slots, &n, &joined), outcome)
        << pieces.size() << " pieces";
    if (outcome != DecodeOutcome::kGroup && outcome != DecodeOutcome::kBatch) continue;
    ASSERT_EQ(n, count);
    for (size_t i = 0; i < count; ++i) ExpectSame(slots[i], whole[i], /*sizes=*/true);
  }
}

// The property the decoder promises: where it does not decline, protobuf
// parses the same bytes, to the same kind, and converting what it parsed
// gives what the decoder gave. Returns the outcome. The same bytes in
// pieces decode alike.
DecodeOutcome CheckAgainstProtobuf(const std::string& wire, int limit,
                                   std::vector<ReceivedGroup>* slots) {
  size_t count = 0;
  const DecodeOutcome outcome = DecodeRolloutMessage(wire, {limit, kMaxGroups}, slots, &count);
  ExpectSameInPieces(wire, limit, outcome, count, *slots);
  if (outcome == DecodeOutcome::kDecline) return outcome;
  rlvr::v1::ActorMessage parsed;
  if (outcome == DecodeOutcome::kTooManyGroups) {
    if (parsed.ParseFromString(wire)) {
      EXPECT_GT(parsed.group_batch().groups_size(), static_cast<int>(kMaxGroups));
    }
    return outcome;
  }
  EXPECT_TRUE(parsed.ParseFromString(wire)) << "decoded bytes protobuf rejects";
  std::vector<const rlvr::v1::RolloutGroup*> groups;
  if (outcome == DecodeOutcome::kGroup) {
    EXPECT_EQ(parsed.kind_case(), rlvr::v1::ActorMessage::kGroup);
    groups.push_back(&parsed.group());
  } else {
    EXPECT_EQ(parsed.kind_case(), rlvr::v1::ActorMessage::kGroupBatch);
    for (const auto& g : parsed.group_batch().groups()) groups.push_back(&g);
  }
  EXPECT_EQ(count, groups.size());
  const bool canonical = parsed.SerializeAsString() == wire;
  for (size_t i = 0; i < std::min(count, groups.size()); ++i) {
    ReceivedGroup want;
    ConvertRolloutGroup(*groups[i], limit, AloneBytes(*groups[i]), &want);
    ExpectSame((*slots)[i], want, canonical);
  }
  return outcome;
}

// Random groups covering every field and edge: ids of every varint length
// and negative ones, empty and missing fields, NaN and infinite floats.
rlvr::v1::RolloutGroup RandomGroup(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> small(0, 9);
  rlvr::v1::RolloutGroup g;
  if (small(rng) > 0) g.set_lease_id(rng() >> (rng() % 64));
  if (small(rng) > 0) g.set_prompt_id("prompt-" + std::to_string(rng() % 1000));
  if (small(rng) > 0) g.set_policy_version(rng() % 100);
  if (small(rng) > 5) g.set_generation_seconds(0.25 * small(rng));
  const int completions = small(rng);
  for (int c = 0; c < completions; ++c) {
    rlvr::v1::Completion* comp = g.add_completions();
    const int n = static_cast<int>(rng() % 300);
    const int width = small(rng);  // Mostly one-byte ids, as a small vocabulary gives.
    for (int t = 0; t < n; ++t) {
      int32_t id;
      switch (width) {
        case 7:
          id = static_cast<int32_t>(rng() % 20000);
          break;
        case 8:
          id = static_cast<int32_t>(rng());
          break;  // Any, negative included.
        case 9:
          id = (t % 7 == 0) ? 300 : static_cast<int32_t>(rng() % 128);
          break;
        default:
          id = static_cast<int32_t>(rng() % 128);
      }
      comp->add_token_ids(id);
    }
    const int m = small(rng) == 0 ? n + 1 : n;  // Sometimes a mismatch.
    for (int t = 0; t < m; ++t) {
      float lp = -static_cast<float>(rng() % 1000) / 100.0f;
      if (rng() % 500 == 0) lp = std::numeric_limits<float>::quiet_NaN();
      if (rng() % 500 == 0) lp = -std::numeric_limits<float>::infinity();
      comp->add_behaviour_logprobs(lp);
    }
    if (small(rng) > 1) comp->set_reward(static_cast<float>(rng() % 3) / 2.0f);
    if (small(rng) > 4) comp->set_verifier_reason("expected 12, got 13");
    if (small(rng) > 4) comp->set_finish_reason(rlvr::v1::FINISH_REASON_STOP);
  }
  return g;
}

TEST(RolloutDecoderTest, DecodesWhatProtobufParsesOnRandomMessages) {
  std::mt19937_64 rng(7);
  std::vector<ReceivedGroup> slots;  // Reused across messages, as a session does.
  int decoded = 0;
  for (int i = 0; i < 400; ++i) {
    rlvr::v1::ActorMessage m;
    if (i % 3 == 0) {
      *m.mutable_group() = RandomGroup(rng);
    } else {
      auto* batch = m.mutable_group_batch();
      const int n = static_cast<int>(rng() % 20);
      for (int k = 0; k < n; ++k) *batch->add_groups() = RandomGroup(rng);
    }
    const int limit = static_cast<int>(rng() % 12);
    const DecodeOutcome outcome = CheckAgainstProtobuf(m.SerializeAsString(), limit, &slots);
    EXPECT_EQ(outcome, i % 3 == 0 ? DecodeOutcome::kGroup : DecodeOutcome::kBatch) << i;
    decoded += outcome != DecodeOutcome::kDecline;
  }
  EXPECT_EQ(decoded, 400);
}

TEST(RolloutDecoderTest, DecodesMessagesInPiecesWithoutKeepingViewsOfThem) {
  std::mt19937_64 rng(5);
  rlvr::v1::ActorMessage m;
  for (int k = 0; k < 12; ++k) *m.mutable_group_batch()->add_groups() = RandomGroup(rng);
  const std::string wire = m.SerializeAsString();
  std::vector<ReceivedGroup> whole;
  size_t count = 0;
  ASSERT_EQ(DecodeRolloutMessage(wire, {8, kMaxGroups}, &whole, &count), DecodeOutcome::kBatch);
  ASSERT_EQ(count, 12u);
  // Pieces of every size from 1 byte (every group spans pieces, so the
  // joined buffer is reused group after group) to the whole message.
  for (size_t size : {size_t{1}, size_t{7}, size_t{100}, wire.size() / 3, wire.size()}) {
    std::string copy = wire;
    std::vector<std::string_view> pieces;
    for (size_t at = 0; at < copy.size(); at += size) {
      pieces.push_back(std::string_view(copy).substr(at, size));
    }
    std::vector<ReceivedGroup> slots;
    std::string joined;
    size_t n = 0;
    ASSERT_EQ(DecodeRolloutMessage(pieces, {8, kMaxGroups}, &slots, &n, &joined),
              DecodeOutcome::kBatch)
        << size;
    ASSERT_EQ(n, count);
    // Nothing decoded points into the pieces or the joined buffer.
    std::fill(copy.begin(), copy.end(), '\xff');
    std::fill(joined.begin(), joined.end(), '\xff');
    for (size_t i = 0; i < n; ++i) ExpectSame(slots[i], whole[i], /*sizes=*/true);
  }
  // A batch of too many groups is refused from headers that span pieces.
  rlvr::v1::ActorMessage big;
  for (size_t k = 0; k <= kMaxGroups; ++k) big.mutable_group_batch()->add_groups()->set_lease_id(k);
  const std::string big_wire = big.SerializeAsString();
  std::vector<std::string_view> bytes;
  for (size_t at = 0; at < big_wire.size(); ++at)
    bytes.push_back(std::string_view(big_wire).substr(at, 1));
  std::vector<ReceivedGroup> slots;
  std::string joined;
  size_t n = 0;
  EXPECT_EQ(DecodeRolloutMessage(bytes, {8, kMaxGroups}, &slots, &n, &joined),
            DecodeOutcome::kTooManyGroups);
  // No pieces at all: an empty message, declined as the empty string is.
  EXPECT_EQ(DecodeRolloutMessage(std::span<const std::string_view>(), {8, kMaxGroups}, &slots, &n,
                                 &joined),
            DecodeOutcome::kDecline);
}

TEST(RolloutDecoderTest, KeepsCompletionsUpToTheLimitAndCountsTheRest) {
  rlvr::v1::ActorMessage m;
  rlvr::v1::RolloutGroup* g = m.mutable_group();
  for (int c = 0; c < 10; ++c) {
    g->add_completions()->add_token_ids(c);
    g->mutable_completions(c)->add_behaviour_logprobs(-1.0f);
  }
  std::vector<ReceivedGroup> slots;
  ASSERT_EQ(CheckAgainstProtobuf(m.SerializeAsString(), 4, &slots), DecodeOutcome::kGroup);
  EXPECT_EQ(slots[0].completions, 10);
  ASSERT_EQ(slots[0].group.rollouts.size(), 4u);
  EXPECT_EQ(slots[0].group.rollouts[3].tokens, std::vector<int>{3});
}

TEST(RolloutDecoderTest, RefusesBatchesOfMoreGroupsThanTheLimitBeforeDecoding) {
  rlvr::v1::ActorMessage m;
  for (int i = 0; i < 10; ++i) m.mutable_group_batch()->add_groups()->set_lease_id(i + 1);
  const std::string ten = m.SerializeAsString();
  std::vector<ReceivedGroup> slots;
  size_t count = 0;
  EXPECT_EQ(DecodeRolloutMessage(ten, {2, 10}, &slots, &count), DecodeOutcome::kBatch);
  EXPECT_EQ(count, 10u);
  slots.clear();
  EXPECT_EQ(DecodeRolloutMessage(ten, {2, 9}, &slots, &count), DecodeOutcome::kTooManyGroups);
  EXPECT_TRUE(slots.empty()) << "nothing is decoded for a refused batch";
  // Two group_batch fields merge (protobuf appends their groups): 6 + 6 > 10.
  rlvr::v1::ActorMessage six;
  for (int i = 0; i < 6; ++i) six.mutable_group_batch()->add_groups();
  const std::string twice = six.SerializeAsString() + six.SerializeAsString();
  EXPECT_EQ(DecodeRolloutMessage(twice, {2, 10}, &slots, &count), DecodeOutcome::kTooManyGroups);
  // A million empty groups (2 bytes each) are refused without a slot.
  std::string many = "\x22";
  std::string body;
  for (int i = 0; i < 1000000; ++i) body += std::string("\x0a\x00", 2);
  std::string len;
  for (size_t v = body.size();; v >>= 7) {
    len += static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  many += len + body;
  EXPECT_EQ(DecodeRolloutMessage(many, {2, 64}, &slots, &count), DecodeOutcome::kTooManyGroups);
  EXPECT_TRUE(slots.empty());
  // The limit does not concern a single group.
  rlvr::v1::ActorMessage one;
  one.mutable_group()->set_lease_id(3);
  EXPECT_EQ(DecodeRolloutMessage(one.SerializeAsString(), {2, 0}, &slots, &count),
            DecodeOutcome::kGroup);
}

TEST(RolloutDecoderTest, ReusedSlotsKeepNothingFromEarlierMessages) {
  std::mt19937_64 rng(3);
  rlvr::v1::ActorMessage big;
  for (int k = 0; k < 3; ++k) {
    rlvr::v1::RolloutGroup g = RandomGroup(rng);
    g.set_lease_id(9);
    g.set_policy_version(4);
    g.set_prompt_id("p");
    while (g.completions_size() < 4) g.add_completions()->add_token_ids(5);
    *big.mutable_group_batch()->add_groups() = g;
  }
  rlvr::v1::ActorMessage small;
  small.mutable_group_batch()->add_groups()->add_completions();  // Every field unset.
  std::vector<ReceivedGroup> slots;
  ASSERT_EQ(CheckAgainstProtobuf(big.SerializeAsString(), 8, &slots), DecodeOutcome::kBatch);
  ASSERT_EQ(CheckAgainstProtobuf(small.SerializeAsString(), 8, &slots), DecodeOutcome::kBatch);
  EXPECT_EQ(slots[0].group.lease_id, 0u);
  EXPECT_EQ(slots[0].group.policy_version, 0u);
  EXPECT_EQ(slots[0].group.prompt_id, "");
  ASSERT_EQ(slots[0].group.rollouts.size(), 1u);
  EXPECT_TRUE(slots[0].group.rollouts[0].tokens.empty());
  EXPECT_EQ(slots[0].group.rollouts[0].reward, 0.0);
}

TEST(RolloutDecoderTest, SkipsUnknownFieldsAndCountsThemInTheSize) {
  rlvr::v1::ActorMessage m;
  rlvr::v1::RolloutGroup* g = m.mutable_group_batch()->add_groups();
  g->set_lease_id(5);
  g->set_prompt_id("x");
  rlvr::v1::Completion* c = g->add_completions();
  c->add_token_ids(1);
  c->add_behaviour_logprobs(-0.5f);
  c->set_reward(1.0f);
  // Fields of a newer actor, of every wire type the decoder skips.
  Unknown(c)->AddVarint(17, 3);
  Unknown(c)->AddFixed32(18, 7);
  Unknown(g)->AddFixed64(19, 11);
  Unknown(g)->AddLengthDelimited(20, "newer");
  Unknown(m.mutable_group_batch())->AddVarint(9, 1);
  Unknown(&m)->AddLengthDelimited(30, "meta");
  std::vector<ReceivedGroup> slots;
  ASSERT_EQ(CheckAgainstProtobuf(m.SerializeAsString(), 4, &slots), DecodeOutcome::kBatch);
  EXPECT_EQ(slots[0].group.lease_id, 5u);
  EXPECT_EQ(slots[0].message_bytes, AloneBytes(*g));
}

TEST(RolloutDecoderTest, ConcatenatesPackedRunsAsProtobufDoes) {
  // A completion whose ids come in two packed runs (legal, if unusual).
  const std::string completion = std::string("\x0a\x02\x01\x02", 4) +         // ids 1, 2
                                 std::string("\x0a\x03\xac\x02\x03", 5) +     // ids 300, 3
                                 std::string("\x12\x04\x00\x00\x80\xbf", 6);  // log-prob -1
  const std::string group =
      "\x22" + std::string(1, static_cast<char>(completion.size())) + completion;
  const std::string wire = "\x12" + std::string(1, static_cast<char>(group.size())) + group;
  std::vector<ReceivedGroup> slots;
  ASSERT_EQ(CheckAgainstProtobuf(wire, 4, &slots), DecodeOutcome::kGroup);
  EXPECT_EQ(slots[0].group.rollouts[0].tokens, (std::vector<int>{1, 2, 300, 3}));
}

TEST(RolloutDecoderTest, DeclinesWhatProtobufShouldJudge) {
  std::vector<ReceivedGroup> slots;
  size_t count;
  auto decode = [&](const std::string& wire) {
    return DecodeRolloutMessage(wire, {8, kMaxGroups}, &slots, &count);
  };
  rlvr::v1::ActorMessage hello;
  hello.mutable_hello()->set_actor_id("a");
  EXPECT_EQ(decode(hello.SerializeAsString()), DecodeOutcome::kDecline);
  rlvr::v1::ActorMessage ret;
  ret.mutable_return_leases()->add_lease_ids(3);
  EXPECT_EQ(decode(ret.SerializeAsString()), DecodeOutcome::kDecline);
  EXPECT_EQ(decode(""), DecodeOutcome::kDecline);  // No kind.

  rlvr::v1::ActorMessage m;
  m.mutable_group()->set_prompt_id("p");
  m.mutable_group()->add_completions()->add_token_ids(1);
  const std::string group = m.SerializeAsString();
  EXPECT_EQ(decode(group), DecodeOutcome::kGroup);
  // A kind given twice: protobuf merges the two.
  EXPECT_EQ(decode(group + group), DecodeOutcome::kDecline);
  // Unpacked ids: field 1 with wire type 0 inside the completion.
  EXPECT_EQ(decode(std::string("\x12\x04\x22\x02\x08\x01", 6)), DecodeOutcome::kDecline);
  // Log-probs whose length is no multiple of 4.
  EXPECT_EQ(decode(std::string("\x12\x05\x22\x03\x12\x01\x00", 7)), DecodeOutcome::kDecline);
  // A prompt id that is not ASCII (protobuf checks it is UTF-8).
  EXPECT_EQ(decode(std::string("\x12\x03\x12\x01\xff", 5)), DecodeOutcome::kDecline);
  // A verifier reason that is not ASCII.
  EXPECT_EQ(decode(std::string("\x12\x05\x22\x03\x22\x01\xc3", 7)), DecodeOutcome::kDecline);
  // The deprecated group wire type, an over-long varint, field number 0.
  EXPECT_EQ(decode(std::string("\x12\x02\x0b\x0c", 4)), DecodeOutcome::kDecline);
  EXPECT_EQ(decode(std::string("\x12\x0b\x08") + std::string(10, '\xff')), DecodeOutcome::kDecline);
  EXPECT_EQ(decode(std::string("\x12\x02\x00\x00", 4)), DecodeOutcome::kDecline);
  // A length past the end.
  EXPECT_EQ(decode(std::string("\x12\x09\x22\x01", 4)), DecodeOutcome::kDecline);
  // A length or a tag padded past 5 bytes (protobuf reads neither; found by
  // the fuzz target: this length reads as 0 if all 10 bytes are taken).
  EXPECT_EQ(decode(std::string("\x12\x80\x80\x80\x80\x80\x80\x80\x80\x80\x12", 11)),
            DecodeOutcome::kDecline);
  EXPECT_EQ(decode(std::string("\x12\x07\x88\x80\x80\x80\x80\x00\x01", 9)),
            DecodeOutcome::kDecline);
}

TEST(RolloutDecoderTest, TruncatedAndCorruptedMessagesNeverDisagreeWithProtobuf) {
  std::mt19937_64 rng(11);
  std::vector<ReceivedGroup> slots;
  for (int i = 0; i < 30; ++i) {
    rlvr::v1::ActorMessage m;
    for (int k = 0; k < 3; ++k) *m.mutable_group_batch()->add_groups() = RandomGroup(rng);
    const std::string wire = m.SerializeAsString();
    // Every prefix: decoded only where protobuf agrees.
    for (size_t n = 0; n < wire.size(); n += 1 + wire.size() / 400) {
      CheckAgainstProtobuf(wire.substr(0, n), 6, &slots);
    }
    // Random byte changes.
    for (int k = 0; k < 200 && !wire.empty(); ++k) {
      std::string bad = wire;
      for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
        bad[rng() % bad.size()] = static_cast<char>(rng());
      }
      CheckAgainstProtobuf(bad, 6, &slots);
    }
  }
}

}  // namespace
}  // namespace rlvr::learner
