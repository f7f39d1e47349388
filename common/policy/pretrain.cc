#include "common/policy/pretrain.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/lr_schedule.h"
#include "common/base/status_macros.h"
#include "common/policy/evaluate.h"
#include "common/policy/logprobs.h"
#include "common/policy/model.h"

namespace rlvr::policy {
namespace {

double LearningRate(const PretrainConfig& c, int step) {
  LrSchedule schedule;
  schedule.peak = c.lr;
  schedule.warmup_steps = c.warmup_steps;
  schedule.cosine = true;
  schedule.total_steps = c.steps;
  schedule.min_lr_ratio = c.min_lr_ratio;
  return schedule.At(step);
}

}  // namespace

absl::StatusOr<PretrainResult> Pretrain(Transformer& model, const Tokenizer& tokenizer,
                                        const Task& task, const PretrainOptions& options) {
  const PretrainConfig& c = options.config;
  const absl::Time start = absl::Now();
  const bool validate = c.stop_accuracy > 0;
  const size_t train_size = task.train().size();
  if (validate && (c.validation_prompts < 1 || size_t(c.validation_prompts) >= train_size ||
                   c.validate_every < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pretrain: validation_prompts must be in [1, ", train_size,
                     ") and validate_every >= 1 when stop_accuracy is set"));
  }
  // The validation prompts are the tail of the training split, never trained on here.
  const size_t trainable = validate ? train_size - c.validation_prompts : train_size;
  const size_t used =
      std::min(trainable, static_cast<size_t>(std::ceil(c.data_fraction * train_size)));
  std::vector<Prompt> validation;
  if (validate) validation.assign(task.train().end() - c.validation_prompts, task.train().end());
  if (used == 0) return absl::InvalidArgumentError("pretrain: no training prompts selected");
  if (c.batch_size < 1) return absl::InvalidArgumentError("pretrain: batch_size must be >= 1");
  std::vector<std::vector<int>> inputs(used), targets(used);
  for (size_t i = 0; i < used; ++i) {
    const Prompt& p = task.train()[i];
    auto in = EncodePrompt(tokenizer, p.text);
    auto out = EncodeTargetCompletion(tokenizer, p.answer);
    if (!in.ok() || !out.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pretrain: prompt ", p.id, ": ", (!in.ok() ? in.status() : out.status()).message()));
    }
    inputs[i] = *std::move(in);
    targets[i] = *std::move(out);
  }
  PretrainResult result;
  result.examples = static_cast<int>(used);
  try {
    torch::set_num_threads(std::max(1, options.threads));
    model->train();
    torch::optim::AdamW optimizer(
        model->parameters(),
        torch::optim::AdamWOptions(c.lr).betas({0.9, 0.95}).weight_decay(c.weight_decay));
    std::mt19937_64 rng(static_cast<uint64_t>(c.seed));
    std::vector<size_t> order(used);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    size_t cursor = 0;
    for (int step = 0; step < c.steps; ++step) {
      std::vector<const std::vector<int>*> batch_in, batch_out;
      for (int j = 0; j < c.batch_size; ++j) {
        if (cursor == order.size()) {
          std::shuffle(order.begin(), order.end(), rng);
          cursor = 0;
        }
        batch_in.push_back(&inputs[order[cursor]]);
        batch_out.push_back(&targets[order[cursor]]);
        ++cursor;
      }
      const double lr = LearningRate(c, step);
      for (auto& group : optimizer.param_groups()) {
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
      }
      optimizer.zero_grad();
      CompletionLogProbs lp = ComputeCompletionLogProbs(model, batch_in, batch_out, false);
      torch::Tensor loss = -lp.logprobs.sum() / lp.mask.sum().clamp_min(1.0);
      loss.backward();
      double grad_norm = 0.0;
      if (c.grad_clip > 0) {
        grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), c.grad_clip);
      } else {
        grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(),
                                                      std::numeric_limits<double>::infinity());
      }
      optimizer.step();
      result.steps = step + 1;
      result.final_loss = loss.item<double>();
      double accuracy = -1.0;
      if (validate && (result.steps % c.validate_every == 0 || result.steps == c.steps)) {
        model->eval();
        auto eval =
            Evaluate(model, tokenizer, task, validation, /*k=*/0, 1.0, options.max_new_tokens, 0);
        model->train();
        if (!eval.ok()) return eval.status();
        accuracy = eval->greedy_accuracy;
        result.validation_accuracy = accuracy;
        result.reached_stop_accuracy = accuracy >= c.stop_accuracy;
      }
      // Every validation check is reported (the stopping one included).
      if (options.on_progress &&
          ((options.log_every > 0 && result.steps % options.log_every == 0) ||
           result.steps == c.steps || accuracy >= 0)) {
        PretrainProgress progress;
        progress.step = result.steps;
        progress.total_steps = c.steps;
        progress.loss = result.final_loss;
        progress.lr = lr;
        progress.grad_norm = grad_norm;
        progress.elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
        progress.validation_accuracy = accuracy;
        options.on_progress(progress);
      }
      if (result.reached_stop_accuracy) break;
    }
    model->eval();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("pretrain: ", e.what()));
  }
  result.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return result;
}

}  // namespace rlvr::policy
