// Load test: a real `rlvr learner` (tiny model, large buffer, fast updates)
// under RunLoad's synthetic sessions (valid and deliberately invalid groups).
// Asserts: no invalid group accepted, valid groups rejected only for
// legitimate reasons (stale_version: the learner moved on while the group was
// in flight; rate_limited / unavailable: a resource limit, printed), no
// session failed, the learner's resident memory bounded (end <= 1.5x the
// value at a third of the run + 64 MiB), and the learner healthy afterwards
// (health SERVING, then a clean SIGTERM exit).
//
// RLVR_LOAD_SESSIONS (default 64) and RLVR_LOAD_SECONDS (default 10) size it.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/load/load_generator.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

long VmRssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LoadTest, ManySessionsNoInvalidAcceptedMemoryBoundedLearnerHealthy) {
  const char* bin = std::getenv("RLVR_BINARY");
  if (bin == nullptr || !fs::exists(bin)) GTEST_SKIP() << "RLVR_BINARY not set";
  const int sessions = EnvInt("RLVR_LOAD_SESSIONS", 64);
  const int seconds = EnvInt("RLVR_LOAD_SECONDS", 10);
  const fs::path dir = fs::temp_directory_path() / ("rlvr_load_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream cfg(dir / "config.yaml");
    cfg << "model: {d_model: 32, n_layers: 1, n_heads: 2, d_ff: 64, max_seq_len: 24}\n"
           "task: {min_digits: 1, max_digits: 2, train_size: 512, heldout_size: 8}\n"
           "pretrain: {checkpoint: "
        << (dir / "no_base.rlvrw").string()
        << "}\n"
           "sampling: {max_new_tokens: 8}\n"
           "learner: {group_size: 4, groups_per_update: 32, buffer_groups: 1024, lease_timeout_s: "
           "30,"
           " max_policy_lag: 4, checkpoint_every: 0, threads: 1, max_sessions: "
        << sessions + 16
        // Every session comes from 127.0.0.1 and opens at once: the address's
        // share of streams awaiting Hello must hold them all.
        << ", max_awaiting_hello: " << sessions + 16
        << ", max_awaiting_hello_per_peer: " << sessions + 16
        << "}\n"
           "eval: {every: 0, prompts: 4}\n";
  }
  // The learner as a child process (stdout+stderr to learner.log).
  std::vector<std::string> argv = {bin,
                                   "learner",
                                   "--config",
                                   (dir / "config.yaml").string(),
                                   "--port_file",
                                   (dir / "port").string(),
                                   "--total_updates",
                                   "100000000"};
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string log = (dir / "learner.log").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  struct Reaper {
    pid_t pid;
    bool done = false;
    ~Reaper() {
      if (!done) {
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
      }
    }
  } reaper{pid};

  int port = 0;
  for (const auto t0 = Clock::now(); port == 0 && Clock::now() - t0 < std::chrono::seconds(30);) {
    std::ifstream in(dir / "port");
    if (!(in >> port)) port = 0;
    int st = 0;
    ASSERT_NE(waitpid(pid, &st, WNOHANG), pid) << "learner exited:\n" << ReadFile(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(port, 0) << ReadFile(log);

  rlvr::testing::LoadOptions o;
  o.target = "127.0.0.1:" + std::to_string(port);
  o.sessions = sessions;
  o.duration_s = seconds;
  o.invalid_fraction = 0.1;
  o.completion_tokens = 4;
  absl::StatusOr<rlvr::testing::LoadReport> report = absl::UnknownError("not run");
  std::thread runner([&] { report = rlvr::testing::RunLoad(o); });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds / 3.0));
  const long rss_third = VmRssKb(pid);
  runner.join();
  const long rss_end = VmRssKb(pid);
  ASSERT_TRUE(report.ok()) << report.status();
  std::printf("LOAD %s\nLOAD learner VmRSS at 1/3: %ld kB, at end: %ld kB\n",
              report->Summary().c_str(), rss_third, rss_end);
  std::fflush(stdout);

  EXPECT_EQ(report->invalid_accepted, 0);
  EXPECT_EQ(report->sessions_failed, 0);
  EXPECT_EQ(report->sessions_opened, sessions);
  EXPECT_GT(report->valid_accepted, 0);
  EXPECT_GT(report->invalid_rejected, 0);
  const std::set<std::string> legitimate = {
      "REJECT_REASON_STALE_VERSION", "REJECT_REASON_RATE_LIMITED", "REJECT_REASON_UNAVAILABLE",
      "REJECT_REASON_EXPIRED_LEASE"};
  for (const auto& [reason, n] : report->valid_rejected_by_reason) {
    EXPECT_TRUE(legitimate.count(reason) > 0) << n << " valid groups rejected: " << reason;
  }
  ASSERT_GT(rss_third, 0);
  EXPECT_LE(rss_end, rss_third * 3 / 2 + 64 * 1024) << "learner memory grew under load";

  // Still healthy: SERVING, then a clean graceful stop.
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = health->Check(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  kill(pid, SIGTERM);
  int st = 0;
  for (const auto t0 = Clock::now(); Clock::now() - t0 < std::chrono::seconds(30);) {
    if (waitpid(pid, &st, WNOHANG) == pid) {
      reaper.done = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(reaper.done) << "learner did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << ReadFile(log);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
