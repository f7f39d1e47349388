// `rlvr pretrain`: flags + config -> PretrainOptions -> Pretrain -> weight file.
#include <cstdio>
#include <string>
#include <vector>

#include "common/base/logging.h"
#include "common/config/flags.h"
#include "common/config/run_config.h"
#include "common/metrics/metrics.h"
#include "common/metrics/phase.h"
#include "common/policy/evaluate.h"
#include "common/policy/factory.h"
#include "common/policy/model.h"
#include "common/policy/placement.h"
#include "common/policy/pretrain.h"
#include "common/policy/weights.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"
#include "learner/learner_metrics.h"
#include "services/commands.h"
#include "services/load_config.h"

namespace rlvr::services {

int PretrainCommand(int argc, char** argv) {
  std::string config_path = "configs/default.yaml";
  std::vector<std::string> overrides;
  std::string out;
  int threads = 1;  // Small ops: a second OpenMP thread mostly spins (see docs/policy.md).
  int log_every = 25;
  int eval_prompts = 0;
  int metrics_port = -1;
  std::string metrics_bind = "127.0.0.1";
  FlagSet flags("pretrain",
                "Supervised warm start of the base policy: next-token loss on the answers of\n"
                "the task's training prompts (pretrain.data_fraction of them), AdamW with\n"
                "warm-up and cosine decay, grad clipping, on pretrain.device. Writes the weight\n"
                "blob (version 0) atomically to --out or pretrain.checkpoint, creating\n"
                "directories. With --metrics_port it serves /metrics meanwhile:\n"
                "rlvr_learner_phase{phase=\"pretraining\"} 1 (the learner pod's init container).");
  flags.String("config", &config_path, "Run config YAML (model, task, pretrain sections).");
  flags.StringList("set", &overrides,
                   "Override a config key: --set pretrain.steps=100 (repeatable).");
  flags.String("out", &out, "Output weight file; empty = pretrain.checkpoint from the config.");
  flags.Int("threads", &threads, "Intra-op threads (torch::set_num_threads).");
  flags.Int("log_every", &log_every, "Print a progress line every this many steps.");
  flags.Int("eval_prompts", &eval_prompts,
            "After training, print greedy accuracy on this many held-out prompts (0 = skip).");
  flags.Int("metrics_port", &metrics_port, "Prometheus /metrics port; 0 = pick, -1 = off.");
  flags.String("metrics_bind", &metrics_bind, "Bind address of /metrics (0.0.0.0 in pods).");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  LoggingOptions logging;
  logging.program = "rlvr-pretrain";
  InitLogging(logging);
  auto config = LoadCommandConfig(config_path, overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  if (out.empty()) out = config->pretrain.checkpoint;
  // The learner pod's /metrics while its init container pretrains: the same
  // target, phase pretraining, instead of a refused scrape.
  auto registry = std::make_shared<prometheus::Registry>();
  PhaseGauge phase(*registry, "rlvr_learner_phase", learner::kLearnerPhaseHelp,
                   {std::begin(learner::kLearnerPhases), std::end(learner::kLearnerPhases)});
  phase.Set("pretraining");
  std::unique_ptr<MetricsServer> metrics_server;
  if (metrics_port >= 0) {
    MetricsServerOptions mo;
    mo.bind_address = metrics_bind;
    mo.port = metrics_port;
    auto started = MetricsServer::Start(mo, registry);
    if (!started.ok()) {
      std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(started.status().message()).c_str());
      return 1;
    }
    metrics_server = *std::move(started);
    std::printf("pretrain metrics on port %d\n", metrics_server->port());
  }
  absl::StatusOr<policy::Placement> placement = policy::ResolvePlacement(
      "pretrain.device", config->pretrain.device, config->model.compute_dtype, /*rank=*/0);
  if (!placement.ok()) {
    std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(placement.status().message()).c_str());
    return 2;
  }
  // The model's shape, tokenizer and starting weights (model.hf_path: that
  // model, fine-tuned on the task's answers).
  auto resolved = policy::ResolvePolicy(config->model);
  if (!resolved.ok()) {
    std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(resolved.status().message()).c_str());
    return 2;
  }
  const Tokenizer* tokenizer = resolved->tokenizer.get();
  TaskOptions task_options;
  task_options.max_prompt_tokens = MaxPromptTokens(*config);
  task_options.model_dir = config->model.hf_path;
  auto task = MakeTask(config->task, *tokenizer, task_options);
  if (!task.ok()) {
    std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(task.status().message()).c_str());
    return 2;
  }
  auto model = policy::CreateInitialPolicy(resolved->model, resolved->vocab_size,
                                           static_cast<uint64_t>(config->pretrain.seed), *placement,
                                           policy::PolicyUse::kTraining);
  if (!model.ok()) {
    std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(model.status().message()).c_str());
    return 2;
  }
  std::printf(
      "pretrain: task %s (%zu train prompts), model %lld parameters, %d steps x %d, "
      "%d threads, on %s\n",
      (*task)->name().c_str(), (*task)->train().size(),
      static_cast<long long>((*model)->num_parameters()), config->pretrain.steps,
      config->pretrain.batch_size, threads, placement->ToString().c_str());
  std::fflush(stdout);
  policy::PretrainOptions options;
  options.config = config->pretrain;
  options.threads = threads;
  options.log_every = log_every;
  options.max_new_tokens = config->sampling.max_new_tokens;
  options.on_progress = [](const policy::PretrainProgress& p) {
    std::printf("pretrain step %d/%d  loss %.4f  lr %.2e  grad_norm %.3f  %.1fs", p.step,
                p.total_steps, p.loss, p.lr, p.grad_norm, p.elapsed_s);
    if (p.validation_accuracy >= 0) std::printf("  validation %.3f", p.validation_accuracy);
    std::printf("\n");
    std::fflush(stdout);
  };
  auto result = policy::Pretrain(*model, *tokenizer, **task, options);
  if (!result.ok()) {
    std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
  if (absl::Status s = policy::SaveWeightsFile(out, *model, 0); !s.ok()) {
    std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("pretrain: done, %d steps on %d prompts in %.1fs, final loss %.4f -> %s\n",
              result->steps, result->examples, result->seconds, result->final_loss, out.c_str());
  if (config->pretrain.stop_accuracy > 0) {
    std::printf(
        "pretrain: validation greedy accuracy %.3f on %d training-split prompts (%s %.3f)\n",
        result->validation_accuracy, config->pretrain.validation_prompts,
        result->reached_stop_accuracy ? "reached the stop accuracy" : "never reached",
        config->pretrain.stop_accuracy);
  }
  if (eval_prompts > 0) {
    std::vector<Prompt> prompts = (*task)->heldout();
    if (static_cast<int>(prompts.size()) > eval_prompts) prompts.resize(eval_prompts);
    auto eval = policy::Evaluate(*model, *tokenizer, **task, prompts, 0, 1.0,
                                 config->sampling.max_new_tokens, 1);
    if (!eval.ok()) {
      std::fprintf(stderr, "rlvr pretrain: %s\n", std::string(eval.status().message()).c_str());
      return 1;
    }
    std::printf("pretrain: held-out greedy accuracy %.3f on %d prompts\n", eval->greedy_accuracy,
                eval->prompts);
  }
  return 0;
}

}  // namespace rlvr::services
