#include "common/policy/policy_device_checks.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "common/policy/factory.h"
#include "common/policy/hf_checkpoint.h"
#include "common/policy/hf_config.h"
#include "common/policy/hf_fixture_testing.h"
#include "common/policy/logprobs.h"
#include "common/policy/model.h"
#include "common/policy/placement.h"
#include "common/policy/sampler.h"
#include "common/policy/weights.h"

namespace rlvr::policy::device_checks {

std::vector<DeviceCase> FixtureCases(const std::string& device) {
  std::vector<DeviceCase> out;
  for (const std::string& name : hf_fixtures::HfFixtureNames()) out.push_back({device, name});
  return out;
}

void PrintTo(const DeviceCase& c, std::ostream* os) {
  *os << c.device << (c.fixture.empty() ? "" : "/") << c.fixture;
}

std::string CaseName(const ::testing::TestParamInfo<DeviceCase>& info) {
  return info.param.fixture.empty() ? "default" : info.param.fixture;
}

void OnDevice::SetUp() {
  if (GetParam().device.rfind("cuda", 0) == 0 && !torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA: LibTorch sees no CUDA device (a `gpu`-labelled check)";
  }
}

namespace {

using hf_fixtures::ExpectedSequence;
using hf_fixtures::FixtureDiff;

// Float32 on any device against the float64 reference (as the CPU's
// hf_checkpoint_test): the fixtures' bfloat16 weights are exact in float32.
constexpr double kFloat32Tolerance = 1e-4;

// Bfloat16 compute (both the actor's model converted to bfloat16 and the
// learner's float32 parameters computing in bfloat16) against the float64
// reference: within kBFloat16Steps spacings of bfloat16 at the fixture's
// largest |logit| (BFloat16Tolerance). bfloat16 keeps 8 significant bits: a
// logit in [2^e, 2^(e+1)) is rounded to a multiple of 2^(e-7), so the final
// rounding alone moves a log-prob (target logit minus log-sum-exp) by up to
// one such spacing, and the rounded hidden states carry in more. Measured on
// the CPU (LibTorch 1.13, 2-core Debian 12 VM; the figure
// "bf16_*_in_spacings"): 0.87 to 2.02 spacings over the five fixtures (their
// largest logits are 13.1 to 17.5, so spacings of 2^-4 and 2^-3), the same
// for both schemes and the three paths (single, batch, KV decode). Four
// spacings (0.25 or 0.5 nats here) leave room for another device's
// accumulation order. The bound catches a broken bfloat16 path (NaN, wrong
// casts, garbage: whole nats off the -12 log-probs), not subtle model
// errors: those are the float32 check's to catch (1e-4, same device).
constexpr double kBFloat16Steps = 4;

// The spacing of bfloat16 numbers at magnitude x > 0: 2^(floor(log2 x) - 7).
double BFloat16Spacing(double x) { return std::ldexp(1.0, std::ilogb(x) - 7); }

// "[figure] Suite.Test/param: name=value" on stdout (collected by
// scripts/gpu_check/run-checks) and as a gtest property.
void Figure(const std::string& name, double value) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::cout << "[figure] " << info->test_suite_name() << "." << info->name() << ": " << name << "="
            << value << std::endl;
  ::testing::Test::RecordProperty(name, std::to_string(value));
}

torch::Device DeviceOf(const DeviceCase& c) { return torch::Device(c.device); }

// The fixture on the case's device with parameters of `dtype`.
Transformer LoadOn(const DeviceCase& c, torch::ScalarType dtype) {
  HfLoadOptions options;
  options.device = DeviceOf(c);
  options.dtype = dtype;
  auto model = LoadHfModel(hf_fixtures::HfFixtureDir(c.fixture), options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : Transformer(nullptr);
}

// The largest |logit| a float32 forward of `model` gives any position of
// the rows (each run alone).
double MaxAbsLogit(Transformer& model, const std::vector<std::vector<int>>& rows) {
  torch::NoGradGuard no_grad;
  double worst = 0;
  for (const auto& ids : rows) {
    torch::Tensor t =
        torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0);
    worst = std::max(worst, model->forward(t).abs().max().item<double>());
  }
  return worst;
}

// Prompts of different lengths (left padding) with ids inside every
// fixture's vocabulary (Llama's is 128256).
std::vector<std::vector<int>> Prompts() {
  return {{127999, 17, 3000, 12}, {5, 90000, 101000, 77, 8, 1}, {42}};
}
std::vector<const std::vector<int>*> Pointers(const std::vector<std::vector<int>>& rows) {
  std::vector<const std::vector<int>*> out;
  for (const auto& r : rows) out.push_back(&r);
  return out;
}

TEST_P(HfFixtureOnDevice, Float32LogProbsMatchTheReference) {
  const std::vector<ExpectedSequence> seqs =
      hf_fixtures::ReadHfExpected(hf_fixtures::HfFixtureDir(GetParam().fixture));
  ASSERT_FALSE(seqs.empty());
  Transformer model = LoadOn(GetParam(), torch::kFloat32);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->OutputWeight().device(), DeviceOf(GetParam()));
  const FixtureDiff single = hf_fixtures::SingleSequenceDiff(model, seqs, 1e-3);
  const double batch = hf_fixtures::BatchDiff(model, seqs);
  const double decode = hf_fixtures::DecodeDiff(model, seqs);
  Figure("f32_max_abs_single", single.max_abs);
  Figure("f32_max_abs_batch", batch);
  Figure("f32_max_abs_kv_decode", decode);
  Figure("f32_greedy_checked", single.greedy_checked);
  EXPECT_LT(single.max_abs, kFloat32Tolerance);
  EXPECT_LT(batch, kFloat32Tolerance);
  EXPECT_LT(decode, kFloat32Tolerance);
  EXPECT_GT(single.greedy_checked, 0);
  EXPECT_EQ(single.greedy_mismatches, 0) << single.first_mismatch;
}

TEST_P(HfFixtureOnDevice, BFloat16LogProbsWithinTheDocumentedTolerance) {
  const std::vector<ExpectedSequence> seqs =
      hf_fixtures::ReadHfExpected(hf_fixtures::HfFixtureDir(GetParam().fixture));
  // The actor's scheme: parameters converted to bfloat16.
  Transformer converted = LoadOn(GetParam(), torch::kBFloat16);
  ASSERT_TRUE(converted);
  // The learner's scheme: float32 parameters computing in bfloat16.
  Transformer mixed = LoadOn(GetParam(), torch::kFloat32);
  ASSERT_TRUE(mixed);
  std::vector<std::vector<int>> rows;
  for (const ExpectedSequence& s : seqs) rows.push_back(s.ids);
  const double max_logit = MaxAbsLogit(mixed, rows);
  const double tolerance = kBFloat16Steps * BFloat16Spacing(max_logit);
  Figure("max_abs_logit", max_logit);
  Figure("bf16_tolerance", tolerance);
  mixed->set_compute_dtype(torch::kBFloat16);
  auto check = [&](const std::string& scheme, Transformer& model) {
    SCOPED_TRACE(scheme);
    EXPECT_EQ(model->compute_dtype(), torch::kBFloat16);
    // Greedy is checked where the reference's top two are more than twice
    // the tolerance apart (closer pairs may swap).
    const FixtureDiff single = hf_fixtures::SingleSequenceDiff(model, seqs, 2 * tolerance);
    const double batch = hf_fixtures::BatchDiff(model, seqs);
    const double decode = hf_fixtures::DecodeDiff(model, seqs);
    Figure("bf16_" + scheme + "_max_abs_single", single.max_abs);
    Figure("bf16_" + scheme + "_max_abs_batch", batch);
    Figure("bf16_" + scheme + "_max_abs_kv_decode", decode);
    Figure("bf16_" + scheme + "_in_spacings",
           std::max({single.max_abs, batch, decode}) / BFloat16Spacing(max_logit));
    Figure("bf16_" + scheme + "_greedy_checked", single.greedy_checked);
    EXPECT_LT(single.max_abs, tolerance);
    EXPECT_LT(batch, tolerance);
    EXPECT_LT(decode, tolerance);
    EXPECT_GT(single.greedy_checked, 0);
    EXPECT_EQ(single.greedy_mismatches, 0) << single.first_mismatch;
  };
  check("converted", converted);
  check("mixed", mixed);
}

// Generate's KV-cache decoding on the device in float32: greedy, the same
// tokens and log-probs as recomputing the whole prefix every step
// (GenerateWithoutCache); sampled at T=1, behaviour log-probs equal to the
// training forward's (ComputeCompletionLogProbs) for the sampled tokens.
// (Sampled tokens themselves are not compared across the two paths: a draw
// within rounding of a CDF boundary may pick the neighbouring token.)
TEST_P(HfFixtureOnDevice, GenerateWithCacheMatchesWithout) {
  Transformer model = LoadOn(GetParam(), torch::kFloat32);
  ASSERT_TRUE(model);
  const std::vector<std::vector<int>> prompts = Prompts();
  SamplingOptions options;
  options.max_new_tokens = 8;
  options.greedy = true;
  auto cached = Generate(model, Pointers(prompts), {3, 4, 5}, options);
  auto plain = GenerateWithoutCache(model, Pointers(prompts), {3, 4, 5}, options);
  ASSERT_EQ(cached.size(), prompts.size());
  double worst = 0;
  for (size_t r = 0; r < prompts.size(); ++r) {
    EXPECT_EQ(cached[r].tokens, plain[r].tokens) << "row " << r;
    ASSERT_EQ(cached[r].logprobs.size(), plain[r].logprobs.size());
    for (size_t t = 0; t < cached[r].logprobs.size(); ++t) {
      worst = std::max(worst, double(std::abs(cached[r].logprobs[t] - plain[r].logprobs[t])));
    }
  }
  Figure("greedy_cache_vs_no_cache_max_abs", worst);
  EXPECT_LT(worst, kFloat32Tolerance);

  options.greedy = false;
  auto sampled = Generate(model, Pointers(prompts), {3, 4, 5}, options);
  std::vector<const std::vector<int>*> completions;
  for (const Sample& s : sampled) completions.push_back(&s.tokens);
  torch::NoGradGuard no_grad;
  const torch::Tensor forward =
      ComputeCompletionLogProbs(model, Pointers(prompts), completions, false)
          .logprobs.to(torch::kCPU, torch::kFloat64);
  worst = 0;
  for (size_t r = 0; r < sampled.size(); ++r) {
    ASSERT_EQ(sampled[r].tokens.size(), 8u);
    for (size_t t = 0; t < sampled[r].logprobs.size(); ++t) {
      worst = std::max(worst, std::abs(sampled[r].logprobs[t] - forward[r][t].item<double>()));
    }
  }
  Figure("sampled_cache_vs_training_forward_max_abs", worst);
  EXPECT_LT(worst, kFloat32Tolerance);
}

// The actor's generation on the device in bfloat16: valid tokens, the
// requested length (no stop tokens), finite non-positive behaviour
// log-probs, close to what the learner's forward (float32 parameters
// computing in bfloat16, and plain float32) gives the same tokens.
TEST_P(HfFixtureOnDevice, BFloat16GenerationIsCloseToTheTrainingForward) {
  Transformer actor = LoadOn(GetParam(), torch::kBFloat16);
  ASSERT_TRUE(actor);
  const std::vector<std::vector<int>> prompts = Prompts();
  SamplingOptions options;
  options.max_new_tokens = 8;
  const std::vector<Sample> samples = Generate(actor, Pointers(prompts), {11, 12, 13}, options);
  ASSERT_EQ(samples.size(), prompts.size());
  std::vector<const std::vector<int>*> completions;
  for (const Sample& s : samples) {
    ASSERT_EQ(s.tokens.size(), 8u);
    ASSERT_EQ(s.logprobs.size(), 8u);
    EXPECT_FALSE(s.stopped);
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      EXPECT_GE(s.tokens[t], 0);
      EXPECT_LT(s.tokens[t], actor->vocab_size());
      EXPECT_TRUE(std::isfinite(s.logprobs[t]));
      EXPECT_LE(s.logprobs[t], 0.0f);
    }
    completions.push_back(&s.tokens);
  }
  Transformer learner = LoadOn(GetParam(), torch::kFloat32);
  ASSERT_TRUE(learner);
  std::vector<std::vector<int>> rows;
  for (size_t r = 0; r < prompts.size(); ++r) {
    rows.push_back(prompts[r]);
    rows.back().insert(rows.back().end(), samples[r].tokens.begin(), samples[r].tokens.end());
  }
  const double tolerance = kBFloat16Steps * BFloat16Spacing(MaxAbsLogit(learner, rows));
  torch::NoGradGuard no_grad;
  const torch::Tensor exact =
      ComputeCompletionLogProbs(learner, Pointers(prompts), completions, false)
          .logprobs.to(torch::kCPU, torch::kFloat64);
  learner->set_compute_dtype(torch::kBFloat16);
  const torch::Tensor mixed =
      ComputeCompletionLogProbs(learner, Pointers(prompts), completions, false)
          .logprobs.to(torch::kCPU, torch::kFloat64);
  double vs_f32 = 0, vs_mixed = 0;
  for (size_t r = 0; r < samples.size(); ++r) {
    for (size_t t = 0; t < samples[r].logprobs.size(); ++t) {
      const double lp = samples[r].logprobs[t];
      vs_f32 = std::max(vs_f32, std::abs(lp - exact[r][t].item<double>()));
      vs_mixed = std::max(vs_mixed, std::abs(lp - mixed[r][t].item<double>()));
    }
  }
  Figure("bf16_actor_vs_f32_learner_max_abs", vs_f32);
  Figure("bf16_actor_vs_bf16_learner_max_abs", vs_mixed);
  Figure("bf16_tolerance", tolerance);
  EXPECT_LT(vs_f32, tolerance);
  EXPECT_LT(vs_mixed, tolerance);
}

// The tiny Qwen3 fixture as a run would build it for `placement` and `use`.
Transformer Policy(const Placement& placement, PolicyUse use) {
  const std::string dir = hf_fixtures::HfFixtureDir("qwen3_f32_tied");
  auto config = ReadHfModelConfig(dir);
  EXPECT_TRUE(config.ok()) << config.status();
  config->max_seq_len = 32;
  config->hf_path = dir;
  auto model = CreateInitialPolicy(*config, config->vocab_size, 0, placement, use);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : Transformer(nullptr);
}

// Placement resolution on this process and weight blobs across devices: a
// learner on the device broadcasts the blob a CPU learner would (float32,
// byte for byte), an actor on the device loads a float32 blob into bfloat16
// parameters, and a bfloat16 blob from the device loads on the CPU.
TEST_P(PolicyOnDevice, PlacementAndWeightBlobsAcrossDevices) {
  const bool cuda = GetParam().device != "cpu";
  auto placement = ResolvePlacement("actor.device", GetParam().device, "auto", 0);
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->ToString(), cuda ? GetParam().device + "/bfloat16" : "cpu/float32");
  const Placement on_device{cuda ? static_cast<int>(DeviceOf(GetParam()).index()) : -1,
                            ComputeDtype::kBFloat16};

  Transformer cpu = Policy(Placement(), PolicyUse::kTraining);
  Transformer learner = Policy(on_device, PolicyUse::kTraining);
  ASSERT_TRUE(cpu && learner);
  for (const auto& p : learner->parameters()) {
    EXPECT_EQ(p.device(), DeviceOf(GetParam()));
    EXPECT_EQ(p.scalar_type(), torch::kFloat32);
  }
  EXPECT_EQ(learner->compute_dtype(), torch::kBFloat16);
  const std::string blob = SerializeWeights(cpu, 7);
  EXPECT_EQ(SerializeWeights(learner, 7), blob);

  auto actor =
      CreateEmptyPolicy(cpu->config(), cpu->vocab_size(), on_device, PolicyUse::kInference);
  ASSERT_TRUE(actor.ok()) << actor.status();
  uint64_t version = 0;
  ASSERT_TRUE(LoadWeights(blob, *actor, &version).ok());
  EXPECT_EQ(version, 7u);
  auto want = cpu->named_parameters();
  auto got = (*actor)->named_parameters();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].value().device(), DeviceOf(GetParam())) << got[i].key();
    EXPECT_EQ(got[i].value().scalar_type(), torch::kBFloat16) << got[i].key();
    EXPECT_TRUE(torch::equal(got[i].value().cpu(), want[i].value().to(torch::kBFloat16)))
        << got[i].key();
  }
  const std::string narrow = SerializeWeights(*actor, 8);
  auto host = CreateEmptyPolicy(cpu->config(), cpu->vocab_size(),
                                Placement{-1, ComputeDtype::kBFloat16}, PolicyUse::kInference);
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_TRUE(LoadWeights(narrow, *host, nullptr).ok());
  EXPECT_EQ(SerializeWeights(*host, 8), narrow);
}

}  // namespace
}  // namespace rlvr::policy::device_checks
