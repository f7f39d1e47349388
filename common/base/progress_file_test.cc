// ProgressFile: what a poller reads back, throttling, completion, removal.
#include "common/base/progress_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace rlvr {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid())))
      .string();
}

TEST(ProgressFileTest, WritesWhatAPollerReadsBackAndRemovesItWhenCleared) {
  const std::string path = TempPath("rlvr_progress");
  {
    ProgressFile file(path, absl::ZeroDuration());
    file.Update("base policy, greedy, held-out prompts", 40, 200);
    std::optional<Progress> p = ReadProgressFile(path);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->done, 40);
    EXPECT_EQ(p->total, 200);
    EXPECT_EQ(p->what, "base policy, greedy, held-out prompts");
    file.Clear();
    EXPECT_FALSE(ReadProgressFile(path).has_value());
    file.Update("step 60, greedy, held-out prompts", 64, 200);
    EXPECT_TRUE(ReadProgressFile(path).has_value());
  }
  // The destructor clears it too.
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ProgressFileTest, ThrottlesUpdatesButNeverTheLastOne) {
  const std::string path = TempPath("rlvr_progress_throttle");
  ProgressFile file(path, absl::Hours(1));
  file.Update("x", 1, 10);
  file.Update("x", 2, 10);  // Within the interval: not written.
  EXPECT_EQ(ReadProgressFile(path)->done, 1);
  file.Update("x", 10, 10);  // Complete: always written.
  EXPECT_EQ(ReadProgressFile(path)->done, 10);
}

TEST(ProgressFileTest, EmptyPathAndMalformedFilesAreNothing) {
  ProgressFile none("");
  none.Update("x", 1, 2);  // No file, no error.
  const std::string path = TempPath("rlvr_progress_bad");
  std::ofstream(path) << "not a progress line\n";
  EXPECT_FALSE(ReadProgressFile(path).has_value());
  std::filesystem::remove(path);
  EXPECT_FALSE(ReadProgressFile(path).has_value());
}

}  // namespace
}  // namespace rlvr
