#include "learner/ledger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rlvr::learner {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rlvr_ledger_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "ledger.jsonl").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(LedgerTest, MissingFileIsEmpty) {
  auto t = TruncateLedger(path_, 3);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kept, 0);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(LedgerTest, DropsLinesOfRolledBackStepsAndTornLastLine) {
  {
    LedgerWriter w;
    ASSERT_TRUE(w.Open(path_).ok());
    for (int step = 1; step <= 4; ++step) {
      for (int g = 0; g < 2; ++g) {
        ASSERT_TRUE(w.Append("{\"step\":" + std::to_string(step) +
                             ",\"prompt_index\":" + std::to_string(2 * step + g) + "}")
                        .ok());
      }
    }
    ASSERT_TRUE(w.Sync().ok());
  }
  {
    std::ofstream torn(path_, std::ios::app);
    torn << "{\"step\":5,\"prompt_in";  // A write cut by SIGKILL.
  }
  auto t = TruncateLedger(path_, 2);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kept, 4);
  EXPECT_EQ(t->dropped, 4);
  EXPECT_EQ(t->malformed, 1);
  EXPECT_EQ(Read(path_),
            "{\"step\":1,\"prompt_index\":2}\n{\"step\":1,\"prompt_index\":3}\n"
            "{\"step\":2,\"prompt_index\":4}\n{\"step\":2,\"prompt_index\":5}\n");
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));

  // Appending after the rewrite continues the file.
  LedgerWriter w;
  ASSERT_TRUE(w.Open(path_).ok());
  ASSERT_TRUE(w.Append("{\"step\":3,\"prompt_index\":9}").ok());
  EXPECT_EQ(Read(path_).substr(Read(path_).size() - 28), "{\"step\":3,\"prompt_index\":9}\n");
}

TEST_F(LedgerTest, FreshStartDropsEverythingAndConsistentLedgerIsUntouched) {
  {
    std::ofstream out(path_);
    out << "{\"step\":1}\n{\"step\":2}\n";
  }
  auto same = TruncateLedger(path_, 2);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->kept, 2);
  EXPECT_EQ(same->dropped, 0);
  EXPECT_EQ(Read(path_), "{\"step\":1}\n{\"step\":2}\n");
  auto fresh = TruncateLedger(path_, 0);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->dropped, 2);
  EXPECT_EQ(Read(path_), "");
}

TEST_F(LedgerTest, UnparsableMiddleLineIsDropped) {
  {
    std::ofstream out(path_);
    out << "{\"step\":1}\nnot json\n{\"step\":\"x\"}\n{\"step\":1}\n";
  }
  auto t = TruncateLedger(path_, 5);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->kept, 2);
  EXPECT_EQ(t->malformed, 2);
  EXPECT_EQ(Read(path_), "{\"step\":1}\n{\"step\":1}\n");
}

}  // namespace
}  // namespace rlvr::learner
