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
#include "common/policy/hf_fixture_testing.h"
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

std::string FixtureDir(const std::string& name) { return hf_fixtures::HfFixtureDir(name); }

torch::Tensor Row(const std::vector<int>& ids) {
  return torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0);
}

// Greedy argmax is checked where the reference's top-2 margin is > 1e-3.
constexpr double kGreedyMargin = 1e-3;

class HfFixtureTest : public testing::TestWithParam<std::string> {};

TEST_P(HfFixtureTest, LogProbsMatchTheIndependentReference) {
  const std::string dir = FixtureDir(GetParam());
  const std::vector<hf_fixtures::ExpectedSequence> seqs = hf_fixtures::ReadHfExpected(dir);
  ASSERT_FALSE(seqs.empty());
  // Default RoPE table, then one of 16 rows so that later positions take the
  // computed-angle path.
  for (int max_seq_len : {0, 16}) {
    HfLoadOptions options;
    options.max_seq_len = max_seq_len;
    auto model = LoadHfModel(dir, options);
    ASSERT_TRUE(model.ok()) << model.status();
    const hf_fixtures::FixtureDiff single =
        hf_fixtures::SingleSequenceDiff(*model, seqs, kGreedyMargin);
    const double batch = hf_fixtures::BatchDiff(*model, seqs);
    const double decode = hf_fixtures::DecodeDiff(*model, seqs);
    std::cout << "[hf-fixture] " << GetParam() << " rope_rows="
              << (max_seq_len == 0 ? std::string("default") : std::to_string(max_seq_len))
              << " max|logp - ref| single=" << single.max_abs << " batch=" << batch
              << " kv_decode=" << decode << "\n";
    EXPECT_LT(single.max_abs, kTolerance);
    EXPECT_GT(single.greedy_checked, 0);
    EXPECT_EQ(single.greedy_mismatches, 0) << single.first_mismatch;
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
    torch::Tensor t = Row(hf_fixtures::ReadHfExpected(dir)[2].ids);
    EXPECT_TRUE(torch::equal((*model)->forward(t), (*again)->forward(t)));
    Json written = Json::parse(ReadText(out + "/config.json"));
    EXPECT_EQ(written["bos_token_id"], Json::parse(info->config_json)["bos_token_id"]);
    EXPECT_EQ(written["torch_dtype"], dtype == torch::kFloat32 ? "float32" : "bfloat16");
    EXPECT_EQ((*again)->config().tie_embeddings, info->config.tie_embeddings);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfFixtureTest, testing::ValuesIn(hf_fixtures::HfFixtureNames()));

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
  const double diff =
      hf_fixtures::SingleSequenceDiff(plain, hf_fixtures::ReadHfExpected(dir), /*greedy_margin=*/-1)
          .max_abs;
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
