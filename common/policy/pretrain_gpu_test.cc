// `rlvr pretrain` on a GPU (pretrain.device): the model is placed on cuda:0
// for training, the loss falls, and the weights come back to the CPU when
// saved. Skips without a CUDA device (the `gpu` label).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "common/policy/factory.h"
#include "common/policy/model.h"
#include "common/policy/placement.h"
#include "common/policy/pretrain.h"
#include "common/policy/weights.h"

namespace rlvr::policy {
namespace {

TEST(PretrainGpuTest, TrainsOnTheDeviceItWasPlacedOn) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto placement = ResolvePlacement("pretrain.device", "cuda", "float32", /*rank=*/0);
  ASSERT_TRUE(placement.ok()) << placement.status();
  ASSERT_TRUE(placement->is_cuda());
  TaskConfig tc;
  tc.train_size = 64;
  tc.heldout_size = 8;
  tc.max_digits = 1;
  auto tokenizer = MakeCharTokenizer();
  auto task = MakeTask(tc, *tokenizer, TaskOptions{});
  ASSERT_TRUE(task.ok()) << task.status();
  ModelConfig mc;
  mc.d_model = 32;
  mc.n_layers = 1;
  mc.n_heads = 2;
  mc.d_ff = 64;
  auto model =
      CreateInitialPolicy(mc, tokenizer->vocab_size(), 3, *placement, PolicyUse::kTraining);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->OutputWeight().is_cuda());
  PretrainOptions options;
  options.config.steps = 40;
  options.config.batch_size = 16;
  options.config.warmup_steps = 5;
  std::vector<PretrainProgress> progress;
  options.log_every = 40;
  options.on_progress = [&](const PretrainProgress& p) { progress.push_back(p); };
  auto result = Pretrain(*model, *tokenizer, **task, options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(progress.empty());
  EXPECT_LT(progress.back().loss, 0.75 * std::log(static_cast<double>(tokenizer->vocab_size())));
  EXPECT_TRUE((*model)->OutputWeight().is_cuda());
  std::string blob;
  std::vector<uint32_t> crcs;
  SerializeWeightsInto(*model, 0, &blob, 1 << 20, &crcs);
  EXPECT_GT(blob.size(), 0u);
}

}  // namespace
}  // namespace rlvr::policy
