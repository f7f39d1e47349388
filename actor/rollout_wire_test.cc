// RolloutWire against protobuf's own encoder: byte for byte on random groups
// and batches (ids of every varint length, negative ids, fields at their
// defaults), and the messages it does not cover left to protobuf.
#include "actor/rollout_wire.h"

#include <google/protobuf/wire_format_lite.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <random>
#include <string>

#include "actor/transport.h"

namespace rlvr::actor {
namespace {

void FillGroup(std::mt19937_64& rng, rlvr::v1::RolloutGroup* g) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  if (pick(4) != 0) g->set_lease_id(rng() >> pick(64));
  if (pick(4) != 0) g->set_prompt_id("p" + std::to_string(rng() % 100000));
  if (pick(4) != 0) g->set_policy_version(rng() % 1000);
  if (pick(3) != 0) g->set_generation_seconds(0.001 * static_cast<double>(rng() % 100000));
  const int completions = pick(9);
  // Id ranges: one byte each (the fast path), up to 2^31 - 1, or anything
  // including negatives (invalid, but the encoder must still match protobuf).
  const int range = pick(3);
  for (int i = 0; i < completions; ++i) {
    rlvr::v1::Completion* c = g->add_completions();
    const int n = pick(6) == 0 ? 0 : 1 + pick(300);
    for (int t = 0; t < n; ++t) {
      const uint32_t raw = static_cast<uint32_t>(rng());
      const int32_t id = range == 0   ? static_cast<int32_t>(raw % 128)
                         : range == 1 ? static_cast<int32_t>(raw >> (1 + raw % 31))
                                      : static_cast<int32_t>(raw);
      c->add_token_ids(id);
      if (pick(8) != 0) c->add_behaviour_logprobs(-0.001f * static_cast<float>(rng() % 10000));
    }
    if (pick(2) != 0) c->set_reward(pick(2) != 0 ? 1.0f : 0.25f);
    if (pick(2) != 0) c->set_verifier_reason(pick(2) != 0 ? "correct" : "expected 12, got 13");
    c->set_finish_reason(static_cast<rlvr::v1::FinishReason>(pick(3)));
  }
}

std::string Encode(const rlvr::v1::ActorMessage& m) {
  RolloutWire wire;
  if (!wire.Plan(m)) return "<not covered>";
  std::string out(wire.size(), '\0');
  uint8_t* begin = reinterpret_cast<uint8_t*>(out.data());
  EXPECT_EQ(wire.Write(m, begin), begin + out.size());
  return out;
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// The packed-id sizing loop, on both of its builds (AVX2 where the CPU has
// it, and the baseline one), against protobuf's own size of each int32.
TEST(RolloutWireTest, PackedIdSizesMatchProtobufOnEveryPath) {
  using google::protobuf::internal::WireFormatLite;
  const std::vector<int32_t> edges = {0,       1,         127,           128,     (1 << 14) - 1,
                                      1 << 14, 1 << 21,   (1 << 28) - 1, 1 << 28, INT32_MAX,
                                      -1,      INT32_MIN, -128};
  std::mt19937_64 rng(11);
  for (int n : {0, 1, 7, 8, 31, 32, 33, 255, 256, 1000}) {
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) {
      id = (rng() % 4 == 0) ? edges[rng() % edges.size()]
                            : static_cast<int32_t>(rng() >> (33 + rng() % 31));
    }
    size_t expected = 0;
    for (int32_t id : ids) expected += WireFormatLite::Int32Size(id);
    EXPECT_EQ(internal::PackedInt32Bytes(ids.data(), n, /*allow_avx2=*/true), expected) << n;
    EXPECT_EQ(internal::PackedInt32Bytes(ids.data(), n, /*allow_avx2=*/false), expected) << n;
  }
  // Across the boundary of the 2^24-id blocks whose sums are kept in 32 bits
  // (one 32-bit sum of ten-byte ids would overflow past ~4.3e8 ids).
  const int n = (1 << 24) + 5;
  std::vector<int32_t> big(n, -1);
  EXPECT_EQ(internal::PackedInt32Bytes(big.data(), n, true), size_t{10} * n);
  EXPECT_EQ(internal::PackedInt32Bytes(big.data(), n, false), size_t{10} * n);
}

TEST(RolloutWireTest, GroupsMatchProtobufByteForByte) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 300; ++i) {
    rlvr::v1::ActorMessage m;
    FillGroup(rng, m.mutable_group());
    ASSERT_EQ(Encode(m), m.SerializeAsString()) << "case " << i;
  }
}

TEST(RolloutWireTest, BatchesMatchProtobufByteForByte) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100; ++i) {
    rlvr::v1::ActorMessage m;
    rlvr::v1::RolloutBatch* batch = m.mutable_group_batch();  // May stay empty.
    const int groups = static_cast<int>(rng() % 20);
    for (int g = 0; g < groups; ++g) FillGroup(rng, batch->add_groups());
    const std::string encoded = Encode(m);
    ASSERT_EQ(encoded, m.SerializeAsString()) << "case " << i;
    rlvr::v1::ActorMessage parsed;
    ASSERT_TRUE(parsed.ParseFromString(encoded));
    ASSERT_EQ(parsed.group_batch().groups_size(), groups);
  }
}

TEST(RolloutWireTest, OtherMessagesAndUnknownFieldsAreLeftToProtobuf) {
  rlvr::v1::ActorMessage hello;
  hello.mutable_hello()->set_actor_id("a");
  EXPECT_EQ(Encode(hello), "<not covered>");
  rlvr::v1::ActorMessage empty;
  EXPECT_EQ(Encode(empty), "<not covered>");

  // A group carrying a field this build does not know (from a newer peer).
  rlvr::v1::ActorMessage m;
  std::mt19937_64 rng(9);
  FillGroup(rng, m.mutable_group_batch()->add_groups());
  rlvr::v1::RolloutGroup* g = m.mutable_group_batch()->mutable_groups(0);
  g->GetReflection()->MutableUnknownFields(g)->AddVarint(99, 7);
  EXPECT_EQ(Encode(m), "<not covered>");

  // EncodeActorMessage sends the same bytes either way.
  for (const rlvr::v1::ActorMessage* msg : {&hello, &empty, &m}) {
    EXPECT_EQ(Flatten(EncodeActorMessage(*msg)), msg->SerializeAsString());
  }
  rlvr::v1::ActorMessage batch;
  for (int g = 0; g < 4; ++g) FillGroup(rng, batch.mutable_group_batch()->add_groups());
  EXPECT_EQ(Flatten(EncodeActorMessage(batch)), batch.SerializeAsString());
}

}  // namespace
}  // namespace rlvr::actor
