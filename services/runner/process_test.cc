#include "services/runner/process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "services/runner/cpu_list.h"

namespace rlvr::runner {
namespace {

TEST(ChildProcessTest, CapturesOutputAndExitCode) {
  std::string log = testing::TempDir() + "/child_ok.log";
  std::remove(log.c_str());
  auto child =
      ChildProcess::Spawn({"/bin/sh", "-c", "echo hello; echo world >&2; exit 3"}, log, "sh");
  ASSERT_TRUE(child.ok()) << child.status();
  int code = child->StopWithin(10, 0);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(child->LogTail(5), "hello\nworld");
  EXPECT_EQ(DescribeExit(code), "exit code 3");
}

TEST(ChildProcessTest, StopEscalatesToKill) {
  std::string log = testing::TempDir() + "/child_stubborn.log";
  std::remove(log.c_str());  // Logs append: a previous run's "ready" must not count.
  auto child =
      ChildProcess::Spawn({"/bin/sh", "-c", "trap '' TERM; echo ready; sleep 30"}, log, "stubborn");
  ASSERT_TRUE(child.ok());
  // Signal only once the shell ignores SIGTERM.
  for (int i = 0; i < 500 && child->LogTail(1) != "ready"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(child->Poll().has_value());
  int code = child->StopWithin(0.3, SIGTERM);
  EXPECT_EQ(code, 128 + SIGKILL);
  EXPECT_FALSE(child->running());
  EXPECT_NE(DescribeExit(code).find("signal 9"), std::string::npos);
}

TEST(ChildProcessTest, MissingExecutableFailsInChild) {
  std::string log = testing::TempDir() + "/child_missing.log";
  std::remove(log.c_str());
  auto child = ChildProcess::Spawn({"/nonexistent/binary"}, log, "missing");
  ASSERT_TRUE(child.ok());
  EXPECT_EQ(child->StopWithin(10, 0), 127);
}

TEST(ChildProcessTest, PinsTheChildToTheGivenCpus) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  const int cpu = allowed.back();
  std::string log = testing::TempDir() + "/child_pinned.log";
  std::remove(log.c_str());
  auto child =
      ChildProcess::Spawn({"/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status | cut -f2"},
                          log, "pinned", {cpu});
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(child->StopWithin(10, 0), 0);
  EXPECT_EQ(child->LogTail(1), std::to_string(cpu));
}

TEST(ChildProcessTest, UnpinnedChildKeepsTheParentsCpus) {
  std::string log = testing::TempDir() + "/child_unpinned.log";
  std::remove(log.c_str());
  auto child = ChildProcess::Spawn(
      {"/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status | cut -f2"}, log, "unpinned");
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(child->StopWithin(10, 0), 0);
  EXPECT_EQ(child->LogTail(1), FormatCpuList(AllowedCpus()));
}

TEST(ChildProcessTest, RejectsAnOutOfRangeCpu) {
  auto child = ChildProcess::Spawn({"/bin/true"}, testing::TempDir() + "/x.log", "x", {-1});
  EXPECT_EQ(child.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChildProcessTest, ReportsCpuAndWallSecondsOnceReaped) {
  std::string log = testing::TempDir() + "/child_busy.log";
  std::remove(log.c_str());
  // A shell loop that computes for a bounded count (~0.1-1 s), then a sleep.
  auto child = ChildProcess::Spawn(
      {"/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 0.3"}, log,
      "busy");
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(child->usage().cpu_seconds, 0.0);
  EXPECT_EQ(child->StopWithin(60, 0), 0);
  const ChildProcess::Usage& u = child->usage();
  EXPECT_GT(u.cpu_seconds, 0.02);
  EXPECT_GE(u.wall_seconds, 0.3);
  // The sleep computes nothing: CPU time stays below wall time.
  EXPECT_LT(u.cpu_seconds, u.wall_seconds);
}

}  // namespace
}  // namespace rlvr::runner
