#include "services/runner/cpu_list.h"

#include <gtest/gtest.h>

namespace rlvr::runner {
namespace {

TEST(CpuListTest, ParsesTheKernelNotation) {
  EXPECT_EQ(*ParseCpuList(""), std::vector<int>{});
  EXPECT_EQ(*ParseCpuList("  "), std::vector<int>{});
  EXPECT_EQ(*ParseCpuList("3"), std::vector<int>{3});
  EXPECT_EQ(*ParseCpuList("0-2"), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(*ParseCpuList("5, 0-1,1"), (std::vector<int>{0, 1, 5}));
  EXPECT_EQ(*ParseCpuList("4-4"), std::vector<int>{4});
}

TEST(CpuListTest, RejectsWhatIsNotACpuList) {
  for (const char* bad : {"a", "1-", "-1", "2-1", "1,,2", "1.5", "0x1", "4096", "1-2-3", "+1"}) {
    auto r = ParseCpuList(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CpuListTest, ChecksAgainstTheAllowedCpusAndNamesTheKey) {
  const std::vector<int> allowed = {0, 1};
  EXPECT_EQ(*ParseCpuListFor("run.actor_cpus", "1", allowed), std::vector<int>{1});
  auto r = ParseCpuListFor("run.actor_cpus", "0-2", allowed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "config key 'run.actor_cpus': CPU 2 is not available (allowed: 0-1)");
  auto syntax = ParseCpuListFor("run.learner_cpus", "x", allowed);
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("config key 'run.learner_cpus'"), std::string::npos);
}

TEST(CpuListTest, FormatsRanges) {
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(FormatCpuList({1, 3, 4}), "1,3-4");
}

TEST(CpuListTest, AllowedCpusIsSortedAndNonEmpty) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
}

}  // namespace
}  // namespace rlvr::runner
