#include "learner/core/offline_rl.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/base/splitmix.h"
#include "common/base/status_macros.h"
#include "common/policy/evaluate.h"
#include "common/policy/model.h"
#include "common/policy/pretrain.h"
#include "common/policy/sampler.h"
#include "common/policy/weights.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"
#include "learner/core/batcher.h"
#include "learner/core/estimator_registry.h"
#include "learner/core/rl_schedule.h"
#include "learner/core/step.h"

namespace rlvr::learner {
namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

absl::StatusOr<double> HeldOut(policy::Transformer& model, const Tokenizer& tokenizer,
                               const Task& task, const RunConfig& c) {
  const size_t n = std::min<size_t>(task.heldout().size(), std::max(0, c.eval.prompts));
  std::vector<Prompt> subset(task.heldout().begin(), task.heldout().begin() + n);
  ASSIGN_OR_RETURN(
      policy::EvalResult r,
      policy::Evaluate(model, tokenizer, task, subset, /*k=*/0, c.eval.pass_temperature,
                       c.sampling.max_new_tokens, static_cast<uint64_t>(c.learner.seed)));
  return r.greedy_accuracy;
}

absl::Status Run(const RunConfig& c, const OfflineRlOptions& options) {
  if (c.loss.kl_coef > 0) return absl::InvalidArgumentError("offline loop: kl_coef must be 0");
  ASSIGN_OR_RETURN(ParsedEstimator estimator, ParsedEstimator::Parse(c.loss));
  torch::set_num_threads(1);
  std::unique_ptr<Tokenizer> tokenizer = MakeCharTokenizer();
  ASSIGN_OR_RETURN(std::unique_ptr<Task> task, MakeTask(c.task, *tokenizer, TaskOptions{}));
  policy::Transformer model(c.model, tokenizer->vocab_size(),
                            static_cast<uint64_t>(c.pretrain.seed));
  const std::string& base = c.pretrain.checkpoint;
  if (std::filesystem::exists(base)) {
    RETURN_IF_ERROR(policy::LoadWeightsFile(base, model, nullptr));
  } else {
    policy::PretrainOptions po;
    po.config = c.pretrain;
    po.max_new_tokens = c.sampling.max_new_tokens;
    po.on_progress = [](const policy::PretrainProgress& p) {
      if (p.validation_accuracy >= 0) {
        std::printf("pretrain step %d loss %.4f validation %.3f (%.0f s)\n", p.step, p.loss,
                    p.validation_accuracy, p.elapsed_s);
        std::fflush(stdout);
      }
    };
    ASSIGN_OR_RETURN(policy::PretrainResult pr, policy::Pretrain(model, *tokenizer, *task, po));
    std::printf("pretrained: %d steps, %.0f s, validation %.3f\n", pr.steps, pr.seconds,
                pr.validation_accuracy);
    RETURN_IF_ERROR(policy::SaveWeightsFile(base, model, 0));
  }
  if (options.pretrain_only) return absl::OkStatus();

  std::filesystem::create_directories(options.out_dir);
  std::ofstream metrics(options.out_dir + "/metrics.jsonl");
  const auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(const double base_heldout, HeldOut(model, *tokenizer, *task, c));
  std::printf("base held-out %.3f\n", base_heldout);

  torch::optim::AdamWOptions adam(c.optim.lr);
  adam.betas({c.optim.beta1, c.optim.beta2}).eps(c.optim.eps).weight_decay(c.optim.weight_decay);
  torch::optim::AdamW optimizer(model->parameters(), adam);
  std::vector<torch::Tensor> params = model->parameters();

  // Prompt order: a seeded shuffle of the training split, epoch after epoch.
  const std::vector<Prompt>& train = task->train();
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  uint64_t rng = SplitMix64(static_cast<uint64_t>(c.learner.seed) ^ 0x6f66666c696e65ULL);
  auto shuffle = [&] {
    for (size_t i = order.size(); i > 1; --i) {
      rng = SplitMix64(rng);
      std::swap(order[i - 1], order[rng % i]);
    }
  };
  shuffle();
  size_t cursor = 0;
  policy::SamplingOptions so;
  so.temperature = c.sampling.temperature;
  so.top_k = c.sampling.top_k;
  so.top_p = c.sampling.top_p;
  so.max_new_tokens = c.sampling.max_new_tokens;
  so.stop_token_ids = {tokenizer->eos_id()};
  const int g_size = c.learner.group_size;
  uint64_t optimizer_steps = 0;
  const LrSchedule schedule = RlLrSchedule(c.optim, c.batching, c.run.total_updates);
  double final_heldout = base_heldout;

  for (int update = 1; update <= c.run.total_updates; ++update) {
    const auto t_update = std::chrono::steady_clock::now();
    std::vector<Group> groups(static_cast<size_t>(c.learner.groups_per_update));
    std::vector<const Prompt*> prompts;
    for (Group& g : groups) {
      if (cursor == order.size()) {
        shuffle();
        cursor = 0;
      }
      const Prompt& p = train[order[cursor++]];
      prompts.push_back(&p);
      ASSIGN_OR_RETURN(g.prompt, EncodePrompt(*tokenizer, p.text));
      g.prompt_id = p.id;
      g.policy_version = static_cast<uint64_t>(update - 1);
    }
    std::vector<const std::vector<int>*> rows;
    std::vector<uint64_t> seeds;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      for (int j = 0; j < g_size; ++j) {
        rows.push_back(&groups[gi].prompt);
        seeds.push_back(SplitMix64(SplitMix64(static_cast<uint64_t>(c.learner.seed) * 1000003ULL +
                                              static_cast<uint64_t>(update)) +
                                   rows.size()));
      }
    }
    model->eval();
    std::vector<policy::Sample> samples;
    try {
      samples = policy::Generate(model, rows, seeds, so);
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("generate: ", e.what()));
    }
    model->train();
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      for (int j = 0; j < g_size; ++j) {
        policy::Sample& s = samples[gi * static_cast<size_t>(g_size) + static_cast<size_t>(j)];
        Rollout r;
        r.reward = task->Verify(prompts[gi]->answer, CompletionText(*tokenizer, s.tokens)).reward;
        r.tokens = std::move(s.tokens);
        r.behaviour_logprobs = std::move(s.logprobs);
        groups[gi].rollouts.push_back(std::move(r));
      }
    }
    ASSIGN_OR_RETURN(UpdatePlan plan,
                     PlanUpdate(groups, c.batching, estimator, c.sampling.max_new_tokens,
                                SplitMix64(static_cast<uint64_t>(c.learner.seed) +
                                           static_cast<uint64_t>(update))));
    OldLogProbs old;
    const bool precompute = c.loss.old_logprobs == "recompute" && plan.steps.size() > 1;
    if (precompute) {
      ASSIGN_OR_RETURN(old, ComputeOldLogProbs(model, groups, SelectionForRank(plan, 0, 1),
                                               c.batching.micro_batch_rollouts));
    }
    UpdateDiagnostics diag;
    double grad_norm_sum = 0.0;
    double lr = schedule.At(static_cast<double>(optimizer_steps));
    for (const OptimizerStep& step : plan.steps) {
      for (auto& p : params) p.mutable_grad() = torch::Tensor();
      ASSIGN_OR_RETURN(
          UpdateDiagnostics d,
          AccumulateStepGradients(model, groups, step.groups, step.normalizer, estimator,
                                  c.batching, precompute ? &old : nullptr, nullptr));
      MergeDiagnostics(d, &diag);
      const double clip =
          c.optim.grad_clip > 0 ? c.optim.grad_clip : std::numeric_limits<double>::infinity();
      const double norm = torch::nn::utils::clip_grad_norm_(params, clip);
      lr = schedule.At(static_cast<double>(optimizer_steps));
      if (std::isfinite(norm)) {
        for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
        optimizer.step();
        grad_norm_sum += norm;
      }
      ++optimizer_steps;
    }
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    FinishUpdateDiagnostics(plan.stats, static_cast<int64_t>(plan.steps.size()), grad_norm_sum, lr,
                            &diag);

    nlohmann::json j;
    j["step"] = update;
    DiagnosticsToJson(diag, &j);
    j["step_seconds"] = Seconds(t_update);
    const bool last = update == c.run.total_updates;
    if (last || (c.eval.every > 0 && update % c.eval.every == 0)) {
      ASSIGN_OR_RETURN(final_heldout, HeldOut(model, *tokenizer, *task, c));
      j["heldout_accuracy"] = final_heldout;
    }
    metrics << j.dump() << "\n";
    metrics.flush();
    std::printf(
        "update %d reward %.3f entropy %.3f residual %.4f%s (%.1f s)\n", update, diag.reward_mean(),
        diag.entropy(), diag.cancellation_residual(),
        j.contains("heldout_accuracy") ? absl::StrCat(" held-out ", final_heldout).c_str() : "",
        Seconds(t0));
    std::fflush(stdout);
  }
  nlohmann::json s;
  s["base_heldout_accuracy"] = base_heldout;
  s["final_heldout_accuracy"] = final_heldout;
  s["updates"] = c.run.total_updates;
  s["seconds"] = Seconds(t0);
  s["estimator"] = c.loss.estimator;
  s["group_size"] = g_size;
  std::ofstream(options.out_dir + "/summary.json") << s.dump(2) << "\n";
  return absl::OkStatus();
}

}  // namespace

absl::Status RunOfflineRl(const RunConfig& config, const OfflineRlOptions& options) {
  try {
    return Run(config, options);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("offline rl: ", e.what()));
  }
}

}  // namespace rlvr::learner
