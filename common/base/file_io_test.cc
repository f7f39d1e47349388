#include "common/base/file_io.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace rlvr {
namespace {

namespace fs = std::filesystem;

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rlvr_file_io_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FileIoTest, AtomicWriteReplacesWholeAndLeavesNoTemporary) {
  const std::string path = (dir_ / "a.txt").string();
  ASSERT_TRUE(WriteFileAtomically(path, "first version").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  auto read = ReadFileToString(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "second");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST_F(FileIoTest, BinaryContentRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 200000; ++i) bytes.push_back(static_cast<char>(i * 131 % 256));
  const std::string path = (dir_ / "blob.bin").string();
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  auto read = ReadFileToString(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, bytes);
}

TEST_F(FileIoTest, CreatesParentDirectoriesOnlyWhenAsked) {
  const std::string path = (dir_ / "x" / "y" / "z.txt").string();
  absl::Status without = WriteFileAtomically(path, "v");
  EXPECT_FALSE(without.ok());
  EXPECT_NE(without.message().find("z.txt"), std::string::npos) << without;
  AtomicWriteOptions options;
  options.create_parent_dirs = true;
  EXPECT_TRUE(WriteFileAtomically(path, "v", options).ok());
  EXPECT_EQ(*ReadFileToString(path), "v");
}

TEST_F(FileIoTest, ModeIsApplied) {
  const std::string path = (dir_ / "secret").string();
  AtomicWriteOptions options;
  options.mode = 0600;
  ASSERT_TRUE(WriteFileAtomically(path, "k", options).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(FileIoTest, MissingFileIsNotFound) {
  auto read = ReadFileToString((dir_ / "none").string());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(FileIoTest, FailedWriteNamesPathAndLeavesOldContents) {
  const std::string path = (dir_ / "keep.txt").string();
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  // A directory where the target should be: rename fails, the old file stays.
  const std::string blocked = (dir_ / "sub").string();
  fs::create_directories(fs::path(blocked) / "nonempty");
  absl::Status s = WriteFileAtomically(blocked, "new");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("sub"), std::string::npos) << s;
  EXPECT_EQ(*ReadFileToString(path), "old");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 2);  // keep.txt and sub/: no temporary left.
}

}  // namespace
}  // namespace rlvr
