#include "common/config/run_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace rlvr {
namespace {

using ::testing::HasSubstr;

TEST(RunConfigTest, DefaultsAreValid) {
  auto c = LoadRunConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->loss.estimator, "dfpo");
  EXPECT_EQ(c->loss.dfpo_transform, "min_replace");
  EXPECT_EQ(c->batching.reward_balance, "downsample");
  EXPECT_TRUE(c->batching.query_preserved);
}

// G moved from actor.group_size to learner.group_size (the learner's leases
// ask for it; actors only follow): the old name still works.
TEST(RunConfigTest, GroupSizeIsALearnerKeyAndTheOldNameStillWorks) {
  auto c = LoadRunConfig("", {"learner.group_size=6"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->learner.group_size, 6);
  auto old = LoadRunConfig("", {"actor.group_size=12"});
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->learner.group_size, 12);
}

TEST(RunConfigTest, ShippedConfigsLoad) {
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(src) + "/configs")) {
    if (e.path().extension() != ".yaml") continue;
    auto c = LoadRunConfig(e.path().string(), {});
    EXPECT_TRUE(c.ok()) << e.path() << ": " << c.status();
    ++n;
  }
  EXPECT_GT(n, 0);
}

TEST(RunConfigTest, YamlDumpReloadsIdentically) {
  auto c = LoadRunConfig("", {"loss.estimator=grpo", "model.d_model=64", "run.name=x y"});
  ASSERT_TRUE(c.ok()) << c.status();
  std::string path = testing::TempDir() + "/resolved.yaml";
  std::ofstream(path) << RunConfigToYaml(*c);
  auto d = LoadRunConfig(path, {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(RunConfigToYaml(*c), RunConfigToYaml(*d));
  EXPECT_EQ(d->loss.estimator, "grpo");
  EXPECT_EQ(d->run.name, "x y");
}

// loss.behaviour_weight auto follows the data the learner trains on: groups
// of an older policy (max_policy_lag > 0) get the truncated weights, unless
// lp_old is the behaviour policy itself; an explicit value is kept.
TEST(RunConfigTest, BehaviourWeightAutoFollowsThePolicyLag) {
  struct Case {
    std::vector<std::string> overrides;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {{"learner.max_policy_lag=0"}, "none"},
      {{"learner.max_policy_lag=1"}, "truncated"},
      {{"learner.max_policy_lag=2", "loss.old_logprobs=behaviour"}, "none"},
      {{"learner.max_policy_lag=0", "loss.behaviour_weight=truncated"}, "truncated"},
      {{"learner.max_policy_lag=1", "loss.behaviour_weight=none"}, "none"},
  };
  for (const Case& k : cases) {
    auto c = LoadRunConfig("", k.overrides);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->loss.behaviour_weight, k.expected) << k.overrides[0];
    // The resolved value is what the run records, and it reloads as itself.
    std::string path = testing::TempDir() + "/behaviour_weight.yaml";
    std::ofstream(path) << RunConfigToYaml(*c);
    auto d = LoadRunConfig(path, {});
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->loss.behaviour_weight, k.expected);
  }
  EXPECT_THAT(LoadRunConfig("", {"loss.behaviour_weight_cap=0.5"}).status().message(),
              HasSubstr("loss.behaviour_weight_cap"));
  EXPECT_THAT(LoadRunConfig("", {"loss.behaviour_weight=always"}).status().message(),
              HasSubstr("loss.behaviour_weight"));
}

TEST(RunConfigTest, CrossFieldErrorsNameTheKey) {
  auto c = LoadRunConfig("", {"model.d_model=100", "model.n_heads=3"});
  EXPECT_THAT(c.status().message(), HasSubstr("model.n_heads"));
  c = LoadRunConfig("", {"task.ops=+/"});
  EXPECT_THAT(c.status().message(), HasSubstr("task.ops"));
  c = LoadRunConfig("", {"learner.groups_per_update=100", "learner.buffer_groups=10"});
  EXPECT_THAT(c.status().message(), HasSubstr("learner.groups_per_update"));
  // An unknown loss.estimator is rejected against the estimator registry, which
  // common/ does not see: learner/core/estimators/registry_test.cc
  // (CheckEstimatorName) and tests/run_e2e_test.cc (every command fails early).
}

TEST(RunConfigTest, ChatTemplateKwargsAreCheckedAtLoad) {
  auto c = LoadRunConfig("", {"task.prompt_format=model", "model.hf_path=/m",
                              "task.chat_template_kwargs=enable_thinking=false"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task.chat_template_kwargs, "enable_thinking=false");
  c = LoadRunConfig("", {"task.prompt_format=model", "task.chat_template_kwargs=enable_thinking"});
  EXPECT_THAT(c.status().message(), HasSubstr("task.chat_template_kwargs"));
  c = LoadRunConfig("", {"task.prompt_format=chatml", "task.chat_template_kwargs=a=1"});
  EXPECT_THAT(c.status().message(), HasSubstr("only task.prompt_format model uses it"));
}

// The actor's engine keys: continuous by default; a KV pool that cannot
// hold one row of model.max_seq_len (plus two blocks) is refused, naming
// the key; 0 means the automatic size.
TEST(RunConfigTest, ActorEngineKeys) {
  auto c = LoadRunConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->actor.engine, "continuous");
  EXPECT_EQ(c->actor.max_batch_rows, 64);
  EXPECT_EQ(c->actor.kv_cache_tokens, 0);
  EXPECT_EQ(c->actor.kv_block_tokens, 16);
  c = LoadRunConfig("", {"actor.engine=static", "actor.max_batch_rows=8",
                         "actor.kv_cache_tokens=80", "actor.kv_block_tokens=16"});
  ASSERT_TRUE(c.ok()) << c.status();  // 48 + 2 x 16 = 80.
  EXPECT_EQ(c->actor.engine, "static");
  c = LoadRunConfig("", {"actor.kv_cache_tokens=79"});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("actor.kv_cache_tokens"));
  c = LoadRunConfig("", {"actor.engine=dynamic"});
  EXPECT_THAT(c.status().message(), HasSubstr("actor.engine"));
  c = LoadRunConfig("", {"actor.max_batch_rows=0"});
  EXPECT_THAT(c.status().message(), HasSubstr("actor.max_batch_rows"));
  c = LoadRunConfig("", {"actor.kv_block_tokens=0"});
  EXPECT_THAT(c.status().message(), HasSubstr("actor.kv_block_tokens"));
}

TEST(RunConfigTest, DeviceAndComputeDtypeAreCheckedAtLoad) {
  auto c = LoadRunConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->learner.device, "auto");
  EXPECT_EQ(c->actor.device, "auto");
  EXPECT_EQ(c->model.compute_dtype, "auto");
  c = LoadRunConfig("",
                    {"learner.device=cuda:1", "actor.device=cpu", "model.compute_dtype=bfloat16"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->learner.device, "cuda:1");
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda0", "CPU", ""}) {
    SCOPED_TRACE(bad);
    c = LoadRunConfig("", {absl::StrCat("learner.device=", bad)});
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(c.status().message(), HasSubstr("learner.device"));
    c = LoadRunConfig("", {absl::StrCat("actor.device=", bad)});
    EXPECT_THAT(c.status().message(), HasSubstr("actor.device"));
  }
  c = LoadRunConfig("", {"model.compute_dtype=float16"});
  EXPECT_THAT(c.status().message(), HasSubstr("model.compute_dtype"));
  auto parsed = ParseDeviceSetting("k", "cuda:12");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->kind, DeviceSetting::Kind::kCuda);
  EXPECT_EQ(parsed->index, 12);
  parsed = ParseDeviceSetting("k", "cuda");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->index, -1);
}

// pretrain.device, like the other devices: auto by default, checked at load.
TEST(RunConfigTest, PretrainDeviceIsCheckedAtLoad) {
  auto c = LoadRunConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->pretrain.device, "auto");
  c = LoadRunConfig("", {"pretrain.device=cuda"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->pretrain.device, "cuda");
  c = LoadRunConfig("", {"pretrain.device=gpu"});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("pretrain.device"));
}

// The base and final evaluations: -1 follows eval.prompts / eval.pass_k, 0
// turns them off, a size is checked against the held-out split.
TEST(RunConfigTest, BaseAndFinalEvaluationsAreSizedOrOff) {
  auto c = LoadRunConfig("", {"eval.prompts=40", "eval.pass_k=3"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(BaseEvalPrompts(c->eval), 40);
  EXPECT_EQ(BaseEvalPassK(c->eval), 3);
  EXPECT_EQ(FinalEvalPrompts(c->eval), 40);
  c = LoadRunConfig("", {"eval.base_prompts=0", "eval.final_prompts=12", "eval.base_pass_k=0"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(BaseEvalPrompts(c->eval), 0);
  EXPECT_EQ(BaseEvalPassK(c->eval), 0);
  EXPECT_EQ(FinalEvalPrompts(c->eval), 12);
  c = LoadRunConfig("", {"task.heldout_size=50", "eval.prompts=50", "eval.final_prompts=51"});
  EXPECT_THAT(c.status().message(), HasSubstr("eval.final_prompts"));
  c = LoadRunConfig("", {"eval.base_prompts=-2"});
  EXPECT_THAT(c.status().message(), HasSubstr("eval.base_prompts"));
}

// The front door's pool of streams awaiting Hello: keys with defaults, the
// per-address bound no larger than the pool.
TEST(RunConfigTest, AwaitingHelloBoundsAreChecked) {
  auto c = LoadRunConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->learner.max_awaiting_hello, 64);
  EXPECT_EQ(c->learner.max_awaiting_hello_per_peer, 8);
  c = LoadRunConfig("", {"learner.max_awaiting_hello=4", "learner.max_awaiting_hello_per_peer=5"});
  EXPECT_THAT(c.status().message(), HasSubstr("learner.max_awaiting_hello_per_peer"));
}

TEST(RunConfigTest, MissingFileIsNotFound) {
  auto c = LoadRunConfig("/nonexistent/x.yaml", {});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace rlvr
