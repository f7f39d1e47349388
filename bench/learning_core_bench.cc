// Learning-core overhead: for the default model (common/config/run_config.h
// ModelConfig) and one optimizer step of 64 groups x G=8 rollouts, the time
// of AccumulateStepGradients (forward + estimator + diagnostics + backward)
// against the bare policy forward+backward on the same micro-batches,
// measured in the same run. Target: the estimator and diagnostics add <= 5%.
//
// Also prints the estimator + diagnostics alone on precomputed log-probs of
// the whole batch (leaf tensor, autograd coefficient, cancellation sums).
//
//   bench/learning_core_bench [iterations] [threads]
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
#include "learner/core/batcher.h"
#include "learner/core/diagnostics.h"
#include "learner/core/estimator.h"
#include "learner/core/estimator_registry.h"
#include "learner/core/step.h"

namespace {

using Clock = rlvr::bench::Clock;
using rlvr::learner::Group;
using rlvr::learner::Rollout;

using rlvr::bench::MakeBenchGroups;
using rlvr::bench::Median;
using rlvr::bench::Seconds;

}  // namespace

int main(int argc, char** argv) {
  rlvr::KeepFreedMemoryForReuse();  // As `rlvr` does for every role.
  const int iterations = argc > 1 ? std::max(3, std::atoi(argv[1])) : 10;
  const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1;
  torch::set_num_threads(threads);
  torch::manual_seed(1);

  rlvr::RunConfig config;  // Defaults: the model, loss and batching under test.
  const int vocab = rlvr::MakeCharTokenizer()->vocab_size();
  rlvr::policy::Transformer model(config.model, vocab, /*init_seed=*/1);
  std::vector<Group> groups = MakeBenchGroups(64, 8, vocab, 2, 0.5);

  rlvr::BatchingConfig batching = config.batching;
  batching.reward_balance = "none";  // Keep all 512 rollouts in the step.
  const rlvr::LossConfig loss = config.loss;
  // Parsed once, as the trainer does.
  auto estimator = rlvr::learner::ParsedEstimator::Parse(loss);
  if (!estimator.ok()) {
    std::fprintf(stderr, "loss config: %s\n", estimator.status().ToString().c_str());
    return 1;
  }
  auto plan =
      rlvr::learner::PlanUpdate(groups, batching, *estimator, config.sampling.max_new_tokens, 3);
  if (!plan.ok() || plan->steps.size() != 1) {
    std::fprintf(stderr, "plan failed\n");
    return 1;
  }
  const rlvr::learner::OptimizerStep& step = plan->steps[0];

  // Baseline micro-batches: the same whole-group chunks AccumulateStepGradients uses.
  std::vector<std::vector<const std::vector<int>*>> mb_prompts, mb_completions;
  {
    std::vector<const std::vector<int>*> p, c;
    int rows_in_group_chunk = 0;
    for (const auto& sg : step.groups) {
      if (!p.empty() && rows_in_group_chunk + static_cast<int>(sg.rollouts.size()) >
                            batching.micro_batch_rollouts) {
        mb_prompts.push_back(p);
        mb_completions.push_back(c);
        p.clear();
        c.clear();
        rows_in_group_chunk = 0;
      }
      for (int r : sg.rollouts) {
        p.push_back(&groups[sg.group].prompt);
        c.push_back(&groups[sg.group].rollouts[r].tokens);
      }
      rows_in_group_chunk += static_cast<int>(sg.rollouts.size());
    }
    mb_prompts.push_back(p);
    mb_completions.push_back(c);
  }

  auto zero = [&] {
    for (auto& p : model->parameters()) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
  };
  auto baseline = [&] {
    zero();
    for (size_t m = 0; m < mb_prompts.size(); ++m) {
      auto out =
          rlvr::policy::ComputeCompletionLogProbs(model, mb_prompts[m], mb_completions[m], false);
      out.logprobs.sum().backward();
    }
  };
  auto full = [&] {
    zero();
    auto d = rlvr::learner::AccumulateStepGradients(model, groups, step.groups, step.normalizer,
                                                    *estimator, batching, nullptr, nullptr);
    if (!d.ok()) {
      std::fprintf(stderr, "step failed: %s\n", d.status().ToString().c_str());
      std::exit(1);
    }
  };

  // Estimator + diagnostics alone, on the whole batch's detached log-probs.
  torch::Tensor lp_all, mask_all;
  std::vector<int64_t> gid_vec, shared_len;
  std::vector<double> adv_vec;
  {
    torch::NoGradGuard no_grad;
    std::vector<const std::vector<int>*> p, c;
    for (size_t k = 0; k < step.groups.size(); ++k) {
      std::vector<const std::vector<int>*> members;
      for (size_t j = 0; j < step.groups[k].rollouts.size(); ++j) {
        p.push_back(&groups[step.groups[k].group].prompt);
        c.push_back(&groups[step.groups[k].group].rollouts[step.groups[k].rollouts[j]].tokens);
        members.push_back(c.back());
        gid_vec.push_back(static_cast<int64_t>(k));
        adv_vec.push_back(step.groups[k].advantages[j]);
      }
      shared_len.push_back(rlvr::learner::CommonPrefixLength(members));
    }
    auto out = rlvr::policy::ComputeCompletionLogProbs(model, p, c, false);
    lp_all = out.logprobs;
    mask_all = out.mask;
  }
  auto loss_only = [&] {
    torch::Tensor leaf = lp_all.detach().requires_grad_(true);
    rlvr::learner::EstimatorInput in;
    in.lp_new = leaf;
    in.lp_old = lp_all;
    in.mask = mask_all;
    in.advantages = torch::tensor(adv_vec, torch::kFloat64).to(torch::kFloat32);
    in.group_ids = torch::tensor(gid_vec, torch::kInt64);
    in.num_groups = static_cast<int64_t>(step.groups.size());
    in.normalizer = step.normalizer;
    auto res = estimator->loss().Compute(in);
    torch::Tensor coeff = torch::autograd::grad({res.loss}, {leaf})[0];
    auto sums =
        rlvr::learner::SharedPrefixCancellation(coeff, in.group_ids, in.num_groups, shared_len);
    (void)sums;
    (void)res.clipped.sum().item<double>();
    (void)(res.ratio * mask_all).max().item<double>();
  };

  for (int w = 0; w < 2; ++w) {
    baseline();
    full();
    loss_only();
  }
  std::vector<double> t_base, t_full, t_loss;
  for (int i = 0; i < iterations; ++i) {
    // Alternate the order so that neither side always runs first.
    double tb = 0, tf = 0;
    for (int k = 0; k < 2; ++k) {
      const bool base_now = (k == 0) == (i % 2 == 0);
      auto a = Clock::now();
      if (base_now) {
        baseline();
        tb = Seconds(a, Clock::now());
      } else {
        full();
        tf = Seconds(a, Clock::now());
      }
    }
    auto c = Clock::now();
    loss_only();
    t_loss.push_back(Seconds(c, Clock::now()));
    t_base.push_back(tb);
    t_full.push_back(tf);
  }
  const double base = Median(t_base), fl = Median(t_full), lo = Median(t_loss);
  // Paired differences (baseline and full step run back to back) are less
  // sensitive to a machine whose load drifts during the run.
  std::vector<double> diff;
  for (size_t i = 0; i < t_base.size(); ++i) diff.push_back(t_full[i] - t_base[i]);
  const double paired = Median(diff);
  std::printf(
      "learning_core_bench: model d=%d layers=%d heads=%d d_ff=%d vocab=%d, %zu groups, "
      "%lld rollouts, %lld tokens, micro_batch_rollouts=%d, threads=%d, estimator=%s, "
      "iterations=%d (medians)\n",
      config.model.d_model, config.model.n_layers, config.model.n_heads, config.model.d_ff, vocab,
      step.groups.size(), static_cast<long long>(step.rollouts),
      static_cast<long long>(step.tokens), batching.micro_batch_rollouts, threads,
      loss.estimator.c_str(), iterations);
  std::printf("policy forward+backward (baseline):        %8.2f ms\n", base * 1e3);
  std::printf("AccumulateStepGradients (full step):       %8.2f ms\n", fl * 1e3);
  std::printf(
      "added by loss + diagnostics (full-base):   %8.2f ms = %.1f%% of baseline (target <= 5%%)\n",
      (fl - base) * 1e3, 100.0 * (fl - base) / base);
  std::printf("median paired difference (full-base):     %8.2f ms = %.1f%% of baseline\n",
              paired * 1e3, 100.0 * paired / base);
  std::printf("estimator + diagnostics alone (1 batch):   %8.2f ms = %.1f%% of baseline\n",
              lo * 1e3, 100.0 * lo / base);
  return 0;
}
