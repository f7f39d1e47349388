#include "learner/trainer/checkpointer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/base/checksum.h"

namespace rlvr::learner {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / absl::StrCat("rlvr_ckpt_", name, "_", ::getpid());
  fs::remove_all(dir);
  return dir.string();
}

CheckpointData Make(uint64_t step) {
  CheckpointData d;
  d.step = step;
  d.version = step + 100;
  d.parts["model"] = std::string(1000 + step, static_cast<char>('a' + step % 26));
  d.parts["ingest"] = absl::StrCat("cursor=", step);
  d.parts["empty"] = "";
  return d;
}

std::unique_ptr<Checkpointer> MakeCheckpointer(const std::string& dir, int keep) {
  auto c = Checkpointer::Create({.dir = dir, .keep = keep});
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

TEST(Checkpointer, RoundTripAndEmptyDir) {
  auto ckpt = MakeCheckpointer(FreshDir("roundtrip"), 3);
  auto none = ckpt->LoadLatest();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(ckpt->Save(Make(4)).ok());
  auto got = ckpt->LoadLatest();
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->step, 4u);
  EXPECT_EQ((*got)->version, 104u);
  EXPECT_EQ((*got)->parts, Make(4).parts);
}

// A checkpoint written before the manifest was a protobuf (format 1, a
// line-based text file) still resumes; the current MANIFEST reads as
// protobuf text with its end line.
TEST(Checkpointer, ReadsFormatOneManifests) {
  const std::string dir = FreshDir("format1");
  auto ckpt = MakeCheckpointer(dir, 3);
  ASSERT_TRUE(ckpt->Save(Make(6)).ok());
  const fs::path path = fs::path(dir) / "ckpt-6";
  std::ifstream in(path / "MANIFEST");
  const std::string current((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(current.find("step: 6"), std::string::npos) << current;
  EXPECT_NE(current.find("parts {"), std::string::npos) << current;
  EXPECT_EQ(current.rfind("# end ", current.size() - 15), current.size() - 15) << current;
  // The format-1 manifest of the same parts, as the old writer made it.
  std::string old = "rlvr-checkpoint 1\nstep 6\nversion 106\n";
  for (const auto& [name, bytes] : Make(6).parts) {
    char crc[9];
    std::snprintf(crc, sizeof(crc), "%08x", Crc32(bytes));
    absl::StrAppend(&old, "part ", name, " ", bytes.size(), " ", crc, "\n");
  }
  char end[9];
  std::snprintf(end, sizeof(end), "%08x", Crc32(old));
  absl::StrAppend(&old, "end ", end, "\n");
  std::ofstream(path / "MANIFEST", std::ios::trunc) << old;
  auto got = Checkpointer::Read(path.string());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->step, 6u);
  EXPECT_EQ(got->version, 106u);
  EXPECT_EQ(got->parts, Make(6).parts);
  // A format-1 manifest with a bad line is refused like before.
  std::ofstream(path / "MANIFEST", std::ios::trunc) << "rlvr-checkpoint 1\nstep x\nend 0\n";
  EXPECT_FALSE(Checkpointer::Read(path.string()).ok());
}

TEST(Checkpointer, KeepsLastK) {
  auto ckpt = MakeCheckpointer(FreshDir("prune"), 2);
  for (uint64_t s : {1, 2, 3, 5, 8}) ASSERT_TRUE(ckpt->Save(Make(s)).ok());
  EXPECT_EQ(ckpt->ListSteps(), (std::vector<uint64_t>{5, 8}));
  // Saving an existing step replaces it.
  CheckpointData again = Make(8);
  again.parts["ingest"] = "replaced";
  ASSERT_TRUE(ckpt->Save(again).ok());
  EXPECT_EQ(ckpt->ListSteps(), (std::vector<uint64_t>{5, 8}));
  EXPECT_EQ((*ckpt->LoadLatest())->parts["ingest"], "replaced");
  // No temp directories left behind.
  for (const auto& e : fs::directory_iterator(ckpt->dir())) {
    EXPECT_EQ(e.path().filename().string().rfind(".tmp", 0), std::string::npos) << e.path();
  }
}

// Each way the newest checkpoint can be damaged: it is skipped, the previous
// one is returned.
TEST(Checkpointer, SkipsCorruptOrPartialLatest) {
  struct Damage {
    std::string name;
    std::function<void(const fs::path&)> apply;
  };
  std::vector<Damage> damages = {
      {"flipped_byte",
       [](const fs::path& p) {
         std::fstream f(p / "model.bin", std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(10);
         f.put('#');
       }},
      {"truncated_part", [](const fs::path& p) { fs::resize_file(p / "model.bin", 5); }},
      {"missing_part", [](const fs::path& p) { fs::remove(p / "ingest.bin"); }},
      {"missing_manifest", [](const fs::path& p) { fs::remove(p / "MANIFEST"); }},
      {"edited_manifest",
       [](const fs::path& p) {
         std::fstream f(p / "MANIFEST", std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(24);
         f.put('9');
       }},
      {"empty_dir",
       [](const fs::path& p) {
         fs::remove_all(p);
         fs::create_directory(p);
       }},
  };
  for (const auto& damage : damages) {
    SCOPED_TRACE(damage.name);
    auto ckpt = MakeCheckpointer(FreshDir(damage.name), 3);
    ASSERT_TRUE(ckpt->Save(Make(1)).ok());
    ASSERT_TRUE(ckpt->Save(Make(2)).ok());
    damage.apply(ckpt->PathFor(2));
    EXPECT_FALSE(Checkpointer::Read(ckpt->PathFor(2)).ok());
    auto got = ckpt->LoadLatest();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ((*got)->step, 1u);
    EXPECT_EQ((*got)->parts, Make(1).parts);
  }
}

TEST(Checkpointer, IgnoresLeftoverTempDirsAndRejectsBadNames) {
  const std::string dir = FreshDir("leftover");
  auto ckpt = MakeCheckpointer(dir, 3);
  ASSERT_TRUE(ckpt->Save(Make(3)).ok());
  fs::create_directory(fs::path(dir) / ".tmp-ckpt-9-1-0");
  std::ofstream(fs::path(dir) / ".tmp-ckpt-9-1-0" / "model.bin") << "half";
  auto got = ckpt->LoadLatest();
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->step, 3u);
  ASSERT_TRUE(ckpt->Save(Make(4)).ok());
  EXPECT_FALSE(fs::exists(fs::path(dir) / ".tmp-ckpt-9-1-0"));
  CheckpointData bad = Make(5);
  bad.parts["../escape"] = "x";
  EXPECT_EQ(ckpt->Save(bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ckpt->ListSteps(), (std::vector<uint64_t>{3, 4}));
  EXPECT_FALSE(Checkpointer::Create({.dir = dir, .keep = 0}).ok());
}

}  // namespace
}  // namespace rlvr::learner
