#include "services/runner/process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

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

}  // namespace
}  // namespace rlvr::runner
