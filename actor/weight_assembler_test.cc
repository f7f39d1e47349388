#include "actor/weight_assembler.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "actor/transport.h"
#include "common/base/checksum.h"

namespace rlvr::actor {
namespace {

std::vector<rlvr::v1::WeightChunk> Chunks(const std::string& blob, uint64_t version, size_t step) {
  std::vector<rlvr::v1::WeightChunk> out;
  const uint32_t blob_crc = Crc32(std::string_view(blob));
  for (size_t off = 0; off < blob.size(); off += step) {
    rlvr::v1::WeightChunk c;
    c.set_version(version);
    c.set_offset(off);
    c.set_total_bytes(blob.size());
    c.set_data(blob.substr(off, step));
    c.set_chunk_crc32(Crc32(std::string_view(c.data())));
    c.set_blob_crc32(blob_crc);
    c.set_last(off + step >= blob.size());
    out.push_back(c);
  }
  return out;
}

std::string TestBlob() {
  std::string blob;
  for (int i = 0; i < 1000; ++i) blob.push_back(static_cast<char>(i * 7));
  return blob;
}

TEST(WeightAssemblerTest, AssemblesInOrderChunks) {
  const std::string blob = TestBlob();
  WeightAssembler a;
  for (const auto& c : Chunks(blob, 3, 128)) {
    EXPECT_FALSE(a.complete());
    ASSERT_TRUE(a.Add(c).ok());
  }
  ASSERT_TRUE(a.complete());
  EXPECT_EQ(a.version(), 3u);
  auto out = a.TakeBlob();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, blob);
  EXPECT_FALSE(a.in_progress());
}

// A publisher that streams before knowing the whole-blob CRC sends it on the
// last chunk only (learner/weight_publisher.h); one that knows it may send it
// on every chunk, and then a change mid-transfer or a wrong final value is
// refused.
TEST(WeightAssemblerTest, BlobCrcOnTheLastChunkOnly) {
  const std::string blob = TestBlob();
  auto chunks = Chunks(blob, 4, 128);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) chunks[i].set_blob_crc32(0);
  WeightAssembler a;
  for (const auto& c : chunks) ASSERT_TRUE(a.Add(c).ok());
  ASSERT_TRUE(a.complete());
  EXPECT_EQ(*a.TakeBlob(), blob);

  auto wrong_last = Chunks(blob, 4, 128);
  for (size_t i = 0; i + 1 < wrong_last.size(); ++i) wrong_last[i].set_blob_crc32(0);
  wrong_last.back().set_blob_crc32(wrong_last.back().blob_crc32() ^ 1);
  WeightAssembler b;
  absl::Status s;
  for (const auto& c : wrong_last) s = b.Add(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(b.complete());

  auto changed = Chunks(blob, 4, 128);
  changed[3].set_blob_crc32(changed[3].blob_crc32() + 1);
  WeightAssembler c;
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(c.Add(changed[i]).ok());
  EXPECT_EQ(c.Add(changed[3]).code(), absl::StatusCode::kInvalidArgument);

  // Announced early (nonzero), then a different value on the last chunk.
  auto early = Chunks(blob, 4, 128);
  early.back().set_blob_crc32(early.back().blob_crc32() ^ 4);
  WeightAssembler d;
  for (size_t i = 0; i + 1 < early.size(); ++i) ASSERT_TRUE(d.Add(early[i]).ok());
  EXPECT_FALSE(d.Add(early.back()).ok());
}

// A recycled buffer is written into by the next transfer that fits (same
// memory), which still yields exactly the new blob; a smaller one is kept
// out of the way.
TEST(WeightAssemblerTest, RecycledBufferIsReusedForTheNextVersion) {
  const std::string first = TestBlob();
  std::string second = first;
  for (char& c : second) c = static_cast<char>(c ^ 0x5a);
  WeightAssembler a;
  for (const auto& c : Chunks(first, 1, 128)) ASSERT_TRUE(a.Add(c).ok());
  absl::StatusOr<std::string> blob = a.TakeBlob();
  ASSERT_TRUE(blob.ok());
  const char* memory = blob->data();
  a.Recycle(*std::move(blob));
  a.Recycle(std::string(10, 'x'));  // Smaller: does not replace the spare.
  for (const auto& c : Chunks(second, 2, 100)) ASSERT_TRUE(a.Add(c).ok());
  blob = a.TakeBlob();
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(*blob, second);
  EXPECT_EQ(blob->data(), memory);
}

TEST(WeightAssemblerTest, ReservedBufferReceivesTheFirstVersion) {
  const std::string blob = TestBlob();
  auto chunks = Chunks(blob, 1, 128);
  WeightAssembler a(/*max_total_bytes=*/uint64_t{64} << 20);
  a.Reserve(uint64_t{128} << 20);  // Above the limit: ignored.
  a.Reserve(1 << 20);
  // A transfer cut off and started over (a broken stream) still uses it.
  ASSERT_TRUE(a.Add(chunks[0]).ok());
  a.Reset();
  for (const auto& c : chunks) ASSERT_TRUE(a.Add(c).ok());
  absl::StatusOr<std::string> out = a.TakeBlob();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, blob);
  // A buffer allocated for this transfer would hold blob.size() bytes.
  EXPECT_GE(out->capacity(), size_t{1} << 20);
}

// Blobs of kStreamBlobBytes and more are copied with non-temporal stores:
// the same bytes arrive, in chunks of odd sizes, into a fresh buffer, a
// recycled larger one (then holding a shorter blob) and after a failed
// transfer that wrote part of the buffer.
TEST(WeightAssemblerTest, LargeBlobsArriveExactlyInFreshRecycledAndReusedBuffers) {
  std::string big(size_t{17} << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  std::string smaller = big.substr(3, (size_t{16} << 20) + 5);
  for (char& c : smaller) c = static_cast<char>(c ^ 0x33);
  WeightAssembler a;
  for (const auto& c : Chunks(big, 1, (1 << 20) - 3)) ASSERT_TRUE(a.Add(c).ok());
  absl::StatusOr<std::string> out = a.TakeBlob();
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(*out == big);
  a.Recycle(*std::move(out));

  auto chunks = Chunks(smaller, 2, 777777);
  ASSERT_TRUE(a.Add(chunks[0]).ok());
  rlvr::v1::WeightChunk bad = chunks[1];
  bad.mutable_data()->at(5) ^= 1;
  EXPECT_EQ(a.Add(bad).code(), absl::StatusCode::kDataLoss);
  a.Reset();
  for (const auto& c : chunks) ASSERT_TRUE(a.Add(c).ok());
  out = a.TakeBlob();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->size(), smaller.size());
  EXPECT_TRUE(*out == smaller);
}

TEST(WeightAssemblerTest, RejectsBadChunkCrc) {
  auto chunks = Chunks(TestBlob(), 1, 128);
  chunks[2].mutable_data()->at(5) ^= 1;
  WeightAssembler a;
  ASSERT_TRUE(a.Add(chunks[0]).ok());
  ASSERT_TRUE(a.Add(chunks[1]).ok());
  absl::Status s = a.Add(chunks[2]);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(a.Add(chunks[3]).ok());  // Stays failed.
  EXPECT_FALSE(a.TakeBlob().ok());
}

TEST(WeightAssemblerTest, RejectsFlippedByteWithRecomputedChunkCrcAtTheEnd) {
  auto chunks = Chunks(TestBlob(), 1, 128);
  chunks[3].mutable_data()->at(0) ^= 1;
  chunks[3].set_chunk_crc32(Crc32(std::string_view(chunks[3].data())));
  WeightAssembler a;
  absl::Status last;
  for (const auto& c : chunks) {
    last = a.Add(c);
    if (!last.ok()) break;
  }
  EXPECT_EQ(last.code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(a.complete());
}

TEST(WeightAssemblerTest, RejectsGapsReorderingAndHeaderChanges) {
  auto chunks = Chunks(TestBlob(), 1, 128);
  {
    WeightAssembler a;
    ASSERT_TRUE(a.Add(chunks[0]).ok());
    EXPECT_EQ(a.Add(chunks[2]).code(), absl::StatusCode::kDataLoss);  // Gap.
  }
  {
    WeightAssembler a;
    EXPECT_FALSE(a.Add(chunks[1]).ok());  // Does not start at 0.
  }
  {
    WeightAssembler a;
    ASSERT_TRUE(a.Add(chunks[0]).ok());
    auto c = chunks[1];
    c.set_version(2);
    EXPECT_EQ(a.Add(c).code(), absl::StatusCode::kInvalidArgument);
  }
  {
    WeightAssembler a;
    auto c = chunks.back();
    ASSERT_TRUE(a.Add(chunks[0]).ok());
    auto early_last = chunks[1];
    early_last.set_last(true);
    EXPECT_FALSE(a.Add(early_last).ok());  // `last` before total_bytes.
  }
  {
    WeightAssembler a(/*max_total_bytes=*/100);
    EXPECT_FALSE(a.Add(chunks[0]).ok());  // Larger than allowed.
  }
}

TEST(WeightAssemblerTest, ResetStartsOver) {
  const std::string blob = TestBlob();
  auto chunks = Chunks(blob, 5, 300);
  WeightAssembler a;
  ASSERT_TRUE(a.Add(chunks[0]).ok());
  EXPECT_TRUE(a.in_progress());
  a.Reset();
  for (const auto& c : chunks) ASSERT_TRUE(a.Add(c).ok());
  EXPECT_EQ(*a.TakeBlob(), blob);
}

// The chunk's wire bytes as gRPC might hand them over: cut into slices at
// `cut` byte intervals (slice boundaries inside the header and the data).
grpc::ByteBuffer Wire(const rlvr::v1::WeightChunk& chunk, size_t cut) {
  const std::string bytes = chunk.SerializeAsString();
  std::vector<grpc::Slice> slices;
  for (size_t off = 0; off < bytes.size(); off += cut) {
    slices.emplace_back(bytes.substr(off, cut));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

TEST(WeightAssemblerTest, AddWireAssemblesChunksSplitAcrossSlices) {
  const std::string blob = TestBlob();
  for (size_t cut : {1, 3, 7, 64, 100000}) {
    WeightAssembler a;
    for (const auto& c : Chunks(blob, 9, 300)) {
      WeightChunkHeader h;
      ASSERT_TRUE(a.AddWire(Wire(c, cut), &h).ok()) << "cut " << cut;
      EXPECT_EQ(h.version, 9u);
      EXPECT_EQ(h.offset, c.offset());
      EXPECT_EQ(h.last, c.last());
    }
    ASSERT_TRUE(a.complete()) << "cut " << cut;
    EXPECT_EQ(*a.TakeBlob(), blob);
  }
}

TEST(WeightAssemblerTest, AddWireChecksCrcsAndRejectsMalformedBytes) {
  const std::string blob = TestBlob();
  {
    auto chunks = Chunks(blob, 1, 128);
    chunks[2].mutable_data()->at(7) ^= 4;  // Chunk CRC no longer matches.
    WeightAssembler a;
    ASSERT_TRUE(a.AddWire(Wire(chunks[0], 5)).ok());
    ASSERT_TRUE(a.AddWire(Wire(chunks[1], 5)).ok());
    EXPECT_EQ(a.AddWire(Wire(chunks[2], 5)).code(), absl::StatusCode::kDataLoss);
  }
  {
    auto chunks = Chunks(blob, 1, 128);
    chunks[4].mutable_data()->at(0) ^= 1;
    chunks[4].set_chunk_crc32(Crc32(std::string_view(chunks[4].data())));
    WeightAssembler a;
    absl::Status last;
    for (const auto& c : chunks) {
      last = a.AddWire(Wire(c, 50));
      if (!last.ok()) break;
    }
    EXPECT_EQ(last.code(), absl::StatusCode::kDataLoss);  // Only the blob CRC catches it.
  }
  {
    // Truncated in the middle of the data field.
    const std::string bytes = Chunks(blob, 1, 128)[0].SerializeAsString();
    grpc::Slice cut(bytes.substr(0, bytes.size() - 40));
    WeightAssembler a;
    EXPECT_EQ(a.AddWire(grpc::ByteBuffer(&cut, 1)).code(), absl::StatusCode::kInvalidArgument);
  }
  {
    grpc::Slice junk(std::string("\x0f\x01\x02"));  // Wire type 7 does not exist.
    WeightAssembler a;
    EXPECT_EQ(a.AddWire(grpc::ByteBuffer(&junk, 1)).code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(TransportTest, PackGroupsRespectsTheLearnersLimitsAndOrder) {
  std::vector<rlvr::v1::RolloutGroup> groups(10);
  for (int i = 0; i < 10; ++i) {
    groups[i].set_lease_id(100 + i);
    groups[i].set_prompt_id(std::string(90, 'p'));
  }
  // An older learner: one group per message.
  auto single = PackGroups(groups, /*batch_messages=*/false, 1 << 20);
  ASSERT_EQ(single.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(single[i].group().lease_id(), 100u + i);
  // No limit worth mentioning: one batch.
  auto one = PackGroups(groups, true, 1 << 20);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].group_batch().groups_size(), 10);
  // A limit of ~3 groups per message: every message within it, order kept.
  const uint64_t limit = 3 * (groups[0].ByteSizeLong() + 2) + 6;
  auto split = PackGroups(groups, true, limit);
  EXPECT_EQ(split.size(), 4u);
  uint64_t next = 100;
  for (const auto& m : split) {
    EXPECT_LE(m.ByteSizeLong(), limit);
    for (const auto& g : m.group_batch().groups()) EXPECT_EQ(g.lease_id(), next++);
  }
  EXPECT_EQ(next, 110u);
  EXPECT_TRUE(PackGroups({}, true, 1 << 20).empty());  // Nothing to send, no message.
  // A group above the limit on its own still goes out, alone.
  auto tiny = PackGroups(groups, true, 10);
  EXPECT_EQ(tiny.size(), 10u);
}

}  // namespace
}  // namespace rlvr::actor
