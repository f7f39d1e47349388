// Actor throughput against the in-process fake learner (real gRPC on
// loopback): completion tokens/s, groups/s, and the fraction of wall time
// spent inside policy::Generate (the model's forward passes). The remainder
// is the actor's overhead: gRPC, verification, bookkeeping, waiting for
// leases. Baseline in the same run: back-to-back policy::Generate calls on
// the same batch shape with no actor around them.
//
//   bench/actor_bench [--seconds 10] [--capacity 16] [--group_size 8] [--threads 1]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actor/actor.h"
#include "actor/rollout.h"
#include "actor/testing/fake_learner.h"
#include "common/base/logging.h"
#include "common/base/memory_policy.h"
#include "common/config/flags.h"
#include "common/policy/model.h"
#include "common/policy/sampler.h"
#include "common/policy/weights.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int Main(int argc, char** argv) {
  double seconds = 10;
  int capacity = 16;
  int group_size = 8;
  int threads = 1;
  int max_new_tokens = 8;
  rlvr::FlagSet flags("actor_bench", "Actor throughput and forward-pass fraction.");
  flags.Double("seconds", &seconds, "Measured window, seconds (after warm-up).");
  flags.Int("capacity", &capacity, "Actor capacity (prompts per batch).");
  flags.Int("group_size", &group_size, "G completions per prompt.");
  flags.Int("threads", &threads, "Intra-op threads.");
  flags.Int("max_new_tokens", &max_new_tokens, "Completion length cap.");
  if (auto s = flags.Parse(argc - 1, argv + 1); !s.ok() || flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return s.ok() ? 0 : 2;
  }
  rlvr::LoggingOptions logging;
  logging.program = "actor_bench";
  logging.stderr_threshold = 1;
  rlvr::InitLogging(logging);
  torch::set_num_threads(threads);

  rlvr::ModelConfig model_config;  // The default run's model.
  rlvr::TaskConfig task_config;
  auto tokenizer = rlvr::MakeCharTokenizer();
  auto task = rlvr::MakeTask(task_config, *tokenizer, rlvr::TaskOptions{});
  auto model = rlvr::policy::CreateTransformer(model_config, tokenizer->vocab_size(), 3);
  if (!task.ok() || !model.ok()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  auto prompts = rlvr::actor::testing::PromptsFromTask(**task, *tokenizer, 512);

  // Baseline: Generate alone on the actor's batch shape.
  double base_tokens_per_s = 0;
  {
    torch::NoGradGuard no_grad;
    rlvr::policy::SamplingOptions so;
    so.max_new_tokens = max_new_tokens;
    so.stop_token_ids = {tokenizer->eos_id()};
    std::vector<const std::vector<int>*> rows;
    std::vector<uint64_t> seeds;
    for (int i = 0; i < capacity * group_size; ++i) {
      rows.push_back(&(*prompts)[i / group_size].tokens);
      seeds.push_back(rlvr::actor::RowSeed(i / group_size, i % group_size));
    }
    rlvr::policy::Generate(*model, rows, seeds, so);  // Warm-up.
    int64_t tokens = 0;
    const auto t0 = Clock::now();
    int calls = 0;
    while (Since(t0) < seconds / 2 || calls < 3) {
      for (auto& s : rlvr::policy::Generate(*model, rows, seeds, so)) tokens += s.tokens.size();
      ++calls;
      for (auto& seed : seeds) seed += 1;
    }
    base_tokens_per_s = tokens / Since(t0);
  }

  rlvr::actor::testing::FakeLearnerOptions lo;
  lo.prompts = *prompts;
  lo.cycle = true;
  lo.group_size = group_size;
  lo.sampling.set_temperature(1.0);
  lo.sampling.set_top_p(1.0);
  lo.sampling.set_max_new_tokens(max_new_tokens);
  lo.sampling.add_stop_token_ids(tokenizer->eos_id());
  lo.sampling.set_seed(1);
  lo.vocab_size = tokenizer->vocab_size();
  lo.enforce_min_version = false;
  auto learner = rlvr::actor::testing::FakeLearner::Start(lo);
  if (!learner.ok()) return 1;
  (*learner)->PublishWeights(1, rlvr::policy::SerializeWeights(*model, 1));

  rlvr::actor::ActorOptions ao;
  ao.learner_address = (*learner)->address();
  ao.actor_id = "bench";
  ao.model = model_config;
  ao.task = task_config;
  ao.actor.max_batch_prompts = capacity;
  ao.actor.threads = threads;
  ao.health_address = "";
  auto actor = rlvr::actor::Actor::Create(ao, nullptr);
  if (!actor.ok() || !(*actor)->Start().ok()) return 1;
  (*learner)->WaitForGroups(2 * capacity, 120);  // Warm-up: weights, first batches.

  const auto s0 = (*actor)->stats();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const auto s1 = (*actor)->stats();
  const double wall = Since(t0);
  (*actor)->Shutdown();

  const double tokens = static_cast<double>(s1.tokens_generated - s0.tokens_generated);
  const double groups = static_cast<double>(s1.groups_sent - s0.groups_sent);
  const double gen = s1.generate_seconds - s0.generate_seconds;
  const double batches = static_cast<double>(s1.batches - s0.batches);
  std::printf(
      "actor_bench: model d=%d L=%d, G=%d, capacity=%d prompts (%d rows), "
      "max_new_tokens=%d, threads=%d, window %.1f s\n",
      model_config.d_model, model_config.n_layers, group_size, capacity, capacity * group_size,
      max_new_tokens, threads, wall);
  std::printf(
      "  actor:    %.0f completion tokens/s, %.1f groups/s, %.0f batches, %.1f rows/batch\n",
      tokens / wall, groups / wall, batches, batches > 0 ? groups * group_size / batches : 0.0);
  std::printf("  forward fraction (time in policy::Generate / wall): %.1f%% (target >= 90%%)\n",
              100.0 * gen / wall);
  std::printf("  baseline Generate alone, same batch shape: %.0f tokens/s; actor/baseline = %.2f\n",
              base_tokens_per_s, base_tokens_per_s > 0 ? tokens / wall / base_tokens_per_s : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  rlvr::KeepFreedMemoryForReuse();  // As `rlvr` does for every role.
  return Main(argc, argv);
}
