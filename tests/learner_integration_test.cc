// Multi-process tests of `rlvr learner` with real `rlvr actor` processes on
// 127.0.0.1 (RLVR_BINARY is the CLI). A tiny model and task keep each test
// well under a minute.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/test_process.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using Child = rlvr::testing::TestProcess;
using rlvr::testing::ReadJsonLines;

// Largest N in "actor now generates with policy version N" / "received weights of policy version
// N".
int64_t ActorMaxVersion(const std::string& log) {
  static const std::regex re("policy version ([0-9]+)");
  int64_t best = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
       ++it) {
    best = std::max<int64_t>(best, std::stoll((*it)[1].str()));
  }
  return best;
}

class LearnerIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("RLVR_BINARY");
    if (bin == nullptr || !fs::exists(bin)) GTEST_SKIP() << "RLVR_BINARY not set";
    binary_ = bin;
    dir_ = fs::temp_directory_path() /
           ("rlvr_learner_it_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream cfg(dir_ / "config.yaml");
    cfg << "model: {d_model: 32, n_layers: 1, n_heads: 2, d_ff: 64, max_seq_len: 16}\n"
           "task: {min_digits: 1, max_digits: 1, train_size: 16, heldout_size: 8}\n"
           "pretrain: {checkpoint: "
        << (dir_ / "no_base.rlvrw").string()
        << "}\n"
           "sampling: {max_new_tokens: 4}\n"
           "actor: {max_batch_prompts: 2, threads: 1}\n"
           "learner: {group_size: 4, groups_per_update: 4, buffer_groups: 8, lease_timeout_s: 20,"
           " checkpoint_every: 2, threads: 1}\n"
           "eval: {every: 0, prompts: 8}\n";
  }
  void TearDown() override {
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }

  std::unique_ptr<Child> StartLearner(int total_updates, std::vector<std::string> extra = {}) {
    fs::remove(dir_ / "port");
    std::vector<std::string> argv = {binary_,           "learner",
                                     "--config",        (dir_ / "config.yaml").string(),
                                     "--run_dir",       dir_.string(),
                                     "--port_file",     (dir_ / "port").string(),
                                     "--ledger",        (dir_ / "ledger.jsonl").string(),
                                     "--total_updates", std::to_string(total_updates)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto c = std::make_unique<Child>(
        argv, (dir_ / ("learner" + std::to_string(++starts_) + ".log")).string());
    EXPECT_TRUE(c->ok());
    return c;
  }
  int WaitForPort(Child& learner) {
    auto t0 = Clock::now();
    while (std::chrono::duration<double>(Clock::now() - t0).count() < 60) {
      std::ifstream in(dir_ / "port");
      int port = 0;
      if (in >> port && port > 0) return port;
      if (learner.Wait(0) >= 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "learner did not report its port:\n" << learner.Log();
    return 0;
  }
  std::unique_ptr<Child> StartActor(int port, const std::string& name) {
    auto c = std::make_unique<Child>(
        std::vector<std::string>{binary_, "actor", "--learner", "127.0.0.1:" + std::to_string(port),
                                 "--config", (dir_ / "config.yaml").string(), "--actor_id", name,
                                 "--metrics_port", "-1", "--health_port", "-1", "--listen_address",
                                 "127.0.0.1"},
        (dir_ / (name + ".log")).string());
    EXPECT_TRUE(c->ok());
    return c;
  }
  size_t MetricsLines() { return ReadJsonLines((dir_ / "metrics.jsonl").string()).size(); }
  bool WaitFor(const std::function<bool()>& cond, double timeout_s,
               std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
    auto t0 = Clock::now();
    while (std::chrono::duration<double>(Clock::now() - t0).count() < timeout_s) {
      if (cond()) return true;
      std::this_thread::sleep_for(poll);
    }
    return false;
  }

  // Each (epoch, prompt_index) at most once. With `epoch0_complete`, epoch 0
  // holds every prompt (asynchronous runs may still have an epoch-0 straggler
  // in flight when the first prompts of epoch 1 are trained, so only long
  // enough runs ask for it).
  void CheckLedgerExactlyOnce(size_t train_size, bool epoch0_complete) {
    auto ledger = ReadJsonLines((dir_ / "ledger.jsonl").string());
    std::map<uint64_t, std::multiset<uint64_t>> by_epoch;
    for (const auto& j : ledger) {
      by_epoch[j["epoch"].get<uint64_t>()].insert(j["prompt_index"].get<uint64_t>());
    }
    ASSERT_FALSE(by_epoch.empty());
    for (const auto& [epoch, prompts] : by_epoch) {
      std::set<uint64_t> unique(prompts.begin(), prompts.end());
      EXPECT_EQ(unique.size(), prompts.size()) << "a prompt was trained twice in epoch " << epoch;
      if (epoch == 0 && epoch0_complete) {
        EXPECT_EQ(unique.size(), train_size) << "epoch " << epoch << " is incomplete";
      }
    }
  }

  std::string binary_;
  fs::path dir_;
  int starts_ = 0;
};

TEST_F(LearnerIntegrationTest, TwoActorsTrainAndVersionAdvancesOnEveryActor) {
  // Synchronous on purpose: each update trains exactly the next 4 slots of
  // the cursor (the window), and each actor holds at most 2 leases (its
  // capacity), so every update needs groups from both actors, sampled with
  // the newest version. Both must therefore receive every new version, however
  // the processes are scheduled. (Asynchronously, one actor can train all 10
  // updates of this tiny model in ~50 ms while the other is not scheduled,
  // its leases revoked as stale: under a loaded `ctest -j2` that happened,
  // and the slow actor never saw a version.)
  //
  // Actor a connects first and is granted 2 of the first window's slots with
  // its Welcome; freeze it until actor b has a session too, so that b holds
  // the other 2 and the first update needs both.
  auto learner = StartLearner(10, {"--set", "learner.max_policy_lag=0"});
  int port = WaitForPort(*learner);
  ASSERT_GT(port, 0);
  auto has_session = [&](const std::string& name) {
    return learner->Log().find("actor " + name + " (") != std::string::npos;
  };
  auto a = StartActor(port, "actor-a");
  ASSERT_TRUE(WaitFor([&] { return has_session("actor-a"); }, 60, std::chrono::milliseconds(1)))
      << learner->Log();
  a->Signal(SIGSTOP);
  auto b = StartActor(port, "actor-b");
  ASSERT_TRUE(WaitFor([&] { return has_session("actor-b"); }, 60)) << learner->Log();
  a->Signal(SIGCONT);
  ASSERT_EQ(learner->Wait(90), 0) << learner->Log();
  auto lines = ReadJsonLines((dir_ / "metrics.jsonl").string());
  ASSERT_EQ(lines.size(), 10u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["step"].get<uint64_t>(), i + 1);
    EXPECT_TRUE(lines[i].contains("reward"));
    EXPECT_TRUE(lines[i].contains("time"));
  }
  EXPECT_TRUE(lines.back().contains("heldout_accuracy"));
  const int64_t first_version = lines.front()["version"].get<int64_t>() - 1;
  // Both actors moved past the first version they were given.
  EXPECT_GT(ActorMaxVersion(a->Log()), first_version) << a->Log();
  EXPECT_GT(ActorMaxVersion(b->Log()), first_version) << b->Log();
  CheckLedgerExactlyOnce(16, true);
  EXPECT_EQ(ReadJsonLines((dir_ / "ledger.jsonl").string()).size(), 40u);
  EXPECT_TRUE(fs::exists(dir_ / "checkpoints"));
  a->Signal(SIGTERM);
  b->Signal(SIGTERM);
  EXPECT_EQ(a->Wait(30), 0);
  EXPECT_EQ(b->Wait(30), 0);
}

TEST_F(LearnerIntegrationTest, KilledActorsLeasesAreReissuedAndEveryPromptTrainedOnce) {
  auto learner = StartLearner(12);  // Three epochs of 16 prompts, 4 per update.
  int port = WaitForPort(*learner);
  ASSERT_GT(port, 0);
  // Actor a connects first and is granted leases with its Welcome; freeze it
  // (its session stays open, its leases unanswered), start b, then kill a
  // mid-lease as soon as b has a session. (Not later: with this tiny model b
  // trains all 12 updates within ~50 ms of connecting, and a's prompts must
  // be re-queued while the run still needs them for epoch 0 to complete.)
  auto a = StartActor(port, "actor-a");
  ASSERT_TRUE(WaitFor([&] { return learner->Log().find("actor actor-a") != std::string::npos; }, 60,
                      std::chrono::milliseconds(1)))
      << learner->Log();
  a->Signal(SIGSTOP);
  auto b = StartActor(port, "actor-b");
  ASSERT_TRUE(WaitFor([&] { return learner->Log().find("actor actor-b") != std::string::npos; }, 60,
                      std::chrono::milliseconds(1)))
      << learner->Log();
  a->Signal(SIGKILL);
  a->Wait(10);
  ASSERT_EQ(learner->Wait(90), 0) << learner->Log();
  EXPECT_EQ(MetricsLines(), 12u);
  // The frozen actor's leases went back to the queue: when its session
  // closed, or earlier, revoked at a new version because their groups would
  // have been stale (staleness-aware leasing; which comes first depends on
  // how fast b trains).
  static const std::regex re(
      "closed; ([0-9]+) leases re-queued|revoked ([0-9]+) leases whose groups would be stale");
  const std::string log = learner->Log();
  bool requeued = false;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
       ++it) {
    const std::string n = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
    requeued = requeued || std::stoi(n) > 0;
  }
  EXPECT_TRUE(requeued) << log;
  CheckLedgerExactlyOnce(16, true);
  auto ledger = ReadJsonLines((dir_ / "ledger.jsonl").string());
  EXPECT_EQ(ledger.size(), 48u);
  b->Signal(SIGTERM);
  EXPECT_EQ(b->Wait(30), 0);
}

TEST_F(LearnerIntegrationTest, SigtermCheckpointsAndRestartContinuesTheCursor) {
  constexpr size_t kUpdates = 30;
  const std::vector<std::string> sync = {"--set", "learner.max_policy_lag=0"};
  auto learner = StartLearner(kUpdates, sync);
  int port = WaitForPort(*learner);
  ASSERT_GT(port, 0);
  auto a = StartActor(port, "actor-a");
  ASSERT_TRUE(WaitFor([&] { return MetricsLines() >= 2; }, 60)) << learner->Log();
  learner->Signal(SIGTERM);
  ASSERT_EQ(learner->Wait(60), 0) << learner->Log();
  const size_t done = MetricsLines();
  ASSERT_GE(done, 2u);
  ASSERT_LT(done, kUpdates) << "SIGTERM did not stop the run early";
  EXPECT_EQ(ReadJsonLines((dir_ / "ledger.jsonl").string()).size(), 4 * done);

  // Restart in the same run directory: it resumes at step done + 1.
  auto again = StartLearner(kUpdates, sync);
  port = WaitForPort(*again);
  ASSERT_GT(port, 0);
  a->Signal(SIGKILL);
  a->Wait(10);
  auto b = StartActor(port, "actor-b");
  ASSERT_EQ(again->Wait(120), 0) << again->Log();
  auto lines = ReadJsonLines((dir_ / "metrics.jsonl").string());
  ASSERT_EQ(lines.size(), kUpdates);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i]["step"].get<uint64_t>(), i + 1);
  // Synchronous: every update trains the next 4 prompts of the cursor, so
  // epochs fill in order and none repeats a prompt, across the restart.
  CheckLedgerExactlyOnce(16, true);
  EXPECT_EQ(ReadJsonLines((dir_ / "ledger.jsonl").string()).size(), 4 * kUpdates);
  b->Signal(SIGTERM);
  EXPECT_EQ(b->Wait(30), 0);
}

}  // namespace
