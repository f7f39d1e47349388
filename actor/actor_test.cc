// The actor against the in-process fake learner (real rlvr.v1 gRPC services
// on 127.0.0.1:0): weights, leases, groups, faults and shutdown.
#include "actor/actor.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "actor/testing/fake_learner.h"
#include "common/policy/logprobs.h"
#include "common/policy/model.h"
#include "common/policy/weights.h"
#include "common/tasks/task.h"
#include "common/testing/grpc_testing.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr::actor {
namespace {

using testing::Corruption;
using testing::FakeLearner;
using testing::FakeLearnerOptions;

constexpr double kWaitS = 60;  // Upper bound for any wait; tests normally take < 1 s per step.

ModelConfig SmallModel() {
  ModelConfig c;
  c.d_model = 32;
  c.n_layers = 1;
  c.n_heads = 2;
  c.d_ff = 64;
  c.max_seq_len = 32;
  return c;
}

TaskConfig SmallTask() {
  TaskConfig t;
  t.train_size = 100;
  t.heldout_size = 10;
  return t;
}

double MetricValue(prometheus::Registry& registry, const std::string& name) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name || family.metric.empty()) continue;
    const auto& m = family.metric[0];
    switch (family.type) {
      case prometheus::MetricType::Counter:
        return m.counter.value;
      case prometheus::MetricType::Gauge:
        return m.gauge.value;
      case prometheus::MetricType::Histogram:
        return static_cast<double>(m.histogram.sample_count);
      default:
        return -1;
    }
  }
  return -1;
}

template <typename Pred>
bool WaitUntil(Pred pred, double timeout_s = kWaitS) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class ActorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    tokenizer_ = MakeCharTokenizer();
    auto task = MakeTask(SmallTask(), *tokenizer_, TaskOptions{});
    ASSERT_TRUE(task.ok()) << task.status();
    task_ = std::move(*task);
    registry_ = std::make_shared<prometheus::Registry>();
  }

  void TearDown() override {
    if (actor_) actor_->Shutdown();
    actor_.reset();
    learner_.reset();
  }

  // A model with its own seed = its own version's weights.
  policy::Transformer MakeModel(uint64_t seed) {
    auto model = policy::CreateTransformer(SmallModel(), tokenizer_->vocab_size(), seed);
    EXPECT_TRUE(model.ok()) << model.status();
    return *model;
  }

  FakeLearnerOptions LearnerOptions(int prompts, int group_size) {
    FakeLearnerOptions o;
    auto p = testing::PromptsFromTask(*task_, *tokenizer_, prompts);
    EXPECT_TRUE(p.ok());
    o.prompts = *p;
    o.group_size = group_size;
    o.sampling.set_temperature(1.0);
    o.sampling.set_top_p(1.0);
    o.sampling.set_max_new_tokens(6);
    o.sampling.add_stop_token_ids(tokenizer_->eos_id());
    o.sampling.set_seed(77);
    o.vocab_size = tokenizer_->vocab_size();
    o.chunk_bytes = 4096;  // Several chunks per version.
    return o;
  }

  void StartLearner(const FakeLearnerOptions& o) {
    auto learner = FakeLearner::Start(o);
    ASSERT_TRUE(learner.ok()) << learner.status();
    learner_ = std::move(*learner);
  }

  ActorOptions MakeActorOptions(int capacity) {
    ActorOptions o;
    o.learner_address = learner_->address();
    o.actor_id = "test-actor";
    o.model = SmallModel();
    o.task = SmallTask();
    o.actor.max_batch_prompts = capacity;
    o.actor.threads = 1;
    o.actor.reconnect_initial_s = 0.02;
    o.actor.reconnect_max_s = 0.2;
    o.actor.shutdown_deadline_s = 10;
    o.random_seed = 5;
    return o;
  }

  void StartActor(const ActorOptions& o) {
    auto actor = Actor::Create(o, registry_);
    ASSERT_TRUE(actor.ok()) << actor.status();
    actor_ = std::move(*actor);
    ASSERT_TRUE(actor_->Start().ok());
  }

  std::string Health() {
    auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", actor_->health_port()),
                                       grpc::InsecureChannelCredentials());
    auto h = CheckHealth(channel, "", 5);
    return h.ok() ? *h : std::string(h.status().message());
  }

  // Every completion's behaviour log-probs equal `model`'s training forward
  // within 1e-5, and rewards equal the verifier's.
  void ExpectGroupsMatch(const std::vector<FakeLearner::Received>& received,
                         policy::Transformer& model) {
    EXPECT_LT(MaxLogProbError(received, model), 1e-5);
  }

  // Largest |behaviour log-prob - training-forward log-prob| over all tokens.
  double MaxLogProbError(const std::vector<FakeLearner::Received>& received,
                         policy::Transformer& model) {
    torch::NoGradGuard no_grad;
    std::vector<std::vector<int>> prompts, completions;
    for (const auto& r : received) {
      for (const auto& c : r.group.completions()) {
        prompts.emplace_back(r.lease.prompt_token_ids().begin(), r.lease.prompt_token_ids().end());
        completions.emplace_back(c.token_ids().begin(), c.token_ids().end());
        const Verdict v =
            task_->Verify(r.lease.answer(), CompletionText(*tokenizer_, completions.back()));
        EXPECT_EQ(c.reward(), static_cast<float>(v.reward));
      }
    }
    std::vector<const std::vector<int>*> pp, cp;
    for (size_t i = 0; i < prompts.size(); ++i) {
      pp.push_back(&prompts[i]);
      cp.push_back(&completions[i]);
    }
    auto lp = policy::ComputeCompletionLogProbs(model, pp, cp, false);
    auto lpa = lp.logprobs.accessor<float, 2>();
    int row = 0;
    double max_err = 0;
    for (const auto& r : received) {
      for (const auto& c : r.group.completions()) {
        for (int t = 0; t < c.behaviour_logprobs_size(); ++t) {
          max_err = std::max(max_err,
                             std::abs(static_cast<double>(c.behaviour_logprobs(t)) - lpa[row][t]));
        }
        ++row;
      }
    }
    return max_err;
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Task> task_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<FakeLearner> learner_;
  std::unique_ptr<Actor> actor_;
};

TEST_F(ActorTest, ReceivesWeightsLeasesAndReturnsCompleteGroups) {
  constexpr int kPrompts = 12, kG = 4;
  StartLearner(LearnerOptions(kPrompts, kG));
  policy::Transformer model = MakeModel(21);
  StartActor(MakeActorOptions(/*capacity=*/4));
  // No weights yet: not serving, and no group is generated.
  EXPECT_EQ(Health(), "NOT_SERVING");
  learner_->PublishWeights(1, policy::SerializeWeights(model, 1));

  ASSERT_TRUE(learner_->WaitForGroups(kPrompts, kWaitS));
  auto received = learner_->accepted();
  ASSERT_EQ(static_cast<int>(received.size()), kPrompts);
  std::set<std::string> prompt_ids;
  for (const auto& r : received) {
    EXPECT_EQ(r.group.policy_version(), 1u);
    EXPECT_EQ(r.group.completions_size(), kG);
    EXPECT_EQ(r.group.prompt_id(), r.lease.prompt_id());
    prompt_ids.insert(r.group.prompt_id());
  }
  EXPECT_EQ(static_cast<int>(prompt_ids.size()), kPrompts);
  ExpectGroupsMatch(received, model);

  EXPECT_TRUE(WaitUntil([&] { return actor_->serving(); }));
  EXPECT_EQ(Health(), "SERVING");
  const auto fs = learner_->stats();
  EXPECT_EQ(fs.sessions_opened, 1);
  EXPECT_EQ(fs.unknown_lease_groups, 0);
  EXPECT_EQ(fs.wrong_size_groups, 0);
  EXPECT_EQ(fs.stale_groups, 0);
  EXPECT_LE(fs.max_outstanding, 4);
  ASSERT_EQ(fs.incarnations.size(), 1u);
  EXPECT_FALSE(fs.incarnations[0].empty());
  // Both ends speak batch_messages: groups go out in RolloutBatches, leases
  // come in LeaseBatches.
  EXPECT_EQ(fs.single_groups, 0);
  EXPECT_GE(fs.group_batches, 1);
  EXPECT_LT(fs.group_batches, kPrompts);
  EXPECT_GE(fs.lease_batches, 1);

  const ActorStats s = actor_->stats();
  EXPECT_EQ(s.policy_version, 1u);
  EXPECT_EQ(s.weight_syncs, 1u);
  EXPECT_EQ(s.weight_sync_failures, 0u);
  EXPECT_EQ(s.groups_sent, static_cast<uint64_t>(kPrompts));
  EXPECT_LE(s.max_leases_held, 4);
  EXPECT_TRUE(WaitUntil([&] { return actor_->stats().groups_accepted == kPrompts; }));

  EXPECT_EQ(MetricValue(*registry_, "rlvr_actor_groups_sent_total"), kPrompts);
  EXPECT_EQ(MetricValue(*registry_, "rlvr_actor_policy_version"), 1);
  EXPECT_EQ(MetricValue(*registry_, "rlvr_actor_session_up"), 1);
  EXPECT_EQ(MetricValue(*registry_, "rlvr_actor_weight_sync_seconds"), 1);
  EXPECT_GT(MetricValue(*registry_, "rlvr_actor_tokens_generated_total"), kPrompts * kG - 1);
  EXPECT_GE(MetricValue(*registry_, "rlvr_actor_generation_seconds"), 1);
  EXPECT_EQ(MetricValue(*registry_, "rlvr_actor_weight_sync_failures_total"), 0);

  EXPECT_TRUE(actor_->Shutdown());
  EXPECT_TRUE(WaitUntil([&] { return learner_->stats().sessions_closed_cleanly == 1; }));
}

// An older learner (no Welcome.batch_messages, single leases and acks): the
// actor sends one RolloutGroup per message and never a RolloutBatch.
TEST_F(ActorTest, SpeaksOneGroupPerMessageToAnOlderLearner) {
  constexpr int kPrompts = 8, kG = 2;
  FakeLearnerOptions o = LearnerOptions(kPrompts, kG);
  o.batch_messages = false;
  StartLearner(o);
  policy::Transformer model = MakeModel(5);
  StartActor(MakeActorOptions(/*capacity=*/4));
  learner_->PublishWeights(1, policy::SerializeWeights(model, 1));
  ASSERT_TRUE(learner_->WaitForGroups(kPrompts, kWaitS));
  EXPECT_TRUE(WaitUntil([&] { return actor_->stats().groups_accepted == kPrompts; }));
  const auto fs = learner_->stats();
  EXPECT_EQ(fs.single_groups, kPrompts);
  EXPECT_EQ(fs.group_batches, 0);
  EXPECT_EQ(fs.unexpected_batches, 0);
  EXPECT_EQ(fs.lease_batches, 0);
  EXPECT_TRUE(actor_->Shutdown());
}

TEST_F(ActorTest, ReconnectsAfterTheStreamIsDroppedMidBatchAndContinues) {
  constexpr int kPrompts = 40;
  auto lo = LearnerOptions(kPrompts, 4);
  StartLearner(lo);
  policy::Transformer model = MakeModel(22);
  learner_->PublishWeights(1, policy::SerializeWeights(model, 1));
  StartActor(MakeActorOptions(/*capacity=*/4));

  ASSERT_TRUE(learner_->WaitForGroups(4, kWaitS));
  learner_->DropSessions();  // The actor is generating its next batch now.
  ASSERT_TRUE(learner_->WaitForSessions(2, kWaitS));
  ASSERT_TRUE(learner_->WaitForGroups(12, kWaitS));
  learner_->DropSessions();
  ASSERT_TRUE(learner_->WaitForSessions(3, kWaitS));
  // Every prompt is eventually answered exactly once, by the one version.
  ASSERT_TRUE(learner_->WaitForGroups(kPrompts, kWaitS));
  auto received = learner_->accepted();
  EXPECT_EQ(static_cast<int>(received.size()), kPrompts);
  ExpectGroupsMatch(received, model);

  const auto fs = learner_->stats();
  ASSERT_GE(fs.incarnations.size(), 3u);
  // Same process: same incarnation; it already held version 1.
  EXPECT_EQ(fs.incarnations[0], fs.incarnations[1]);
  EXPECT_EQ(fs.hello_versions[1], 1u);
  EXPECT_EQ(fs.unknown_lease_groups, 0);  // Work of a dead session is never sent on a new one.
  const ActorStats s = actor_->stats();
  EXPECT_GE(s.reconnects, 2u);
  EXPECT_GE(s.sessions, 3u);
  EXPECT_GE(MetricValue(*registry_, "rlvr_actor_reconnects_total"), 2);
  EXPECT_EQ(s.weight_syncs, 1u);  // The weight watch is independent of the session.
}

TEST_F(ActorTest, CorruptWeightTransfersAreRejectedRetriedAndNeverUsed) {
  auto lo = LearnerOptions(/*prompts=*/16, 4);
  lo.cycle = true;
  lo.enforce_min_version = false;
  StartLearner(lo);
  policy::Transformer v1 = MakeModel(31);
  policy::Transformer v2 = MakeModel(32);
  ActorOptions ao = MakeActorOptions(/*capacity=*/4);
  StartActor(ao);

  // The very first transfer is spoiled: the actor must not serve until a good one arrives.
  learner_->CorruptNextTransfers(Corruption::kFlipByte, 1);
  learner_->PublishWeights(1, policy::SerializeWeights(v1, 1));
  ASSERT_TRUE(WaitUntil([&] { return actor_->policy_version() == 1; }));
  EXPECT_GE(actor_->stats().weight_sync_failures, 1u);
  ASSERT_TRUE(learner_->WaitForGroups(8, kWaitS));

  // Version 2: a bad chunk CRC, then a truncated stream, then a good copy.
  learner_->CorruptNextTransfers(Corruption::kBadChunkCrc, 1);
  learner_->PublishWeights(2, policy::SerializeWeights(v2, 2));
  ASSERT_TRUE(WaitUntil([&] { return actor_->stats().weight_sync_failures >= 2; }));
  learner_->CorruptNextTransfers(Corruption::kTruncate, 1);
  ASSERT_TRUE(WaitUntil([&] { return actor_->policy_version() == 2; }));
  const size_t before = learner_->accepted().size();
  ASSERT_TRUE(learner_->WaitForGroups(static_cast<int>(before) + 8, kWaitS));
  learner_->SetLeasing(false);
  actor_->Shutdown();

  const ActorStats s = actor_->stats();
  EXPECT_GE(s.weight_sync_failures, 2u);
  EXPECT_EQ(s.weight_syncs, 2u);  // Only the good copies were staged.
  EXPECT_EQ(MetricValue(*registry_, "rlvr_actor_weight_sync_failures_total"),
            static_cast<double>(s.weight_sync_failures));
  EXPECT_GE(learner_->stats().corrupted_transfers, 2);

  std::vector<FakeLearner::Received> by_v1, by_v2;
  for (const auto& r : learner_->accepted()) {
    ASSERT_TRUE(r.group.policy_version() == 1 || r.group.policy_version() == 2);
    (r.group.policy_version() == 1 ? by_v1 : by_v2).push_back(r);
  }
  ASSERT_FALSE(by_v1.empty());
  ASSERT_FALSE(by_v2.empty());
  // Each group was generated by exactly the good weights of its version.
  ExpectGroupsMatch(by_v1, v1);
  ExpectGroupsMatch(by_v2, v2);
  // The check is sharp: the other version's weights do not fit.
  EXPECT_GT(MaxLogProbError(by_v2, v1), 1e-3);
}

TEST_F(ActorTest, NeverHoldsMoreLeasesThanItsCapacity) {
  constexpr int kPrompts = 20;
  auto lo = LearnerOptions(kPrompts, 2);
  lo.extra_grants = 3;  // A misbehaving learner over-grants.
  StartLearner(lo);
  policy::Transformer model = MakeModel(41);
  learner_->PublishWeights(1, policy::SerializeWeights(model, 1));
  StartActor(MakeActorOptions(/*capacity=*/2));
  ASSERT_TRUE(learner_->WaitForGroups(kPrompts, kWaitS));
  EXPECT_LE(actor_->stats().max_leases_held, 2);
  EXPECT_GE(learner_->stats().leases_returned, 3);
  EXPECT_GE(actor_->stats().leases_returned, 3u);
}

TEST_F(ActorTest, WaitsForWeightsTheLeaseRequires) {
  auto lo = LearnerOptions(/*prompts=*/8, 2);
  lo.max_policy_lag = 0;  // Leases demand the newest version.
  StartLearner(lo);
  policy::Transformer v1 = MakeModel(51);
  policy::Transformer v2 = MakeModel(52);
  learner_->PublishWeights(1, policy::SerializeWeights(v1, 1));
  StartActor(MakeActorOptions(/*capacity=*/2));
  ASSERT_TRUE(learner_->WaitForGroups(2, kWaitS));
  // New leases now require version 2; the actor must wait for it (or return
  // them), never answer them with version 1.
  learner_->PublishWeights(2, policy::SerializeWeights(v2, 2));
  ASSERT_TRUE(learner_->WaitForGroups(8, kWaitS));
  EXPECT_EQ(learner_->stats().stale_groups, 0);
}

TEST_F(ActorTest, RefetchesWeightsWhenTheLearnerGoesBackInTime) {
  auto lo = LearnerOptions(/*prompts=*/16, 2);
  lo.cycle = true;
  lo.enforce_min_version = false;
  StartLearner(lo);
  policy::Transformer v5 = MakeModel(71);
  policy::Transformer v3 = MakeModel(72);
  learner_->PublishWeights(5, policy::SerializeWeights(v5, 5));
  StartActor(MakeActorOptions(/*capacity=*/2));
  ASSERT_TRUE(learner_->WaitForGroups(4, kWaitS));
  ASSERT_EQ(actor_->policy_version(), 5u);
  // A learner restarted from an older checkpoint: its newest version is 3.
  learner_->SetLeasing(false);
  learner_->PublishWeights(3, policy::SerializeWeights(v3, 3));
  learner_->DropSessions();
  ASSERT_TRUE(WaitUntil([&] { return actor_->policy_version() == 3; }));
  const size_t before = learner_->accepted().size();
  learner_->SetLeasing(true);
  ASSERT_TRUE(learner_->WaitForGroups(static_cast<int>(before) + 4, kWaitS));
  learner_->SetLeasing(false);
  actor_->Shutdown();
  std::vector<FakeLearner::Received> after;
  const auto all = learner_->accepted();
  for (size_t i = before; i < all.size(); ++i) {
    EXPECT_EQ(all[i].group.policy_version(), 3u);
    after.push_back(all[i]);
  }
  ExpectGroupsMatch(after, v3);
}

// Versions after the first are loaded into models the actor no longer uses
// (the one generation used before, or the one built at start) instead of
// new ones: every version's groups must still come from exactly its weights.
TEST_F(ActorTest, EachVersionGeneratesWithItsOwnWeightsWhenModelsAreReused) {
  auto lo = LearnerOptions(/*prompts=*/16, 2);
  lo.cycle = true;
  lo.enforce_min_version = false;
  StartLearner(lo);
  StartActor(MakeActorOptions(/*capacity=*/2));
  constexpr int kVersions = 4;
  std::vector<policy::Transformer> models;
  for (int v = 1; v <= kVersions; ++v) models.push_back(MakeModel(300 + v));
  size_t seen = 0;
  for (int v = 1; v <= kVersions; ++v) {
    learner_->PublishWeights(v, policy::SerializeWeights(models[v - 1], v));
    // At least two groups generated with version v (leasing never stops).
    std::vector<FakeLearner::Received> of_v;
    ASSERT_TRUE(WaitUntil([&] {
      const auto all = learner_->accepted();
      of_v.clear();
      for (size_t i = seen; i < all.size(); ++i) {
        if (all[i].group.policy_version() == static_cast<uint64_t>(v)) of_v.push_back(all[i]);
      }
      return of_v.size() >= 2;
    })) << "version "
        << v;
    seen = learner_->accepted().size();
    EXPECT_LT(MaxLogProbError(of_v, models[v - 1]), 1e-5) << "version " << v;
    // Not the weights of the version before (the model it may be reusing).
    if (v > 1) {
      EXPECT_GT(MaxLogProbError(of_v, models[v - 2]), 1e-3) << "version " << v;
    }
  }
  EXPECT_TRUE(actor_->Shutdown());
  // Every group, including those generated while the next version was being
  // loaded, holds the weights of the version it names.
  std::vector<std::vector<FakeLearner::Received>> by_version(kVersions);
  for (const auto& r : learner_->accepted()) {
    const uint64_t v = r.group.policy_version();
    ASSERT_TRUE(v >= 1 && v <= static_cast<uint64_t>(kVersions));
    by_version[v - 1].push_back(r);
  }
  for (int v = 1; v <= kVersions; ++v) {
    EXPECT_LT(MaxLogProbError(by_version[v - 1], models[v - 1]), 1e-5) << "version " << v;
  }
  const ActorStats s = actor_->stats();
  EXPECT_EQ(s.weight_syncs, static_cast<uint64_t>(kVersions));
  // The first version goes into the model built at start and every later
  // one but possibly the second into a retired model.
  EXPECT_GE(s.weight_loads_reused, static_cast<uint64_t>(kVersions - 1));
}

TEST_F(ActorTest, ShutdownDrainsAndClosesTheSessionWithinTheDeadline) {
  auto lo = LearnerOptions(/*prompts=*/16, 4);
  lo.cycle = true;
  StartLearner(lo);
  policy::Transformer model = MakeModel(61);
  learner_->PublishWeights(1, policy::SerializeWeights(model, 1));
  ActorOptions ao = MakeActorOptions(/*capacity=*/4);
  ao.actor.shutdown_deadline_s = 5;
  StartActor(ao);
  ASSERT_TRUE(learner_->WaitForGroups(8, kWaitS));
  ASSERT_TRUE(WaitUntil([&] { return actor_->serving(); }));

  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(actor_->Shutdown());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, ao.actor.shutdown_deadline_s + 2.5);
  EXPECT_FALSE(actor_->serving());
  EXPECT_TRUE(WaitUntil([&] { return learner_->open_sessions() == 0; }));
  const auto fs = learner_->stats();
  EXPECT_EQ(fs.sessions_closed_cleanly, 1);  // WritesDone, not a cancelled stream.
  EXPECT_EQ(fs.unknown_lease_groups, 0);
  EXPECT_EQ(MetricValue(*registry_, "rlvr_actor_session_up"), 0);
  EXPECT_TRUE(actor_->Shutdown());  // Idempotent.
}

// actor.device cpu with model.compute_dtype bfloat16: the learner's float32
// blobs load into a bfloat16 model, and the behaviour log-probs are that
// model's, close to the float32 training forward's: measured 0.0014 nats at
// most. Bound 0.02: bfloat16 rounds each value by up to 2^-9 (relative), a
// few such roundings deep through two layers and a small vocabulary's
// logits; a float32 actor would give ~1e-6, a wrong conversion far more.
TEST_F(ActorTest, BFloat16ActorGeneratesFromFloat32Blobs) {
  constexpr int kPrompts = 6, kG = 4;
  StartLearner(LearnerOptions(kPrompts, kG));
  policy::Transformer model = MakeModel(21);
  ActorOptions o = MakeActorOptions(/*capacity=*/4);
  o.actor.device = "cpu";
  o.model.compute_dtype = "bfloat16";
  StartActor(o);
  learner_->PublishWeights(1, policy::SerializeWeights(model, 1));
  ASSERT_TRUE(learner_->WaitForGroups(kPrompts, kWaitS));
  const double err = MaxLogProbError(learner_->accepted(), model);
  std::cout << "bfloat16 actor vs float32 forward: max |log-prob difference| " << err << "\n";
  EXPECT_GT(err, 0.0) << "generation did not run in bfloat16";
  EXPECT_LT(err, 0.02);
  EXPECT_EQ(actor_->stats().weight_sync_failures, 0u);
  EXPECT_TRUE(actor_->Shutdown());
}

// An explicit CUDA device on a process without CUDA fails Actor::Create,
// naming the key.
TEST_F(ActorTest, CudaDeviceWithoutCudaFailsAtCreate) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "CUDA is available";
  ActorOptions o;
  o.learner_address = "127.0.0.1:1";
  o.model = SmallModel();
  o.task = SmallTask();
  o.actor.device = "cuda";
  auto actor = Actor::Create(o, registry_);
  EXPECT_EQ(actor.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(actor.status().message().find("actor.device"), std::string::npos) << actor.status();
}

// The two engines, and the continuous one with a KV pool that holds two
// rows at a time (admission waits, rows are preempted), send the same
// groups for the same leases: every prompt's completions token for token,
// behaviour log-probs equal to the training forward's. Fewer slots than
// rows held: the engine refills them as rows finish.
TEST_F(ActorTest, ContinuousAndStaticEnginesSendTheSameGroups) {
  constexpr int kPrompts = 10, kG = 3;
  policy::Transformer model = MakeModel(71);
  std::vector<std::map<std::string, std::vector<std::vector<int>>>> runs;
  for (int run = 0; run < 3; ++run) {
    registry_ = std::make_shared<prometheus::Registry>();
    StartLearner(LearnerOptions(kPrompts, kG));
    ActorOptions o = MakeActorOptions(/*capacity=*/4);
    o.actor.engine = run == 1 ? "static" : "continuous";
    o.actor.max_batch_rows = 5;
    if (run == 2) {
      o.actor.kv_block_tokens = 4;
      o.actor.kv_cache_tokens = 40;  // 10 blocks; a row alone needs up to ~6.
    }
    StartActor(o);
    learner_->PublishWeights(1, policy::SerializeWeights(model, 1));
    ASSERT_TRUE(learner_->WaitForGroups(kPrompts, kWaitS)) << "run " << run;
    std::map<std::string, std::vector<std::vector<int>>> groups;
    for (const auto& r : learner_->accepted()) {
      for (const auto& c : r.group.completions()) {
        groups[r.group.prompt_id()].emplace_back(c.token_ids().begin(), c.token_ids().end());
      }
    }
    ExpectGroupsMatch(learner_->accepted(), model);
    EXPECT_EQ(learner_->stats().unknown_lease_groups, 0);
    const ActorStats st = actor_->stats();
    std::cout << "run " << run << " (" << o.actor.engine << "): " << st.batches
              << " steps/batches, row-steps " << st.row_steps << " of " << st.slot_steps
              << " slot-steps, prefill positions " << st.prefill_tokens << " (+"
              << st.prefill_tokens_reused << " reused), preemptions " << st.kv_preemptions
              << ", peak KV " << st.kv_cache_peak_used_bytes << " of " << st.kv_cache_bytes
              << " bytes\n";
    EXPECT_GT(st.row_steps, 0);
    EXPECT_LE(st.row_steps, st.slot_steps);
    EXPECT_GT(st.prefill_tokens, 0);
    if (run != 1) {
      EXPECT_GT(st.prefill_tokens_reused, 0);  // One prefill per group.
      EXPECT_LE(st.kv_cache_peak_used_bytes, st.kv_cache_bytes);
      EXPECT_GT(MetricValue(*registry_, "rlvr_actor_slot_steps_total"), 0);
      EXPECT_GT(MetricValue(*registry_, "rlvr_actor_kv_cache_capacity_bytes"), 0);
      EXPECT_GT(MetricValue(*registry_, "rlvr_actor_prefill_seconds_total"), 0);
      EXPECT_GT(MetricValue(*registry_, "rlvr_actor_decode_seconds_total"), 0);
      EXPECT_EQ(MetricValue(*registry_, "rlvr_actor_rows_running"), 0);
    }
    runs.push_back(std::move(groups));
    EXPECT_TRUE(actor_->Shutdown());
    actor_.reset();
    learner_.reset();
  }
  ASSERT_EQ(runs[0].size(), static_cast<size_t>(kPrompts));
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

// A lease whose one row cannot fit the engine's KV pool even alone is
// returned at once with the reason (the config check refuses such a pool
// for model.max_seq_len, so only a mis-configured actor sees it); nothing is
// generated and the actor keeps serving.
TEST_F(ActorTest, ALeaseLargerThanTheKvPoolIsReturned) {
  StartLearner(LearnerOptions(/*prompts=*/4, 2));
  policy::Transformer model = MakeModel(81);
  learner_->PublishWeights(1, policy::SerializeWeights(model, 1));
  ActorOptions o = MakeActorOptions(/*capacity=*/2);
  o.actor.kv_block_tokens = 4;
  o.actor.kv_cache_tokens = 12;  // 3 blocks: no prompt + 6 tokens fits.
  StartActor(o);
  // Both leases the learner granted (it grants again only after groups).
  ASSERT_TRUE(WaitUntil([&] { return learner_->stats().leases_returned >= 2; }));
  EXPECT_TRUE(learner_->accepted().empty());
  EXPECT_EQ(actor_->stats().leases_returned, 2u);
  EXPECT_EQ(actor_->stats().groups_sent, 0u);
  EXPECT_TRUE(WaitUntil([&] { return actor_->serving(); }));
  EXPECT_TRUE(actor_->Shutdown());
}

TEST_F(ActorTest, ShutdownWithoutALearnerIsPrompt) {
  // Learner address that refuses connections: start one and stop it again.
  StartLearner(LearnerOptions(4, 2));
  ActorOptions ao = MakeActorOptions(2);
  learner_.reset();
  ao.actor.shutdown_deadline_s = 2;
  StartActor(ao);
  ASSERT_TRUE(WaitUntil([&] { return actor_->stats().reconnects >= 2; }));
  EXPECT_EQ(Health(), "NOT_SERVING");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(actor_->Shutdown());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4.5);
}

}  // namespace
}  // namespace rlvr::actor
