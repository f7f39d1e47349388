// `rlvr eval`: flags + config -> load weights -> Evaluate -> table (+ JSON).
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/file_io.h"
#include "common/base/progress_file.h"
#include "common/config/flags.h"
#include "common/config/run_config.h"
#include "common/policy/evaluate.h"
#include "common/policy/model.h"
#include "common/policy/weights.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"
#include "services/command_reporter.h"
#include "services/commands.h"
#include "services/load_config.h"
#include "services/policy_source.h"

namespace rlvr::services {

int EvalCommand(int argc, char** argv) {
  std::string config_path = "configs/default.yaml";
  std::vector<std::string> overrides;
  std::string weights;
  std::string json_path;
  std::string split = "heldout";
  int prompts_flag = -1;
  int k_flag = -1;
  double temperature = -1;
  int max_new_tokens = -1;
  int64_t seed = 1;
  int show = 0;
  int threads = 1;  // Small ops: a second OpenMP thread mostly spins (see docs/policy.md).
  std::string progress_file;
  std::string progress_label = "evaluation";
  FlagSet flags("eval",
                "Accuracy of a weight file on the task's held-out prompts: greedy exact match\n"
                "and pass@k with k samples per prompt at the given temperature. Prints a table;\n"
                "--json also writes {greedy_accuracy, pass_at_k, k, prompts, ...}.");
  flags.String("config", &config_path, "Run config YAML (model, task, eval, sampling sections).");
  flags.StringList("set", &overrides, "Override a config key (repeatable).");
  flags.String("weights", &weights, "Weight file; empty = pretrain.checkpoint from the config.");
  flags.String("json", &json_path, "Also write the result as JSON to this path.");
  flags.String("split", &split, "heldout or train.");
  flags.Int("prompts", &prompts_flag, "Prompts evaluated; -1 = eval.prompts.");
  flags.Int("k", &k_flag, "k of pass@k; -1 = eval.pass_k; 0 = greedy only.");
  flags.Double("temperature", &temperature, "pass@k temperature; -1 = eval.pass_temperature.");
  flags.Int("max_new_tokens", &max_new_tokens, "Completion cap; -1 = sampling.max_new_tokens.");
  flags.Int64("seed", &seed, "Sampling seed for pass@k.");
  flags.Int("threads", &threads, "Intra-op threads (torch::set_num_threads).");
  flags.Int("show", &show, "Also print the first N prompts with their greedy completions.");
  flags.String("progress_file", &progress_file,
               "Write how far the evaluation is here (`rlvr run` shows it).");
  flags.String("progress_label", &progress_label, "What the progress file calls this evaluation.");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  const CommandReporter command("eval");
  auto config = LoadCommandConfig(config_path, overrides);
  if (!config.ok()) return command.Fail(config.status(), 2);
  if (split != "heldout" && split != "train") {
    return command.Fail(absl::InvalidArgumentError("--split must be heldout or train"), 2);
  }
  // The built-in model's default weights are the pretrained base; a Hugging
  // Face model's are its own (model.hf_path).
  if (weights.empty() && !policy::IsHfPolicy(config->model)) weights = config->pretrain.checkpoint;
  const int n_prompts = prompts_flag >= 0 ? prompts_flag : config->eval.prompts;
  const int k = k_flag >= 0 ? k_flag : config->eval.pass_k;
  if (temperature < 0) temperature = config->eval.pass_temperature;
  if (max_new_tokens < 0) max_new_tokens = config->sampling.max_new_tokens;

  torch::set_num_threads(std::max(1, threads));
  absl::StatusOr<CommandPolicy> loaded = LoadCommandPolicy(config->model, weights);
  if (!loaded.ok()) return command.Fail(loaded.status(), 1);
  policy::Transformer* model = &loaded->model;
  const Tokenizer* tokenizer = loaded->resolved.tokenizer.get();
  TaskOptions task_options;
  task_options.max_prompt_tokens = MaxPromptTokens(*config);
  task_options.model_dir = config->model.hf_path;
  auto task = MakeTask(config->task, *tokenizer, task_options);
  if (!task.ok()) return command.Fail(task.status(), 2);
  const uint64_t version = loaded->version;
  std::vector<Prompt> prompts = split == "heldout" ? (*task)->heldout() : (*task)->train();
  if (static_cast<int>(prompts.size()) > n_prompts) prompts.resize(n_prompts);
  const absl::Time t0 = absl::Now();
  ProgressFile progress(progress_file);
  auto result = policy::Evaluate(
      *model, *tokenizer, **task, prompts, k, temperature, max_new_tokens,
      static_cast<uint64_t>(seed), [&](const policy::EvalProgress& p) {
        progress.Update(absl::StrCat(progress_label, ", ", p.pass, ", ", split, " prompts"),
                        p.prompts_done, p.prompts);
      });
  progress.Clear();
  if (!result.ok()) return command.Fail(result.status(), 1);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);

  for (int i = 0; i < std::min<int>(show, result->greedy.size()); ++i) {
    const policy::GreedyCompletion& g = result->greedy[i];
    std::printf("%-24s -> %-12s %s\n", prompts[i].text.c_str(), g.completion.c_str(),
                g.reason.c_str());
  }
  std::printf("%-10s %-8s %-8s %-8s %-12s %-10s %-8s\n", "split", "prompts", "version", "greedy",
              "pass@k", "sample", "seconds");
  std::printf(
      "%-10s %-8d %-8llu %-8.3f %-12s %-10s %-8.1f\n", split.c_str(), result->prompts,
      static_cast<unsigned long long>(version), result->greedy_accuracy,
      k > 0 ? (std::to_string(result->pass_at_k).substr(0, 5) + " (k=" + std::to_string(k) + ")")
                  .c_str()
            : "-",
      k > 0 ? std::to_string(result->sample_accuracy).substr(0, 5).c_str() : "-", seconds);
  if (!json_path.empty()) {
    nlohmann::json j = {{"greedy_accuracy", result->greedy_accuracy},
                        {"pass_at_k", result->pass_at_k},
                        {"sample_accuracy", result->sample_accuracy},
                        {"k", result->k},
                        {"prompts", result->prompts},
                        {"temperature", temperature},
                        {"split", split},
                        {"weights", weights},
                        {"policy_version", version},
                        {"seconds", seconds}};
    absl::Status written = WriteFileAtomically(json_path, j.dump(2) + "\n");
    if (!written.ok()) return command.Fail(written, 1);
  }
  return 0;
}

}  // namespace rlvr::services
