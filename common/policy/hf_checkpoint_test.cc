// Hugging Face checkpoints: the fixtures written by scripts/make-hf-fixtures
// (tests/data/hf/) against the expected log-probs of its independent float64
// reference, KV-cache decoding against the same numbers, export round trips
// and every malformed-checkpoint case.
#include "common/policy/hf_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/policy/hf_config.h"
#include "common/policy/logprobs.h"
#include "common/policy/sampler.h"
#include "common/safetensors/safetensors.h"

namespace rlvr::policy {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// Log-prob tolerance against the float64 reference (float32 compute; BF16
// fixtures hold weights that bfloat16 represents exactly, so they get the
// same bound).
constexpr double kTolerance = 1e-4;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string FixtureDir(const std::string& name) {
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  return std::string(src != nullptr ? src : ".") + "/tests/data/hf/" + name;
}

struct Sequence {
  std::vector<int> ids;
  std::vector<double> logprobs;  // logprobs[i] = log p(ids[i+1] | ids[..i]).
  std::vector<int> greedy;
  std::vector<double> margin;
};

std::vector<Sequence> ReadExpected(const std::string& dir) {
  Json j = Json::parse(ReadText(dir + "/expected.json"));
  std::vector<Sequence> out;
  for (const Json& s : j["sequences"]) {
    out.push_back({s["ids"].get<std::vector<int>>(), s["logprobs"].get<std::vector<double>>(),
                   s["greedy"].get<std::vector<int>>(),
                   s["greedy_margin"].get<std::vector<double>>()});
  }
  return out;
}

torch::Tensor Row(const std::vector<int>& ids) {
  return torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0);
}

// Max |log-prob - reference| of each sequence run alone through forward();
// checks the greedy argmax where the reference's top-2 margin is > 1e-3.
double SingleSequenceDiff(Transformer& model, const std::vector<Sequence>& seqs,
                          bool check_greedy = true) {
  torch::NoGradGuard no_grad;
  double worst = 0;
  for (const Sequence& s : seqs) {
    torch::Tensor logp = torch::log_softmax(model->forward(Row(s.ids)), -1)[0];
    torch::Tensor argmax = logp.argmax(-1);
    for (size_t i = 0; i + 1 < s.ids.size(); ++i) {
      worst = std::max(worst, std::abs(logp[i][s.ids[i + 1]].item<double>() - s.logprobs[i]));
    }
    for (size_t i = 0; i < s.ids.size(); ++i) {
      if (check_greedy && s.margin[i] > 1e-3) {
        EXPECT_EQ(argmax[i].item<int64_t>(), s.greedy[i]) << "position " << i;
      }
    }
  }
  return worst;
}

// All sequences as one right-padded batch of (prompt, completion) rows of
// unequal lengths through ComputeCompletionLogProbs.
double BatchDiff(Transformer& model, const std::vector<Sequence>& seqs) {
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int>> prompts, completions;
  for (size_t r = 0; r < seqs.size(); ++r) {
    const auto& ids = seqs[r].ids;
    const size_t p = r % 2 == 0 ? 1 : ids.size() / 2;  // Prompt lengths differ too.
    prompts.emplace_back(ids.begin(), ids.begin() + p);
    completions.emplace_back(ids.begin() + p, ids.end());
  }
  std::vector<const std::vector<int>*> pp, cp;
  for (size_t r = 0; r < seqs.size(); ++r) {
    pp.push_back(&prompts[r]);
    cp.push_back(&completions[r]);
  }
  CompletionLogProbs out = ComputeCompletionLogProbs(model, pp, cp, /*with_entropy=*/false);
  double worst = 0;
  for (size_t r = 0; r < seqs.size(); ++r) {
    const size_t p = prompts[r].size();
    for (size_t t = 0; t < completions[r].size(); ++t) {
      worst = std::max(worst,
                       std::abs(out.logprobs[r][t].item<double>() - seqs[r].logprobs[p - 1 + t]));
    }
  }
  return worst;
}

// Left-padded batch decoding with a KV cache (as Generate does): prefill a
// prompt of a different length per row, then feed the rest one token per
// step; the log-prob of each next token is compared with the reference.
double DecodeDiff(Transformer& model, const std::vector<Sequence>& seqs) {
  torch::NoGradGuard no_grad;
  const int64_t b = static_cast<int64_t>(seqs.size());
  std::vector<int64_t> prompt_len, total_len;
  int64_t max_prompt = 0, max_rest = 0;
  for (int64_t r = 0; r < b; ++r) {
    const int64_t n = static_cast<int64_t>(seqs[r].ids.size());
    prompt_len.push_back(std::max<int64_t>(1, n / 3 + r));
    total_len.push_back(n);
    max_prompt = std::max(max_prompt, prompt_len[r]);
    max_rest = std::max(max_rest, n - prompt_len[r]);
  }
  torch::Tensor tokens = torch::zeros({b, max_prompt}, torch::kInt64);
  torch::Tensor positions = torch::zeros({b, max_prompt}, torch::kInt64);
  KvCache cache = model->NewCache(b, max_prompt + max_rest);
  for (int64_t r = 0; r < b; ++r) {
    const int64_t pad = max_prompt - prompt_len[r];
    for (int64_t j = 0; j < max_prompt; ++j) {
      if (j < pad) {
        cache.key_bias[r][0][0][j] = -1e9;
      } else {
        tokens[r][j] = seqs[r].ids[j - pad];
        positions[r][j] = j - pad;
      }
    }
  }
  cache.has_key_bias = true;
  torch::Tensor logits = model->ForwardWithPositions(tokens, positions, torch::Tensor(), &cache)
                             .select(1, max_prompt - 1);
  double worst = 0;
  for (int64_t step = 0;; ++step) {
    torch::Tensor logp = torch::log_softmax(logits.to(torch::kFloat32), -1);
    bool any = false;
    torch::Tensor next = torch::zeros({b, 1}, torch::kInt64);
    torch::Tensor pos = torch::zeros({b, 1}, torch::kInt64);
    for (int64_t r = 0; r < b; ++r) {
      const int64_t i = prompt_len[r] - 1 + step;  // Position whose successor is predicted.
      if (i + 1 >= total_len[r]) continue;
      worst = std::max(worst,
                       std::abs(logp[r][seqs[r].ids[i + 1]].item<double>() - seqs[r].logprobs[i]));
      next[r][0] = seqs[r].ids[i + 1];
      pos[r][0] = i + 1;
      any = true;
    }
    if (!any || step + 1 > max_rest) break;
    logits = model->ForwardWithPositions(next, pos, torch::Tensor(), &cache).select(1, 0);
  }
  return worst;
}

class HfFixtureTest : public testing::TestWithParam<std::string> {};

TEST_P(HfFixtureTest, LogProbsMatchTheIndependentReference) {
  const std::string dir = FixtureDir(GetParam());
  const std::vector<Sequence> seqs = ReadExpected(dir);
  ASSERT_FALSE(seqs.empty());
  // Default RoPE table, then one of 16 rows so that later positions take the
  // computed-angle path.
  for (int max_seq_len : {0, 16}) {
    HfLoadOptions options;
    options.max_seq_len = max_seq_len;
    auto model = LoadHfModel(dir, options);
    ASSERT_TRUE(model.ok()) << model.status();
    const double single = SingleSequenceDiff(*model, seqs);
    const double batch = BatchDiff(*model, seqs);
    const double decode = DecodeDiff(*model, seqs);
    std::cout << "[hf-fixture] " << GetParam() << " rope_rows="
              << (max_seq_len == 0 ? std::string("default") : std::to_string(max_seq_len))
              << " max|logp - ref| single=" << single << " batch=" << batch
              << " kv_decode=" << decode << "\n";
    EXPECT_LT(single, kTolerance);
    EXPECT_LT(batch, kTolerance);
    EXPECT_LT(decode, kTolerance);
  }
}

TEST_P(HfFixtureTest, GenerateWithCacheMatchesWithoutAndExportRoundTrips) {
  const std::string dir = FixtureDir(GetParam());
  auto model = LoadHfModel(dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<int> p1 = {5, 151, 9000}, p2 = {77};
  SamplingOptions opt;
  opt.max_new_tokens = 6;
  auto a = Generate(*model, {&p1, &p2}, {3, 4}, opt);
  auto b = GenerateWithoutCache(*model, {&p1, &p2}, {3, 4}, opt);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(a[r].tokens, b[r].tokens);
    for (size_t t = 0; t < a[r].logprobs.size(); ++t) {
      EXPECT_NEAR(a[r].logprobs[t], b[r].logprobs[t], 1e-4);
    }
  }

  auto info = ReadHfModelInfo(dir);
  ASSERT_TRUE(info.ok());
  const std::string out = testing::TempDir() + "/export_" + GetParam();
  fs::remove_all(out);
  // The fixtures' weights are exact in bfloat16, so both dtypes round-trip.
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    ASSERT_TRUE(ExportHfModel(*model, out, dtype, info->config_json).ok());
    auto again = LoadHfModel(out, {});
    ASSERT_TRUE(again.ok()) << again.status();
    torch::NoGradGuard no_grad;
    torch::Tensor t = Row(ReadExpected(dir)[2].ids);
    EXPECT_TRUE(torch::equal((*model)->forward(t), (*again)->forward(t)));
    Json written = Json::parse(ReadText(out + "/config.json"));
    EXPECT_EQ(written["bos_token_id"], Json::parse(info->config_json)["bos_token_id"]);
    EXPECT_EQ(written["torch_dtype"], dtype == torch::kFloat32 ? "float32" : "bfloat16");
    EXPECT_EQ((*again)->config().tie_embeddings, info->config.tie_embeddings);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfFixtureTest,
                         testing::Values("qwen2_f32_tied", "qwen3_f32_tied",
                                         "qwen3_bf16_untied_sharded", "llama_f32_tied_rope_llama3",
                                         "llama_bf16_untied_bias"));

TEST(HfCheckpointTest, FixtureConfigsReadAsTheirArchitectures) {
  auto q2 = ReadHfModelConfig(FixtureDir("qwen2_f32_tied"));
  ASSERT_TRUE(q2.ok()) << q2.status();
  EXPECT_EQ(q2->arch, "qwen2");
  EXPECT_TRUE(q2->qkv_bias);
  EXPECT_FALSE(q2->o_bias);
  EXPECT_EQ(q2->vocab_size, 151936);
  EXPECT_EQ(q2->n_kv_heads, 1);
  EXPECT_EQ(q2->max_seq_len, 32768);
  auto q3 = ReadHfModelConfig(FixtureDir("qwen3_f32_tied"));
  ASSERT_TRUE(q3.ok());
  EXPECT_TRUE(q3->qk_norm);
  EXPECT_EQ(q3->head_dim, 6);
  auto ll = ReadHfModelConfig(FixtureDir("llama_f32_tied_rope_llama3"));
  ASSERT_TRUE(ll.ok());
  EXPECT_EQ(ll->rope_scaling, "llama3");
  EXPECT_EQ(ll->rope_original_max_position, 1024);
  EXPECT_EQ(ll->vocab_size, 128256);
  auto lb = ReadHfModelConfig(FixtureDir("llama_bf16_untied_bias"));
  ASSERT_TRUE(lb.ok());
  EXPECT_TRUE(lb->qkv_bias && lb->o_bias && lb->mlp_bias);
  EXPECT_FALSE(lb->tie_embeddings);
}

TEST(HfCheckpointTest, Llama3RopeScalingChangesTheResult) {
  // Guards the fixture: without the frequency remap the log-probs differ by
  // far more than the tolerance, so the reference comparison would notice.
  const std::string dir = FixtureDir("llama_f32_tied_rope_llama3");
  auto scaled = LoadHfModel(dir, {});
  ASSERT_TRUE(scaled.ok());
  ModelConfig c = (*scaled)->config();
  c.rope_scaling.clear();
  Transformer plain(c, c.vocab_size, /*init_seed=*/std::nullopt);
  ASSERT_TRUE(LoadHfWeights(dir, plain).ok());
  const double diff = SingleSequenceDiff(plain, ReadExpected(dir), /*check_greedy=*/false);
  EXPECT_GT(diff, 1e-2);
}

// ---- malformed checkpoints ----------------------------------------------------

class MalformedTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "/malformed_" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    ModelConfig c;
    c.arch = "qwen3";
    c.d_model = 8;
    c.n_heads = 2;
    c.n_kv_heads = 1;
    c.head_dim = 4;
    c.d_ff = 12;
    c.n_layers = 1;
    c.qk_norm = true;
    c.tie_embeddings = true;
    c.vocab_size = 40;
    auto model = CreateTransformer(c, 40, 5);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE(ExportHfModel(*model, dir_, torch::kFloat32).ok());
    ASSERT_TRUE(LoadHfModel(dir_, {}).ok());
    file_ = dir_ + "/model.safetensors";
  }

  absl::Status Load() { return LoadHfModel(dir_, {}).status(); }

  void EditConfig(const std::function<void(Json&)>& edit) {
    Json j = Json::parse(ReadText(dir_ + "/config.json"));
    edit(j);
    WriteText(dir_ + "/config.json", j.dump());
  }

  // Rewrites model.safetensors with an edited header (data kept as is).
  void EditHeader(const std::function<void(Json&)>& edit) {
    std::string bytes = ReadText(file_);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    Json h = Json::parse(bytes.substr(8, n));
    edit(h);
    std::string text = h.dump();
    const uint64_t m = text.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &m, 8);
    WriteText(file_, out + text + bytes.substr(8 + n));
  }

  // Rewrites the weights keeping the tensors `keep` selects, plus `extra`.
  void RewriteTensors(const std::function<bool(const std::string&)>& keep,
                      const std::string& extra) {
    auto ckpt = safetensors::Checkpoint::Open(dir_);
    ASSERT_TRUE(ckpt.ok());
    std::vector<safetensors::TensorSpec> specs;
    std::vector<std::string> data;
    for (const auto& [name, e] : ckpt->tensors()) {
      if (!keep(name)) continue;
      specs.push_back({name, e.info->dtype, e.info->shape});
      data.emplace_back(e.file->Data(*e.info));
    }
    if (!extra.empty()) {
      specs.push_back({extra, safetensors::Dtype::kF32, {2}});
      data.emplace_back(8, '\0');
    }
    const std::string tmp = dir_ + "/new.safetensors";
    ASSERT_TRUE(
        safetensors::WriteSafetensors(
            tmp, specs, [&](size_t i) -> absl::StatusOr<absl::string_view> { return data[i]; }, {})
            .ok());
    fs::rename(tmp, file_);
  }

  std::string dir_, file_;
};

TEST_F(MalformedTest, UnknownArchitectureAndModelType) {
  EditConfig([](Json& j) { j["architectures"] = {"GPT2LMHeadModel"}; });
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("config.json"), HasSubstr("'architectures'"),
                                      HasSubstr("GPT2LMHeadModel")));
  EditConfig([](Json& j) {
    j.erase("architectures");
    j["model_type"] = "mistral";
  });
  EXPECT_THAT(Load().message(),
              AllOf(HasSubstr("config.json"), HasSubstr("'model_type'"), HasSubstr("mistral")));
}

TEST_F(MalformedTest, ConfigKeysMissingOrWrong) {
  EditConfig([](Json& j) { j.erase("hidden_size"); });
  EXPECT_THAT(Load().message(),
              AllOf(HasSubstr("config.json"), HasSubstr("'hidden_size'"), HasSubstr("missing")));
  EditConfig([](Json& j) { j["hidden_size"] = "8"; });
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("'hidden_size'"), HasSubstr("integer")));
  EditConfig([](Json& j) {
    j["hidden_size"] = 8;
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  });
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("'rope_scaling'"), HasSubstr("yarn")));
  EditConfig([](Json& j) {
    j["rope_scaling"] = nullptr;
    j["num_key_value_heads"] = 3;
  });
  EXPECT_THAT(Load().message(), HasSubstr("'num_key_value_heads'"));
  WriteText(dir_ + "/config.json", "{\"architectures\": [");
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("config.json"), HasSubstr("not valid JSON")));
  fs::remove(dir_ + "/config.json");
  EXPECT_THAT(Load().message(), HasSubstr("config.json"));
}

TEST_F(MalformedTest, MissingExtraAndMisshapenTensors) {
  RewriteTensors([](const std::string& n) { return n != "model.layers.0.mlp.up_proj.weight"; }, "");
  EXPECT_THAT(Load().message(),
              AllOf(HasSubstr("model.safetensors"),
                    HasSubstr("missing tensor 'model.layers.0.mlp.up_proj.weight'")));
  SetUp();
  RewriteTensors([](const std::string&) { return true; }, "model.layers.0.mlp.extra.weight");
  EXPECT_THAT(Load().message(),
              AllOf(HasSubstr("model.safetensors"),
                    HasSubstr("unexpected tensor 'model.layers.0.mlp.extra.weight'")));
  SetUp();
  // A stored lm_head.weight of a tied model is ignored, as HF does.
  RewriteTensors([](const std::string&) { return true; }, "lm_head.weight");
  EXPECT_TRUE(Load().ok()) << Load();
  SetUp();
  EditConfig([](Json& j) { j["intermediate_size"] = 16; });
  EXPECT_THAT(Load().message(),
              AllOf(HasSubstr("model.safetensors"), HasSubstr("model.layers.0.mlp."),
                    HasSubstr("has shape"), HasSubstr("expects [")));
}

TEST_F(MalformedTest, WrongDtype) {
  EditHeader([](Json& h) {
    Json& t = h["model.layers.0.mlp.down_proj.weight"];
    t["dtype"] = "I64";
  });
  EXPECT_THAT(
      Load().message(),
      AllOf(HasSubstr("model.safetensors"),
            HasSubstr("tensor 'model.layers.0.mlp.down_proj.weight': unsupported dtype I64")));
}

TEST_F(MalformedTest, TruncatedAndCorruptFiles) {
  fs::resize_file(file_, fs::file_size(file_) - 100);
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("model.safetensors"), HasSubstr("tensor '"),
                                      HasSubstr("beyond the data region")));
  fs::resize_file(file_, 5);
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("model.safetensors"), HasSubstr("shorter")));
  SetUp();
  std::string bytes = ReadText(file_);
  bytes[20] = '"';  // Inside the JSON header.
  bytes[21] = '{';
  WriteText(file_, bytes);
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("model.safetensors"), HasSubstr("JSON")));
  SetUp();
  bytes = ReadText(file_);
  const uint64_t huge = bytes.size() + 1;
  std::memcpy(bytes.data(), &huge, 8);
  WriteText(file_, bytes);
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("model.safetensors"), HasSubstr("header length")));
}

TEST_F(MalformedTest, HeaderOffsetsThatLie) {
  const std::string name = "model.layers.0.self_attn.k_norm.weight";
  EditHeader([&](Json& h) { h[name]["data_offsets"][1] = 1u << 30; });
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("model.safetensors"), HasSubstr(name)));
  SetUp();
  // q_norm has k_norm's shape: its offsets make a pure overlap.
  EditHeader([&](Json& h) {
    h[name]["data_offsets"] = h["model.layers.0.self_attn.q_norm.weight"]["data_offsets"];
  });
  // The first inconsistency in offset order is reported: the overlap, or the
  // gap the moved tensor left.
  EXPECT_THAT(Load().message(), AllOf(HasSubstr("model.safetensors"), HasSubstr("data_offsets"),
                                      testing::AnyOf(HasSubstr("overlap"), HasSubstr("gap"))));
  SetUp();
  EditHeader([&](Json& h) { h[name]["shape"] = {5}; });
  EXPECT_THAT(Load().message(),
              AllOf(HasSubstr("model.safetensors"), HasSubstr(name), HasSubstr("needs 20")));
}

TEST(HfConfigTest, WriteThenParseKeepsTheModel) {
  for (const char* arch : {"llama", "qwen2", "qwen3"}) {
    ModelConfig c;
    c.arch = arch;
    c.d_model = 16;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = std::string(arch) == "qwen3" ? 8 : 4;
    c.d_ff = 24;
    c.vocab_size = 100;
    c.qkv_bias = std::string(arch) == "qwen2";
    c.qk_norm = std::string(arch) == "qwen3";
    c.tie_embeddings = false;
    c.rms_norm_eps = 1e-5;
    c.rope_theta = 5e5;
    if (std::string(arch) == "llama") c.rope_scaling = "llama3";
    auto json = WriteHfModelConfigJson(c, "bfloat16");
    ASSERT_TRUE(json.ok()) << json.status();
    auto back = ParseHfConfigJson(*json, "x/config.json");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->torch_dtype, "bfloat16");
    RunConfig got, want;
    got.model = back->config;
    want.model = c;
    EXPECT_EQ(RunConfigToYaml(got), RunConfigToYaml(want)) << arch;
  }
  ModelConfig builtin;
  EXPECT_FALSE(WriteHfModelConfigJson(builtin, "float32").ok());
  ModelConfig ten;
  ten.vocab_size = 10;
  EXPECT_FALSE(ModelVocabSize(ten, 11).ok());
  EXPECT_EQ(*ModelVocabSize(ten, 7), 10);
  EXPECT_EQ(*ModelVocabSize(ModelConfig{}, 7), 7);
}

}  // namespace
}  // namespace rlvr::policy
