#include "actor/weight_assembler.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/checksum.h"

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

}  // namespace
}  // namespace rlvr::actor
