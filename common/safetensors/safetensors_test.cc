#include "common/safetensors/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace rlvr::safetensors {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// A file image: 8-byte length, `header` verbatim, `data_bytes` zero bytes.
std::string Image(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  out += header;
  out.append(data_bytes, '\0');
  return out;
}

absl::Status Parse(const std::string& image) {
  return ParseHeader(image, image.size(), "f.safetensors").status();
}

TEST(SafetensorsTest, ParsesAValidHeader) {
  const std::string image = Image(
      R"({"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[8,20]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}})",
      20);
  auto h = ParseHeader(image, image.size(), "f");
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->tensors.size(), 2u);
  EXPECT_EQ(h->tensors[0].name, "a");  // Ordered by offset.
  EXPECT_EQ(h->tensors[1].dtype, Dtype::kBF16);
  EXPECT_EQ(h->tensors[1].numel(), 6);
  EXPECT_EQ(h->metadata.at("format"), "pt");
}

TEST(SafetensorsTest, EveryMalformedHeaderIsAnErrorNamingFileAndTensor) {
  struct Case {
    std::string image;
    std::string want;
  };
  const std::string ok_a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::string lying_length = Image("{" + ok_a + "}", 8);
  lying_length[0] = static_cast<char>(0xff);
  const std::vector<Case> cases = {
      {"", "shorter than the 8-byte"},
      {lying_length, "exceeds the file"},
      {Image("{" + ok_a, 8), "not valid JSON"},
      {Image("[1,2]", 0), "does not start with '{'"},
      {Image(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8),
       "tensor 'a': unsupported dtype I64"},
      {Image(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,8]}})", 8), "unknown dtype"},
      {Image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "tensor 'a': data_offsets [0, 8] span 8 bytes but F32 x [3] needs 12"},
      {Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
       "tensor 'a': data_offsets [0, 8] beyond the data region"},
      {Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "end before begin"},
      {Image(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "not a non-negative integer"},
      {Image(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8),
       "not a non-negative integer"},
      {Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8), "two non-negative"},
      {Image(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "tensor 'a': missing key 'data_offsets'"},
      {Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8),
       "unknown key 'x'"},
      {Image("{" + ok_a + "," + ok_a + "}", 8), "duplicate key 'a'"},
      {Image("{" + ok_a + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
       "tensor 'b': data_offsets [4, 8] overlap tensor 'a'"},
      {Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "leave a gap"},
      {Image("{" + ok_a + "}", 12), "cover 8 bytes of the 12-byte data region"},
      {Image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "shape too large"},
      {Image(R"({"__metadata__":{"k":1}})", 0), "'__metadata__' key 'k' is not a string"},
      {Image(R"({"a":[[[[[[[[[[1]]]]]]]]]]})", 0), "nested deeper"},
  };
  for (const Case& c : cases) {
    absl::Status s = Parse(c.image);
    EXPECT_FALSE(s.ok()) << c.want;
    EXPECT_THAT(s.message(), AllOf(HasSubstr("f.safetensors"), HasSubstr(c.want)));
  }
}

TEST(SafetensorsTest, WritesAndReadsBackThroughTheMapping) {
  const std::string dir = testing::TempDir() + "/st_roundtrip";
  std::filesystem::remove_all(dir);
  const std::vector<float> a = {1.5f, -2.0f, 3.25f};
  const std::vector<uint16_t> b = {0x3f80, 0xc000};  // bf16 1.0, -2.0
  std::vector<TensorSpec> specs = {{"w.a", Dtype::kF32, {3}}, {"w.b", Dtype::kBF16, {1, 2}}};
  auto bytes = [&](size_t i) -> absl::StatusOr<absl::string_view> {
    if (i == 0) return absl::string_view(reinterpret_cast<const char*>(a.data()), 12);
    return absl::string_view(reinterpret_cast<const char*>(b.data()), 4);
  };
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", specs, bytes, {{"format", "pt"}}).ok());
  auto ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  ASSERT_EQ(ckpt->tensors().size(), 2u);
  const Checkpoint::Entry* e = ckpt->Find("w.a");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->file->header().header_bytes % 8, 0u);
  absl::string_view data = e->file->Data(*e->info);
  ASSERT_EQ(data.size(), 12u);
  EXPECT_EQ(std::memcmp(data.data(), a.data(), 12), 0);
  e->file->Release(*e->info);
  EXPECT_EQ(std::memcmp(e->file->Data(*e->info).data(), a.data(), 12), 0);
  EXPECT_EQ(e->file->header().metadata.at("format"), "pt");
  EXPECT_EQ(ckpt->Find("w.b")->info->shape, (std::vector<int64_t>{1, 2}));

  // A supplier that returns the wrong size fails and leaves no file behind.
  auto short_bytes = [&](size_t) -> absl::StatusOr<absl::string_view> {
    return absl::string_view("xx");
  };
  absl::Status s = WriteSafetensors(dir + "/bad.safetensors", specs, short_bytes, {});
  EXPECT_THAT(s.message(), HasSubstr("tensor 'w.a' supplied 2 bytes"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/bad.safetensors"));
  EXPECT_FALSE(WriteSafetensors(dir + "/dup.safetensors", {specs[0], specs[0]}, bytes, {}).ok());
}

TEST(SafetensorsTest, ShardedIndexIsCheckedBothWays) {
  const std::string dir = testing::TempDir() + "/st_sharded";
  std::filesystem::remove_all(dir);
  const std::vector<float> v = {1, 2};
  auto bytes = [&](size_t) -> absl::StatusOr<absl::string_view> {
    return absl::string_view(reinterpret_cast<const char*>(v.data()), 8);
  };
  ASSERT_TRUE(WriteSafetensors(dir + "/s1.safetensors", {{"x", Dtype::kF32, {2}}}, bytes, {}).ok());
  ASSERT_TRUE(WriteSafetensors(dir + "/s2.safetensors", {{"y", Dtype::kF32, {2}}}, bytes, {}).ok());
  auto write_index = [&](const std::map<std::string, std::string>& map) {
    ASSERT_TRUE(
        WriteTextFileAtomic(dir + "/model.safetensors.index.json", IndexJson(map, 16)).ok());
  };
  write_index({{"x", "s1.safetensors"}, {"y", "s2.safetensors"}});
  auto ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->tensors().size(), 2u);
  EXPECT_EQ(ckpt->files().size(), 2u);

  write_index({{"x", "s1.safetensors"}, {"y", "s1.safetensors"}});
  EXPECT_THAT(Checkpoint::Open(dir).status().message(),
              AllOf(HasSubstr("s1.safetensors"), HasSubstr("tensor 'y'")));
  // A shard the index does not name is not part of the checkpoint.
  write_index({{"x", "s1.safetensors"}});
  ASSERT_TRUE(Checkpoint::Open(dir).ok());
  EXPECT_EQ(Checkpoint::Open(dir)->tensors().size(), 1u);
  write_index({{"x", "s1.safetensors"}, {"y", "../s2.safetensors"}});
  EXPECT_THAT(Checkpoint::Open(dir).status().message(), HasSubstr("not a file name"));
  write_index({{"x", "s1.safetensors"}, {"y", "missing.safetensors"}});
  EXPECT_THAT(Checkpoint::Open(dir).status().message(), HasSubstr("missing.safetensors"));
  EXPECT_EQ(Checkpoint::Open(dir + "/nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(SafetensorsTest, TruncatedFileIsDataLoss) {
  const std::string dir = testing::TempDir() + "/st_trunc";
  std::filesystem::remove_all(dir);
  const std::vector<float> v(64, 1.0f);
  auto bytes = [&](size_t) -> absl::StatusOr<absl::string_view> {
    return absl::string_view(reinterpret_cast<const char*>(v.data()), 256);
  };
  const std::string path = dir + "/model.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, {{"x", Dtype::kF32, {64}}}, bytes, {}).ok());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  auto f = SafetensorsFile::Open(path);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(f.status().message(), AllOf(HasSubstr(path), HasSubstr("tensor 'x'")));
}

}  // namespace
}  // namespace rlvr::safetensors
