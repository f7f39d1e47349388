// `rlvr actor` as a real process against the in-process fake learner: it
// connects, fetches weights, streams groups, and on a real SIGTERM drains,
// closes its session cleanly and exits 0 within actor.shutdown_deadline_s.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actor/testing/fake_learner.h"
#include "common/policy/model.h"
#include "common/policy/weights.h"
#include "common/tasks/task.h"
#include "common/testing/grpc_testing.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr {
namespace {

using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The port printed as "<what> on port N" in `text`, or 0.
int PrintedPort(const std::string& text, const std::string& what) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex(what + " on port ([0-9]+)"))) {
    return std::stoi(m[1]);
  }
  return 0;
}

// GET /metrics from 127.0.0.1:port.
std::string ScrapeMetrics(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n";
    send(fd, req.data(), req.size(), 0);
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// Waits for `pid` up to `timeout_s`; returns the wait status or -1 on timeout.
int WaitFor(pid_t pid, double timeout_s) {
  const auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (Clock::now() < end) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

TEST(ActorProcessTest, SigtermDrainsAndExitsZeroWithinTheDeadline) {
  // RLVR_BINARY, else the CLI next to this test in the build tree.
  std::string binary_path;
  if (const char* env = std::getenv("RLVR_BINARY"); env != nullptr && *env != '\0') {
    binary_path = env;
  } else {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    ASSERT_GT(n, 0);
    self[n] = '\0';
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    binary_path = dir + "/../services/rlvr";
  }
  ASSERT_EQ(access(binary_path.c_str(), X_OK), 0) << "no rlvr CLI at " << binary_path;
  const char* binary = binary_path.c_str();
  torch::set_num_threads(1);
  auto tokenizer = MakeCharTokenizer();
  TaskConfig task_config;
  task_config.train_size = 100;
  task_config.heldout_size = 10;
  auto task = MakeTask(task_config, *tokenizer, TaskOptions{});
  ASSERT_TRUE(task.ok());
  ModelConfig model_config;
  model_config.d_model = 32;
  model_config.n_layers = 1;
  model_config.n_heads = 2;
  model_config.d_ff = 64;
  model_config.max_seq_len = 32;
  auto model = policy::CreateTransformer(model_config, tokenizer->vocab_size(), 9);
  ASSERT_TRUE(model.ok());

  actor::testing::FakeLearnerOptions lo;
  auto prompts = actor::testing::PromptsFromTask(**task, *tokenizer, 32);
  ASSERT_TRUE(prompts.ok());
  lo.prompts = *prompts;
  lo.cycle = true;
  lo.group_size = 4;
  lo.sampling.set_temperature(1.0);
  lo.sampling.set_top_p(1.0);
  lo.sampling.set_max_new_tokens(6);
  lo.sampling.add_stop_token_ids(tokenizer->eos_id());
  lo.vocab_size = tokenizer->vocab_size();
  auto learner = actor::testing::FakeLearner::Start(lo);
  ASSERT_TRUE(learner.ok());
  (*learner)->PublishWeights(1, policy::SerializeWeights(*model, 1));

  constexpr double kDeadlineS = 3;
  std::vector<std::string> args = {binary,
                                   "actor",
                                   "--learner",
                                   (*learner)->address(),
                                   "--actor_id",
                                   "proc-test",
                                   "--metrics_port=0",
                                   "--health_port=0",
                                   "--listen_address=127.0.0.1",
                                   "--max_batch_prompts=4",
                                   "--threads=1",
                                   "--set",
                                   "model.d_model=32",
                                   "--set",
                                   "model.n_layers=1",
                                   "--set",
                                   "model.n_heads=2",
                                   "--set",
                                   "model.d_ff=64",
                                   "--set",
                                   "model.max_seq_len=32",
                                   "--set",
                                   "task.train_size=100",
                                   "--set",
                                   "task.heldout_size=10",
                                   "--set",
                                   "eval.prompts=10",
                                   "--set",
                                   absl::StrCat("actor.shutdown_deadline_s=", kDeadlineS),
                                   "--set",
                                   "actor.reconnect_initial_s=0.05"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char out_template[] = "/tmp/actor_process_test_XXXXXX";
  const int out_fd = mkstemp(out_template);
  ASSERT_GE(out_fd, 0);
  const std::string out_path = out_template;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out_fd, STDOUT_FILENO);
    execv(binary, argv.data());
    _exit(127);
  }

  // Wait for groups, or notice an early exit (bad flags, crash) at once.
  bool got_groups = false;
  bool exited = false;
  for (int i = 0; i < 600 && !got_groups && !exited; ++i) {
    got_groups = (*learner)->WaitForGroups(8, 0.1);
    int status = 0;
    exited = waitpid(pid, &status, WNOHANG) == pid;
  }
  EXPECT_TRUE(got_groups);
  EXPECT_FALSE(exited) << "rlvr actor exited before SIGTERM";
  if (got_groups) {
    // Observability of the live process: health SERVING, metrics exported.
    const std::string printed = ReadFile(out_path);
    const int health_port = PrintedPort(printed, "actor health");
    const int metrics_port = PrintedPort(printed, "actor metrics");
    EXPECT_GT(health_port, 0) << printed;
    EXPECT_GT(metrics_port, 0) << printed;
    if (health_port > 0) {
      auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", health_port),
                                         grpc::InsecureChannelCredentials());
      auto health = CheckHealth(channel, "", 5);
      EXPECT_TRUE(health.ok() && *health == "SERVING") << health.status();
    }
    if (metrics_port > 0) {
      const std::string metrics = ScrapeMetrics(metrics_port);
      EXPECT_NE(metrics.find("rlvr_actor_groups_sent_total"), std::string::npos) << metrics;
      EXPECT_NE(metrics.find("rlvr_actor_policy_version 1"), std::string::npos);
      EXPECT_NE(metrics.find("rlvr_actor_session_up 1"), std::string::npos);
    }
    const auto t0 = Clock::now();
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    const int status = WaitFor(pid, kDeadlineS + 10);
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    ASSERT_NE(status, -1) << "actor did not exit after SIGTERM";
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_LT(took, kDeadlineS + 2);
    const auto stats = (*learner)->stats();
    EXPECT_EQ(stats.sessions_closed_cleanly, 1);  // WritesDone, not a dropped connection.
    EXPECT_EQ(stats.unknown_lease_groups, 0);
    for (const auto& r : (*learner)->accepted()) EXPECT_EQ(r.group.policy_version(), 1u);
    EXPECT_NE(ReadFile(out_path).find("actor stopped"), std::string::npos);
  } else if (!exited) {
    kill(pid, SIGKILL);
    WaitFor(pid, 10);
  }
  close(out_fd);
  unlink(out_path.c_str());
}

}  // namespace
}  // namespace rlvr
