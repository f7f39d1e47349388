#include "learner/trainer/trainer_device_checks.h"

#include <torch/torch.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/policy/hf_config.h"
#include "common/policy/model.h"
#include "common/tokenizer/tokenizer.h"
#include "learner/trainer/trainer.h"
#include "learner/trainer/trainer_test_data.h"

namespace rlvr::learner::device_checks {

void TrainerOnDevice::SetUp() {
  if (GetParam().rfind("cuda", 0) == 0 && !torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA: LibTorch sees no CUDA device (a `gpu`-labelled check)";
  }
}

namespace {

// `device` without its punctuation ("cuda:0" -> "cuda0").
std::string Alnum(const std::string& device) {
  std::string name;
  for (char c : device) {
    if (std::isalnum(static_cast<unsigned char>(c))) name += c;
  }
  return name;
}

}  // namespace

std::string DeviceName(const ::testing::TestParamInfo<std::string>& info) {
  return Alnum(info.param);
}

namespace {

namespace fs = std::filesystem;

using testing::FlatParams;
using testing::kTestMaxNewTokens;
constexpr int kMaxNewTokens = kTestMaxNewTokens;

std::vector<Group> MakeGroups(int n, uint64_t seed) { return testing::MakeTestGroups(n, seed); }

// "[figure] Suite.Test/param: name=value" on stdout and as a property.
void Figure(const std::string& name, double value) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::cout << "[figure] " << info->test_suite_name() << "." << info->name() << ": " << name << "="
            << value << std::endl;
  ::testing::Test::RecordProperty(name, std::to_string(value));
}

// A small built-in model, or the tiny Qwen3 fixture (tests/data/hf/
// qwen3_f32_tied: 151936-token vocabulary, hidden size 8) with a KL term,
// whose reference model is then held in the compute dtype too.
TrainerOptions Options(bool hf, const std::string& device, const std::string& dtype) {
  TrainerOptions o;
  o.model.d_model = 32;
  o.model.n_layers = 1;
  o.model.n_heads = 2;
  o.model.d_ff = 64;
  o.model.max_seq_len = 16;
  if (hf) {
    const char* src = std::getenv("RLVR_SOURCE_DIR");
    const std::string dir =
        std::string(src != nullptr ? src : ".") + "/tests/data/hf/qwen3_f32_tied";
    auto config = policy::ReadHfModelConfig(dir);
    EXPECT_TRUE(config.ok()) << config.status();
    if (config.ok()) {
      o.model = *config;
      o.model.max_seq_len = 16;
      o.model.hf_path = dir;
      o.vocab_size = config->vocab_size;
    }
    o.loss.kl_coef = 0.1;
  }
  o.model.compute_dtype = dtype;
  o.batching.mini_batches = 2;          // Two optimizer steps per update.
  o.batching.micro_batch_rollouts = 8;  // Several micro-batches per step.
  o.optim.lr = 1e-2;
  o.optim.warmup_steps = 1;
  o.optim.weight_decay = 0.01;
  o.learner.collective_timeout_s = 60;
  o.learner.threads = 1;
  o.learner.seed = 5;
  o.learner.device = device;
  o.max_new_tokens = kMaxNewTokens;
  o.total_updates = 10;
  return o;
}

double RelativeDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / a.norm().item<double>();
}
double Cosine(const torch::Tensor& a, const torch::Tensor& b) {
  return (a * b).sum().item<double>() / (a.norm().item<double>() * b.norm().item<double>());
}

std::unique_ptr<Trainer> MakeTrainer(const TrainerOptions& o) {
  auto t = Trainer::Create(o, nullptr);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

void ExpectParametersOn(policy::Transformer& model, const std::string& device) {
  for (const auto& p : model->parameters()) {
    EXPECT_EQ(p.device(), torch::Device(device));
    EXPECT_EQ(p.scalar_type(), torch::kFloat32);  // Master weights stay float32.
  }
}

// One update from the same start and groups: bfloat16 compute on the device
// against float32 on the CPU. Tolerances as for bfloat16 on the CPU
// (trainer_test's BFloat16ComputeMatchesFloat32Update). Measured with the
// CPU as the device (LibTorch 1.13, 2-core Debian 12 VM): fixture update
// cosine 0.9992, relative update difference 0.041, loss 1.7742 vs 1.7794;
// built-in 0.9978, 0.066, 0.4751 vs 0.4756. bfloat16 moves log-probs by up
// to ~0.1 nats on the fixture and AdamW's first steps divide each
// coordinate by its own gradient magnitude, so ~10% in the update is
// bfloat16 while the direction must stay (cosine 0.98).
TEST_P(TrainerOnDevice, BFloat16UpdateIsCloseToFloat32OnTheCpu) {
  for (const bool hf : {true, false}) {
    const std::string model_name = hf ? "qwen3_fixture" : "builtin";
    SCOPED_TRACE(model_name);
    auto reference = MakeTrainer(Options(hf, "cpu", "float32"));
    auto device = MakeTrainer(Options(hf, GetParam(), "bfloat16"));
    ASSERT_TRUE(reference && device);
    ExpectParametersOn(device->model(), GetParam());
    EXPECT_EQ(device->model()->compute_dtype(), torch::kBFloat16);
    const torch::Tensor start = FlatParams(reference->model());
    ASSERT_TRUE(torch::equal(start, FlatParams(device->model())));
    auto a = reference->RunUpdate(MakeGroups(6, 31), false);
    auto b = device->RunUpdate(MakeGroups(6, 31), false);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(std::isfinite(b->diagnostics.loss()));
    ExpectParametersOn(device->model(), GetParam());
    const torch::Tensor da = FlatParams(reference->model()) - start;
    const torch::Tensor db = FlatParams(device->model()) - start;
    const double cosine = Cosine(da, db);
    const double diff = RelativeDiff(da, db);
    const double loss_a = a->diagnostics.loss(), loss_b = b->diagnostics.loss();
    Figure(model_name + "_update_cosine", cosine);
    Figure(model_name + "_update_relative_difference", diff);
    Figure(model_name + "_loss_float32_cpu", loss_a);
    Figure(model_name + "_loss_bfloat16_device", loss_b);
    EXPECT_GT(cosine, 0.98);
    EXPECT_LT(diff, 0.25);
    EXPECT_LE(std::abs(loss_b - loss_a), 0.1 * std::abs(loss_a));
  }
}

// Float32 on the device computes the CPU's update up to summation order:
// two updates from the same start, parameters within 1e-4 (relative; the
// two-rank Gloo run, a pure reordering of the same sums, differs from one
// rank by under 1e-5) and losses within 1e-4 (relative).
TEST_P(TrainerOnDevice, Float32UpdatesMatchTheCpu) {
  for (const bool hf : {true, false}) {
    const std::string model_name = hf ? "qwen3_fixture" : "builtin";
    SCOPED_TRACE(model_name);
    auto reference = MakeTrainer(Options(hf, "cpu", "float32"));
    auto device = MakeTrainer(Options(hf, GetParam(), "float32"));
    ASSERT_TRUE(reference && device);
    EXPECT_EQ(device->model()->compute_dtype(), torch::kFloat32);
    double worst_loss = 0;
    for (uint64_t k = 0; k < 2; ++k) {
      auto a = reference->RunUpdate(MakeGroups(6, 50 + k), false);
      auto b = device->RunUpdate(MakeGroups(6, 50 + k), false);
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      worst_loss = std::max(worst_loss, std::abs(a->diagnostics.loss() - b->diagnostics.loss()) /
                                            std::abs(a->diagnostics.loss()));
    }
    const double diff = RelativeDiff(FlatParams(reference->model()), FlatParams(device->model()));
    Figure(model_name + "_parameter_relative_difference", diff);
    Figure(model_name + "_loss_relative_difference", worst_loss);
    EXPECT_LT(diff, 1e-4);
    EXPECT_LT(worst_loss, 1e-4);
  }
}

// A learner on the device (compute dtype auto: bfloat16 on CUDA, float32 on
// the CPU) trains float32 master weights there; its checkpoint is in the CPU
// format (a CPU trainer resumes it to the same parameters), and a trainer on
// the device resumes it (AdamW state moved back to the device) and continues
// as the original does: the same next update, up to the device's summation
// order (CUDA's index_add in the embedding backward is not deterministic).
TEST_P(TrainerOnDevice, CheckpointWrittenOnTheDeviceResumesOnTheCpuAndTheDevice) {
  TrainerOptions o = Options(/*hf=*/false, GetParam(), "auto");
  o.checkpoint_dir = (fs::path(::testing::TempDir()) /
                      absl::StrCat("rlvr_trainer_device_", Alnum(GetParam()), "_", ::getpid()))
                         .string();
  fs::remove_all(o.checkpoint_dir);
  auto original = MakeTrainer(o);
  ASSERT_NE(original, nullptr);
  ExpectParametersOn(original->model(), GetParam());
  auto r = original->RunUpdate(MakeGroups(6, 40), false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(std::isfinite(r->diagnostics.loss()));
  ASSERT_TRUE(original->SaveCheckpoint("ingest-state").ok());

  TrainerOptions on_cpu = o;
  on_cpu.learner.device = "cpu";
  auto cpu = MakeTrainer(on_cpu);
  ASSERT_NE(cpu, nullptr);
  auto cpu_state = cpu->Resume();
  ASSERT_TRUE(cpu_state.ok()) << cpu_state.status();
  EXPECT_EQ(*cpu_state, "ingest-state");
  EXPECT_EQ(cpu->step(), 1u);
  EXPECT_TRUE(torch::equal(FlatParams(cpu->model()), FlatParams(original->model())));

  auto resumed = MakeTrainer(o);
  ASSERT_NE(resumed, nullptr);
  ASSERT_TRUE(resumed->Resume().ok());
  ExpectParametersOn(resumed->model(), GetParam());
  EXPECT_TRUE(torch::equal(FlatParams(resumed->model()), FlatParams(original->model())));
  auto next = resumed->RunUpdate(MakeGroups(6, 41), false);
  auto same = original->RunUpdate(MakeGroups(6, 41), false);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(std::isfinite(next->diagnostics.loss()));
  const double diff = RelativeDiff(FlatParams(original->model()), FlatParams(resumed->model()));
  Figure("resumed_vs_uninterrupted_relative_difference", diff);
  if (GetParam() == "cpu") {
    EXPECT_EQ(diff, 0.0);
  } else {
    EXPECT_LT(diff, 1e-3);
  }
  fs::remove_all(o.checkpoint_dir);
}

}  // namespace
}  // namespace rlvr::learner::device_checks
