// `rlvr run` end to end with a tiny config (~1 minute): pretrain, a learner and
// two actors as child processes, training, evaluation, the run directory's
// files, no child left behind, and resumption on a second invocation. Also:
// two learner rank processes (Gloo over loopback) train the same parameters
// as one rank, and every command rejects an unknown loss.estimator early.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_testing.h"

namespace {

namespace fs = std::filesystem;

using rlvr::testing::JsonLines;
using rlvr::testing::Shell;
using rlvr::testing::Slurp;

// Live processes whose command line mentions `needle`.
std::vector<int> ProcessesMentioning(const std::string& needle) {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = Slurp(e.path() / "cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(needle) != std::string::npos && cmdline.find("rlvr") != std::string::npos &&
        std::stoi(name) != getpid()) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

// Every command that loads a run config checks loss.estimator against the
// estimator registry right after loading it (common/ cannot: the estimators
// register themselves in learner/core), and exits with status 2 before it
// starts anything, naming the key and the registered estimators.
TEST(RunEndToEndTest, UnknownEstimatorFailsEveryCommandEarly) {
  const char* bin = std::getenv("RLVR_BINARY");
  ASSERT_NE(bin, nullptr);
  fs::path dir = fs::path(testing::TempDir()) / "rlvr_unknown_estimator";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string config = (dir / "empty.yaml").string();
  std::ofstream(config) << "run: {runs_dir: " << (dir / "runs").string() << "}\n";
  const std::vector<std::string> commands = {
      "run --no_live --config " + config,
      "learner --config " + config,
      "actor --learner 127.0.0.1:1 --config " + config,
      "pretrain --config " + config,
      "eval --config " + config,
      "score --input " + (dir / "none.jsonl").string() + " --config " + config,
      "export --checkpoint " + (dir / "ckpt").string() + " --out " + (dir / "export").string() +
          " --config " + config,
  };
  for (const std::string& command : commands) {
    SCOPED_TRACE(command);
    const std::string out = (dir / "out.txt").string();
    EXPECT_EQ(Shell("timeout 120 " + std::string(bin) + " " + command +
                    " --set loss.estimator=ppo > " + out + " 2>&1"),
              2);
    const std::string text = Slurp(out);
    EXPECT_NE(text.find("config key 'loss.estimator': expected one of {"), std::string::npos)
        << text;
    for (const char* name : {"dfpo", "grpo", "dr_grpo", "dapo", "gspo", "got 'ppo'"}) {
      EXPECT_NE(text.find(name), std::string::npos) << name << " in " << text;
    }
  }
  // Nothing was started: no run directory, no export.
  EXPECT_FALSE(fs::exists(dir / "runs"));
  EXPECT_FALSE(fs::exists(dir / "export"));
}

TEST(RunEndToEndTest, TrainsEvaluatesCleansUpAndResumes) {
  const char* bin = std::getenv("RLVR_BINARY");
  ASSERT_NE(bin, nullptr);
  fs::path dir = fs::path(testing::TempDir()) / "rlvr_run_e2e";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path config = dir / "tiny.yaml";
  std::ofstream(config)
      << "run: {name: e2e, runs_dir: " << (dir / "runs").string()
      << ", total_updates: 10, num_actors: 2}\n"
         "model: {d_model: 32, n_layers: 1, n_heads: 2, d_ff: 64, max_seq_len: 24}\n"
         "task: {train_size: 200, heldout_size: 40}\n"
         "pretrain: {steps: 30, batch_size: 32, checkpoint: "
      << (dir / "base.rlvrw").string()
      << "}\n"
         "learner: {groups_per_update: 8, buffer_groups: 16, checkpoint_every: 2, "
         "max_policy_lag: 1}\n"
         "actor: {max_batch_prompts: 4}\n"
         "eval: {every: 3, prompts: 20}\n";
  fs::path run_dir = dir / "runs" / "e2e";
  std::string out1 = (dir / "first.out").string();
  ASSERT_EQ(Shell(std::string(bin) + " run --no_live --config " + config.string() + " > " + out1 +
                  " 2>&1"),
            0)
      << Slurp(out1) << Slurp(run_dir / "logs" / "learner.log");

  // The run directory holds everything a person needs.
  for (const char* f :
       {"config.yaml", "metrics.jsonl", "summary.json", "plot.png", "base_eval.json",
        "ledger.jsonl", "logs/learner.log", "logs/actor-0.log", "logs/actor-1.log"}) {
    EXPECT_TRUE(fs::exists(run_dir / f)) << f;
  }
  EXPECT_TRUE(fs::exists(dir / "base.rlvrw"));  // Pretrained because it was missing.
  std::vector<nlohmann::json> m = JsonLines(run_dir / "metrics.jsonl");
  ASSERT_EQ(m.size(), 10u);
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i]["step"].get<int>(), static_cast<int>(i) + 1);
    EXPECT_TRUE(m[i].contains("reward"));
    EXPECT_TRUE(m[i].contains("cancellation_residual"));
  }
  EXPECT_TRUE(m[2].contains("heldout_accuracy"));
  // max_policy_lag 1: loss.behaviour_weight auto resolves to truncated, the
  // run records it, and every update that trained tokens reports its weights
  // (mean min(pi_prox / pi_behav, 2) per token: near 1, never above the cap).
  EXPECT_NE(Slurp(run_dir / "config.yaml").find("behaviour_weight: \"truncated\""),
            std::string::npos);
  for (const nlohmann::json& line : m) {
    if (line["tokens"].get<int64_t>() == 0) continue;
    EXPECT_GT(line["behaviour_weight_mean"].get<double>(), 0.5) << line.dump();
    EXPECT_LE(line["behaviour_weight_mean"].get<double>(), 2.0) << line.dump();
  }
  nlohmann::json summary = nlohmann::json::parse(Slurp(run_dir / "summary.json"));
  EXPECT_EQ(summary["updates"].get<int>(), 10);
  EXPECT_TRUE(summary["completed"].get<bool>());
  // Waste by reason: each line counts the groups refused at the door since
  // the previous line (one key per RejectReason), summary.json their totals.
  std::map<std::string, int64_t> rejected;
  for (const nlohmann::json& line : m) {
    ASSERT_TRUE(line.contains("groups_rejected")) << line.dump();
    EXPECT_EQ(line["groups_rejected"].size(), 12u) << line.dump();
    for (const auto& [reason, n] : line["groups_rejected"].items()) {
      rejected[reason] += n.get<int64_t>();
    }
  }
  ASSERT_TRUE(summary["groups_rejected"].is_object()) << summary.dump();
  EXPECT_EQ(summary["groups_rejected"].size(), 12u);
  for (const auto& [reason, n] : rejected) {
    EXPECT_EQ(summary["groups_rejected"][reason].get<int64_t>(), n) << reason;
  }
  EXPECT_GE(summary["final_heldout_accuracy"].get<double>(), 0.0);
  EXPECT_GE(summary["base_heldout_accuracy"].get<double>(), 0.0);
  std::string printed = Slurp(out1);
  EXPECT_NE(printed.find("held-out greedy accuracy: base"), std::string::npos) << printed;

  // New versions reached the actors, and the newest versions got out. Every
  // actor whose weight watch the learner opened while at least three updates
  // were still to come received a new version. (The run trains for well under
  // a second; under heavy load an actor may start only as it ends, or after.)
  std::vector<std::string> learner_lines;
  {
    std::istringstream in(Slurp(run_dir / "logs" / "learner.log"));
    for (std::string line; std::getline(in, line);) {
      learner_lines.push_back(line);
      if (line.find("learner stopped at step") != std::string::npos) break;  // The first run's.
    }
  }
  const std::regex step_line("\\] step [0-9]+ version [0-9]+");
  std::regex got("received weights of policy version ([0-9]+)");
  int overall = 0;
  int checked = 0;
  for (const char* a : {"actor-0", "actor-1"}) {
    std::string log = Slurp(run_dir / "logs" / (std::string(a) + ".log"));
    int max_version = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), got); it != std::sregex_iterator();
         ++it) {
      max_version = std::max(max_version, std::stoi((*it)[1]));
    }
    overall = std::max(overall, max_version);
    const std::string opened = std::string("weight watch opened: watcher '") + a + "'";
    int updates_after = -1;
    for (const std::string& line : learner_lines) {
      if (updates_after < 0 && line.find(opened) != std::string::npos) updates_after = 0;
      if (updates_after >= 0 && std::regex_search(line, step_line)) ++updates_after;
    }
    if (updates_after >= 3) {
      ++checked;
      EXPECT_GE(max_version, 2) << a << ": its watch opened " << updates_after
                                << " updates before the end";
    }
  }
  EXPECT_GT(checked, 0) << "no actor watched weights while three updates were still to come";
  EXPECT_GE(overall, 5);
  // No child left behind.
  EXPECT_TRUE(ProcessesMentioning(run_dir.string()).empty());

  // A second invocation on the same run directory resumes at step 11.
  std::string out2 = (dir / "second.out").string();
  ASSERT_EQ(Shell(std::string(bin) + " run --no_live --config " + config.string() +
                  " --set run.total_updates=13 > " + out2 + " 2>&1"),
            0)
      << Slurp(out2);
  m = JsonLines(run_dir / "metrics.jsonl");
  ASSERT_EQ(m.size(), 13u) << Slurp(out2);
  EXPECT_EQ(m[10]["step"].get<int>(), 11);
  EXPECT_EQ(m[12]["step"].get<int>(), 13);
  EXPECT_NE(Slurp(run_dir / "logs" / "learner.log").find("resum"), std::string::npos);
  EXPECT_TRUE(ProcessesMentioning(run_dir.string()).empty());
}

// configs/gsm8k-tiny.yaml (a JSONL dataset, a template prompt format, the
// gsm8k verifier) runs end to end, shrunk by overrides, and resumes.
// Evaluation a config can size or skip (issue 42): eval.base_prompts 0 and
// eval.final_prompts 0 with eval.every 0 evaluate nothing; sized, the base
// evaluation (rlvr eval) and the last update's (the learner) take those
// sizes; `rlvr run` says what it evaluates; and pretrain.device names a
// device that is not there at once.
TEST(RunEndToEndTest, EvaluationsCanBeSizedOrSkipped) {
  const char* bin = std::getenv("RLVR_BINARY");
  ASSERT_NE(bin, nullptr);
  fs::path dir = fs::path(testing::TempDir()) / "rlvr_run_eval_sizes";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path config = dir / "tiny.yaml";
  std::ofstream(config)
      << "run: {runs_dir: " << (dir / "runs").string() << ", total_updates: 4, num_actors: 1}\n"
      << "model: {d_model: 32, n_layers: 1, n_heads: 2, d_ff: 64, max_seq_len: 24}\n"
         "task: {train_size: 200, heldout_size: 40}\n"
         "pretrain: {steps: 10, batch_size: 16, checkpoint: "
      << (dir / "base.rlvrw").string()
      << "}\n"
         "learner: {groups_per_update: 4, buffer_groups: 8, checkpoint_every: 2}\n"
         "actor: {max_batch_prompts: 4}\n"
         "eval: {every: 0, prompts: 20, pass_k: 4}\n";
  const std::string run = std::string(bin) + " run --no_live --config " + config.string();

  // Off: no base_eval.json, no held-out accuracy in any line.
  const std::string out1 = (dir / "off.out").string();
  ASSERT_EQ(Shell(run +
                  " --set run.name=off --set eval.base_prompts=0 --set eval.final_prompts=0"
                  " > " +
                  out1 + " 2>&1"),
            0)
      << Slurp(out1);
  const fs::path off = dir / "runs" / "off";
  EXPECT_FALSE(fs::exists(off / "base_eval.json"));
  std::vector<nlohmann::json> m = JsonLines(off / "metrics.jsonl");
  ASSERT_EQ(m.size(), 4u);
  for (const nlohmann::json& line : m) EXPECT_FALSE(line.contains("heldout_accuracy")) << line;
  EXPECT_NE(Slurp(out1).find("base policy not evaluated (eval.base_prompts: 0)"), std::string::npos)
      << Slurp(out1);
  nlohmann::json summary = nlohmann::json::parse(Slurp(off / "summary.json"));
  EXPECT_LT(summary["base_heldout_accuracy"].get<double>(), 0.0);
  EXPECT_LT(summary["final_heldout_accuracy"].get<double>(), 0.0);

  // Sized: the base evaluation on 12 prompts with pass@2, the last update's
  // on 8 (eval.prompts is 20).
  const std::string out2 = (dir / "sized.out").string();
  ASSERT_EQ(Shell(run +
                  " --set run.name=sized --set eval.base_prompts=12 --set eval.base_pass_k=2"
                  " --set eval.final_prompts=8 > " +
                  out2 + " 2>&1"),
            0)
      << Slurp(out2);
  const fs::path sized = dir / "runs" / "sized";
  nlohmann::json base = nlohmann::json::parse(Slurp(sized / "base_eval.json"));
  EXPECT_EQ(base["prompts"].get<int>(), 12);
  EXPECT_EQ(base["k"].get<int>(), 2);
  EXPECT_NE(Slurp(out2).find("evaluating the base policy on 12 held-out prompts (greedy + pass@2"),
            std::string::npos)
      << Slurp(out2);
  m = JsonLines(sized / "metrics.jsonl");
  ASSERT_EQ(m.size(), 4u);
  for (size_t i = 0; i + 1 < m.size(); ++i) EXPECT_FALSE(m[i].contains("heldout_accuracy"));
  EXPECT_TRUE(m.back().contains("heldout_accuracy")) << m.back();
  const std::string learner_log = Slurp(sized / "logs" / "learner.log");
  EXPECT_NE(learner_log.find("step 4: greedy held-out accuracy"), std::string::npos) << learner_log;
  EXPECT_NE(learner_log.find(" on 8 prompts"), std::string::npos) << learner_log;
  EXPECT_FALSE(fs::exists(sized / "progress.txt"));  // Cleared when each evaluation ends.

  // pretrain.device: a CUDA device that is not there fails at once, naming
  // the key (before any training).
  const std::string out3 = (dir / "device.out").string();
  EXPECT_EQ(Shell(std::string(bin) + " pretrain --config " + config.string() +
                  " --set pretrain.device=cuda:99 --out " + (dir / "x.rlvrw").string() + " > " +
                  out3 + " 2>&1"),
            2)
      << Slurp(out3);
  EXPECT_NE(Slurp(out3).find("pretrain.device"), std::string::npos) << Slurp(out3);
  EXPECT_FALSE(fs::exists(dir / "x.rlvrw"));
}

TEST(RunEndToEndTest, Gsm8kTinyConfigTrainsAndResumes) {
  const char* bin = std::getenv("RLVR_BINARY");
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  ASSERT_NE(bin, nullptr);
  ASSERT_NE(src, nullptr);
  fs::path dir = fs::path(testing::TempDir()) / "rlvr_run_gsm8k";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string command =
      "cd " + std::string(src) + " && " + bin +
      " run --no_live --config configs/gsm8k-tiny.yaml --set run.runs_dir=" +
      (dir / "runs").string() + " --set pretrain.checkpoint=" + (dir / "base.rlvrw").string() +
      " --set model.d_model=32 --set model.n_layers=1 --set model.n_heads=2 --set model.d_ff=64"
      " --set pretrain.steps=10 --set pretrain.batch_size=8 --set learner.groups_per_update=4"
      " --set learner.buffer_groups=8 --set learner.checkpoint_every=2 --set learner.group_size=4"
      " --set eval.every=2 --set eval.prompts=8 --set sampling.max_new_tokens=16";
  fs::path run_dir = dir / "runs" / "gsm8k-tiny";
  std::string out1 = (dir / "first.out").string();
  ASSERT_EQ(Shell(command + " --set run.total_updates=4 > " + out1 + " 2>&1"), 0)
      << Slurp(out1) << Slurp(run_dir / "logs" / "learner.log");
  std::vector<nlohmann::json> m = JsonLines(run_dir / "metrics.jsonl");
  ASSERT_EQ(m.size(), 4u) << Slurp(out1);
  EXPECT_TRUE(m[1].contains("heldout_accuracy"));

  std::string out2 = (dir / "second.out").string();
  ASSERT_EQ(Shell(command + " --set run.total_updates=6 > " + out2 + " 2>&1"), 0) << Slurp(out2);
  m = JsonLines(run_dir / "metrics.jsonl");
  ASSERT_EQ(m.size(), 6u) << Slurp(out2);
  EXPECT_EQ(m[4]["step"].get<int>(), 5);
  EXPECT_NE(Slurp(run_dir / "logs" / "learner.log").find("resum"), std::string::npos);
  EXPECT_TRUE(ProcessesMentioning(run_dir.string()).empty());
  // Across both invocations every dataset slot was trained at most once, and
  // the cursor's prompt index still names the same JSONL line ("train-<i>"
  // is line i+1 of data/gsm8k-tiny/train.jsonl; none is too long here).
  std::set<std::pair<int, int>> slots;
  std::vector<nlohmann::json> ledger = JsonLines(run_dir / "ledger.jsonl");
  EXPECT_EQ(ledger.size(), 6u * 4u);
  for (const nlohmann::json& line : ledger) {
    EXPECT_TRUE(slots.insert({line["epoch"].get<int>(), line["position"].get<int>()}).second)
        << line.dump();
    EXPECT_EQ(line["prompt_id"].get<std::string>(),
              "train-" + std::to_string(line["prompt_index"].get<int>()));
  }
}

// The float32 tensors of a weight blob (layout in common/policy/weights.h),
// read without torch. Fails the test on anything unexpected.
std::map<std::string, std::vector<float>> ReadWeightBlob(const fs::path& path) {
  const std::string blob = Slurp(path);
  std::map<std::string, std::vector<float>> out;
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    if (pos + n > blob.size()) {
      ADD_FAILURE() << path << ": truncated";
      return false;
    }
    std::memcpy(dst, blob.data() + pos, n);
    pos += n;
    return true;
  };
  char magic[8];
  uint32_t format = 0, count = 0;
  uint64_t version = 0;
  if (!take(magic, 8) || std::memcmp(magic, "RLVRWGT", 8) != 0 || !take(&format, 4) ||
      !take(&version, 8) || !take(&count, 4)) {
    ADD_FAILURE() << path << ": bad header";
    return out;
  }
  for (uint32_t t = 0; t < count; ++t) {
    uint32_t name_len = 0, rank = 0;
    uint8_t dtype = 0;
    uint64_t bytes = 0;
    if (!take(&name_len, 4)) return out;
    std::string name(name_len, '\0');
    if (!take(name.data(), name_len) || !take(&dtype, 1) || !take(&rank, 4)) return out;
    std::vector<int64_t> dims(rank);
    if (!take(dims.data(), 8 * rank) || !take(&bytes, 8)) return out;
    EXPECT_EQ(dtype, 6) << name << ": not float32";  // torch::ScalarType::Float
    std::vector<float> values(bytes / 4);
    if (!take(values.data(), bytes)) return out;
    out[name] = std::move(values);
  }
  return out;
}

// Synchronous training (max_policy_lag 0) gives every update the same data
// whatever the process layout, so two learner ranks (each update's groups
// sharded across them, gradients all-reduced) must end with one rank's
// parameters within float tolerance.
TEST(RunEndToEndTest, TwoLearnerRanksTrainTheSameParametersAsOne) {
  const char* bin = std::getenv("RLVR_BINARY");
  ASSERT_NE(bin, nullptr);
  fs::path dir = fs::path(testing::TempDir()) / "rlvr_run_ranks";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path config = dir / "tiny.yaml";
  std::ofstream(config)
      << "run: {runs_dir: " << (dir / "runs").string()
      << ", total_updates: 6, num_actors: 1}\n"
         "model: {d_model: 32, n_layers: 1, n_heads: 2, d_ff: 64, max_seq_len: 24}\n"
         "task: {train_size: 200, heldout_size: 40}\n"
         "pretrain: {steps: 30, batch_size: 32, checkpoint: "
      << (dir / "base.rlvrw").string()
      << "}\n"
         "learner: {groups_per_update: 8, buffer_groups: 16, checkpoint_every: 3, "
         "max_policy_lag: 0}\n"
         "actor: {max_batch_prompts: 4}\n"
         "optim: {lr: 0.003}\n"
         "eval: {every: 0, prompts: 20}\n";
  for (int ranks : {1, 2}) {
    const std::string name = "ranks" + std::to_string(ranks);
    const std::string out = (dir / (name + ".out")).string();
    ASSERT_EQ(Shell(std::string(bin) + " run --no_live --config " + config.string() +
                    " --set run.name=" + name +
                    " --set run.learner_ranks=" + std::to_string(ranks) + " > " + out + " 2>&1"),
              0)
        << Slurp(out);
    EXPECT_EQ(JsonLines(dir / "runs" / name / "metrics.jsonl").size(), 6u) << name;
  }
  // Both layouts really ran: rank 1 logged its own training.
  EXPECT_TRUE(fs::exists(dir / "runs" / "ranks2" / "logs" / "learner-1.log"));
  auto one = ReadWeightBlob(dir / "runs" / "ranks1" / "checkpoints" / "ckpt-6" / "model.bin");
  auto two = ReadWeightBlob(dir / "runs" / "ranks2" / "checkpoints" / "ckpt-6" / "model.bin");
  auto base = ReadWeightBlob(dir / "base.rlvrw");
  ASSERT_FALSE(one.empty());
  ASSERT_EQ(one.size(), two.size());
  double worst = 0.0, moved = 0.0;
  for (const auto& [name, a] : one) {
    ASSERT_TRUE(two.count(name)) << name;
    const std::vector<float>& b = two.at(name);
    ASSERT_EQ(a.size(), b.size()) << name;
    double scale = 0.0, diff = 0.0, step = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
      scale = std::max(scale, std::fabs(double(a[i])));
      diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
      step = std::max(step, std::fabs(double(a[i]) - base.at(name)[i]));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-12));
    moved = std::max(moved, step / std::max(scale, 1e-12));
  }
  EXPECT_LE(worst, 1e-5) << "largest relative difference between 1 and 2 ranks";
  EXPECT_GE(moved, 1e-3) << "training did not move the parameters";
  std::printf(
      "1 vs 2 learner ranks after 6 updates: max relative difference %.3g "
      "(parameters moved up to %.3g relative)\n",
      worst, moved);
  EXPECT_TRUE(ProcessesMentioning((dir / "runs").string()).empty());
}

}  // namespace
