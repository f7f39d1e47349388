// Trainer overhead: Trainer::RunUpdate (one rank, local communicator) on one
// update of 32 groups x G=8 rollouts with the default model (ModelConfig
// defaults), against a hand loop over the same batch: per micro-batch of
// whole groups (<= micro_batch_rollouts rows) policy::ComputeCompletionLogProbs
// + a REINFORCE-style token-sum loss + backward, then global-norm clip and
// AdamW. Same micro-batches, same threads, measured alternately in one run.
// Target: the trainer (planning, estimator, diagnostics, gradient
// flattening, schedule, bookkeeping) adds <= 10%.
//
//   bench/trainer_bench [iterations] [threads]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench/bench_groups.h"
#include "common/base/memory_policy.h"
#include "common/config/run_config.h"
#include "common/policy/logprobs.h"
#include "common/policy/model.h"
#include "common/tokenizer/tokenizer.h"
#include "learner/trainer/trainer.h"

namespace {

using Clock = rlvr::bench::Clock;
using rlvr::learner::Group;
using rlvr::learner::Rollout;

using rlvr::bench::MakeBenchGroups;
using rlvr::bench::Median;
using rlvr::bench::Seconds;

// The bare loop: same micro-batches of whole groups, advantage R - mean(R)
// (0.5 / -0.5 here), loss -(1/Z) sum A_i sum_t lp, backward, clip, AdamW.
class BareLoop {
 public:
  BareLoop(rlvr::policy::Transformer model, const rlvr::OptimConfig& o, int micro_rollouts)
      : model_(model),
        optimizer_(model->parameters(), torch::optim::AdamWOptions(o.lr)
                                            .betas({o.beta1, o.beta2})
                                            .eps(o.eps)
                                            .weight_decay(o.weight_decay)),
        clip_(o.grad_clip),
        micro_rollouts_(micro_rollouts) {}

  void Step(const std::vector<Group>& groups) {
    optimizer_.zero_grad();
    int64_t tokens = 0;
    for (const auto& g : groups) {
      for (const auto& r : g.rollouts) tokens += static_cast<int64_t>(r.tokens.size());
    }
    const double z = static_cast<double>(tokens);
    size_t i = 0;
    while (i < groups.size()) {
      std::vector<const std::vector<int>*> prompts, completions;
      std::vector<float> adv;
      size_t rows = 0;
      while (i < groups.size() && (rows == 0 || rows + groups[i].rollouts.size() <=
                                                    static_cast<size_t>(micro_rollouts_))) {
        double mean = 0;
        for (const auto& r : groups[i].rollouts) mean += r.reward;
        mean /= groups[i].rollouts.size();
        for (const auto& r : groups[i].rollouts) {
          prompts.push_back(&groups[i].prompt);
          completions.push_back(&r.tokens);
          adv.push_back(static_cast<float>(r.reward - mean));
        }
        rows += groups[i].rollouts.size();
        ++i;
      }
      auto lp = rlvr::policy::ComputeCompletionLogProbs(model_, prompts, completions, false);
      torch::Tensor a = torch::tensor(adv).unsqueeze(1);
      torch::Tensor loss = -(a * lp.logprobs * lp.mask).sum() / z;
      loss.backward();
    }
    if (clip_ > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), clip_);
    optimizer_.step();
  }

 private:
  rlvr::policy::Transformer model_;
  torch::optim::AdamW optimizer_;
  double clip_;
  int micro_rollouts_;
};

}  // namespace

int main(int argc, char** argv) {
  rlvr::KeepFreedMemoryForReuse();  // As `rlvr` does for every role.
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 10;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  rlvr::RunConfig config;  // Defaults: the embedded job's model and batching.
  config.batching.reward_balance = "none";
  config.batching.dynamic_sampling = false;
  config.learner.threads = threads;
  const int vocab = rlvr::MakeCharTokenizer()->vocab_size();
  const int n_groups = config.learner.groups_per_update;
  const int g = config.learner.group_size;
  std::vector<Group> groups = MakeBenchGroups(n_groups, g, vocab, 7, 0.0);

  rlvr::learner::TrainerOptions options = rlvr::learner::TrainerOptions::FromRunConfig(config);
  options.vocab_size = vocab;
  auto trainer = rlvr::learner::Trainer::Create(options, nullptr);
  if (!trainer.ok()) {
    std::fprintf(stderr, "Trainer::Create: %s\n", trainer.status().ToString().c_str());
    return 1;
  }
  auto bare_model = rlvr::policy::CreateTransformer(config.model, vocab, 1);
  if (!bare_model.ok()) return 1;
  BareLoop bare(*bare_model, config.optim, config.batching.micro_batch_rollouts);
  torch::set_num_threads(threads);

  int64_t tokens = 0;
  for (const auto& gr : groups) {
    for (const auto& r : gr.rollouts) tokens += static_cast<int64_t>(r.tokens.size());
  }
  std::printf(
      "trainer_bench: model d=%d layers=%d, %d groups x G=%d (%lld tokens), "
      "micro-batch %d rollouts, %d thread(s), %d iterations\n",
      config.model.d_model, config.model.n_layers, n_groups, g, static_cast<long long>(tokens),
      config.batching.micro_batch_rollouts, threads, iterations);
  // Warm-up.
  for (int k = 0; k < 2; ++k) {
    if (!(*trainer)->RunUpdate(groups, false).ok()) return 1;
    bare.Step(groups);
  }
  std::vector<double> t_trainer, t_bare, ratios;
  for (int k = 0; k < iterations; ++k) {
    // Alternate which goes first so drift in machine load hits both.
    double a = 0, b = 0;
    for (int order = 0; order < 2; ++order) {
      if ((order == 0) == (k % 2 == 0)) {
        auto s = Clock::now();
        auto r = (*trainer)->RunUpdate(groups, false);
        a = Seconds(s, Clock::now());
        if (!r.ok()) {
          std::fprintf(stderr, "RunUpdate: %s\n", r.status().ToString().c_str());
          return 1;
        }
      } else {
        auto s = Clock::now();
        bare.Step(groups);
        b = Seconds(s, Clock::now());
      }
    }
    t_trainer.push_back(a);
    t_bare.push_back(b);
    ratios.push_back(a / b);
  }
  const double mt = Median(t_trainer), mb = Median(t_bare);
  std::printf("bare fwd+bwd+AdamW step : median %.2f ms\n", mb * 1e3);
  std::printf("Trainer::RunUpdate      : median %.2f ms\n", mt * 1e3);
  std::printf(
      "ratio trainer/bare      : %.3f (median of paired ratios %.3f); overhead %.1f%% "
      "(target <= 10%%)\n",
      mt / mb, Median(ratios), (Median(ratios) - 1) * 100);
  return 0;
}
