// The math verifier end to end: configs/math-tiny.yaml (a JSONL dataset of
// LaTeX answers, task.verifier: math) trains through `rlvr run`, and
// `rlvr verify` scores JSONL lines as documented (docs/tasks.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_testing.h"

namespace {

namespace fs = std::filesystem;

using rlvr::testing::JsonLines;
using rlvr::testing::Shell;
using rlvr::testing::Slurp;

// configs/math-tiny.yaml, shrunk by overrides: pretraining, actors scoring
// with the math verifier, updates and a held-out evaluation.
TEST(VerifyEndToEndTest, MathTinyConfigTrains) {
  const char* bin = std::getenv("RLVR_BINARY");
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  ASSERT_NE(bin, nullptr);
  ASSERT_NE(src, nullptr);
  fs::path dir = fs::path(testing::TempDir()) / "rlvr_run_math";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string command =
      "cd " + std::string(src) + " && timeout 240 " + bin +
      " run --no_live --config configs/math-tiny.yaml --set run.runs_dir=" +
      (dir / "runs").string() + " --set pretrain.checkpoint=" + (dir / "base.rlvrw").string() +
      " --set model.d_model=32 --set model.n_layers=1 --set model.n_heads=2 --set model.d_ff=64"
      " --set pretrain.steps=10 --set pretrain.batch_size=8 --set learner.groups_per_update=4"
      " --set learner.buffer_groups=8 --set learner.checkpoint_every=2 --set learner.group_size=4"
      " --set eval.every=2 --set eval.prompts=8 --set run.total_updates=3";
  const std::string out = (dir / "run.out").string();
  const fs::path run_dir = dir / "runs" / "math-tiny";
  ASSERT_EQ(Shell(command + " > " + out + " 2>&1"), 0)
      << Slurp(out) << Slurp(run_dir / "logs" / "learner.log");
  std::vector<nlohmann::json> metrics = JsonLines(run_dir / "metrics.jsonl");
  ASSERT_EQ(metrics.size(), 3u) << Slurp(out);
  for (const nlohmann::json& m : metrics) {
    const double reward = m["reward"].get<double>();
    EXPECT_GE(reward, 0.0);
    EXPECT_LE(reward, 1.0);
  }
  EXPECT_TRUE(metrics[1].contains("heldout_accuracy")) << metrics[1].dump();
  // The actors built the math verifier from the config (a bad tolerance is
  // refused when the config loads).
  EXPECT_EQ(Shell("cd " + std::string(src) + " && " + bin +
                  " run --no_live --config configs/math-tiny.yaml --set "
                  "task.math_relative_tolerance=0.5 > " +
                  (dir / "bad.out").string() + " 2>&1"),
            2)
      << Slurp(dir / "bad.out");
  EXPECT_NE(Slurp(dir / "bad.out").find("task.math_relative_tolerance"), std::string::npos)
      << Slurp(dir / "bad.out");
}

// `rlvr verify`: one result per line in order, bad lines in place, the exit
// status, the summary, --help.
TEST(VerifyEndToEndTest, VerifyCommandScoresJsonl) {
  const char* bin = std::getenv("RLVR_BINARY");
  ASSERT_NE(bin, nullptr);
  fs::path dir = fs::path(testing::TempDir()) / "rlvr_verify_cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path input = dir / "rollouts.jsonl";
  {
    std::ofstream f(input);
    f << R"({"completion": "So the answer is $\\boxed{\\frac{\\sqrt3}{2}}$.", "answer": "\\frac{\\sqrt{3}}{2}"})"
      << "\n"
      << R"({"completion": "\\boxed{2x}", "answer": "x^2"})"
      << "\n"
      << R"({"completion": "The answer is 0.5", "answer": "50\\%"})"
      << "\n"
      << R"({"completion": "#### 72", "answer": 72, "verifier": "gsm8k"})"
      << "\n"
      << R"({"completion": "\\boxed{(1,2)}", "answer": "[1,2]"})"
      << "\n";
  }
  const fs::path output = dir / "out.jsonl";
  const fs::path err = dir / "err.txt";
  ASSERT_EQ(Shell(std::string(bin) + " verify --input " + input.string() + " --output " +
                  output.string() + " 2> " + err.string()),
            0)
      << Slurp(err);
  std::vector<nlohmann::json> lines = JsonLines(output);
  ASSERT_EQ(lines.size(), 5u) << Slurp(output);
  const double want[] = {1, 0, 1, 1, 0};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(lines[i]["reward"].get<double>(), want[i]) << lines[i].dump();
    for (const char* key : {"reward", "extracted", "parsed", "well_formed", "reason"}) {
      EXPECT_TRUE(lines[i].contains(key)) << key << " in " << lines[i].dump();
    }
  }
  EXPECT_EQ(lines[0]["parsed"]["completion"], "sqrt(3)/2");
  EXPECT_EQ(lines[2]["parsed"]["answer"], "50%");
  EXPECT_EQ(lines[2]["well_formed"], true);
  EXPECT_NE(Slurp(err).find("5 lines: 3 correct"), std::string::npos) << Slurp(err);
  EXPECT_NE(Slurp(err).find("lines/s"), std::string::npos) << Slurp(err);

  // stdin to stdout, a bad line in place, exit status 1.
  const fs::path bad = dir / "bad.jsonl";
  std::ofstream(bad) << R"({"completion": "\\boxed{7}", "answer": "7"})"
                     << "\n{oops\n"
                     << R"({"completion": "\\boxed{8}", "answer": "7"})"
                     << "\n";
  const fs::path out2 = dir / "out2.jsonl";
  EXPECT_EQ(Shell(std::string(bin) + " verify --verifier boxed < " + bad.string() + " > " +
                  out2.string() + " 2> " + err.string()),
            1);
  lines = JsonLines(out2);
  ASSERT_EQ(lines.size(), 3u) << Slurp(out2);
  EXPECT_EQ(lines[0]["reward"], 1.0);
  EXPECT_EQ(lines[1]["line"], 2);
  EXPECT_EQ(lines[1]["error"], "invalid JSON");
  EXPECT_EQ(lines[2]["reward"], 0.0);

  // Flags: an unknown verifier is a usage error; --help documents the fields.
  EXPECT_EQ(Shell(std::string(bin) + " verify --verifier regex < " + bad.string() +
                  " > /dev/null 2> " + err.string()),
            2);
  EXPECT_NE(Slurp(err).find("unknown verifier 'regex'"), std::string::npos) << Slurp(err);
  const fs::path help = dir / "help.txt";
  EXPECT_EQ(Shell(std::string(bin) + " verify --help > " + help.string()), 0);
  for (const char* word : {"completion", "answer", "extracted", "parsed", "well_formed", "reason",
                           "--verifier", "--math_relative_tolerance", "--threads"}) {
    EXPECT_NE(Slurp(help).find(word), std::string::npos) << word << " in " << Slurp(help);
  }
  EXPECT_EQ(Shell(std::string(bin) + " verify --input " + (dir / "missing.jsonl").string() +
                  " 2> /dev/null"),
            1);
}

}  // namespace
