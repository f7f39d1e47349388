// `rlvr score`: flags -> policy (policy_source.h) -> ScoreSequence per JSONL
// line -> one JSON line per input on stdout.
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/config/flags.h"
#include "common/config/run_config.h"
#include "common/policy/placement.h"
#include "common/policy/score.h"
#include "services/command_reporter.h"
#include "services/commands.h"
#include "services/load_config.h"
#include "services/policy_source.h"

namespace rlvr::services {
namespace {

// The ids of one input line: {"ids": [...]} or {"text": "..."} (encoded
// with the policy's tokenizer as the model's own pipeline does: BOS first
// when the tokenizer adds one, no EOS).
absl::StatusOr<std::vector<int>> LineIds(const std::string& line, const Tokenizer& tokenizer) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError("not a JSON object");
  if (j.contains("ids")) {
    const nlohmann::json& ids = j["ids"];
    if (!ids.is_array()) return absl::InvalidArgumentError("\"ids\" is not an array");
    std::vector<int> out;
    out.reserve(ids.size());
    for (const auto& v : ids) {
      if (!v.is_number_integer()) return absl::InvalidArgumentError("\"ids\" holds a non-integer");
      const int64_t id = v.get<int64_t>();
      if (id < 0 || id > INT32_MAX) {
        return absl::InvalidArgumentError(absl::StrCat("id ", id, " out of range"));
      }
      out.push_back(static_cast<int>(id));
    }
    return out;
  }
  if (j.contains("text")) {
    if (!j["text"].is_string()) return absl::InvalidArgumentError("\"text\" is not a string");
    ASSIGN_OR_RETURN(std::vector<int> ids, tokenizer.Encode(j["text"].get<std::string>()));
    if (tokenizer.adds_bos()) ids.insert(ids.begin(), tokenizer.bos_id());
    return ids;
  }
  return absl::InvalidArgumentError("neither \"ids\" nor \"text\"");
}

}  // namespace

int ScoreCommand(int argc, char** argv) {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string weights;
  std::string model_dir;
  std::string input;
  int threads = 1;
  std::string device = "cpu";
  std::string dtype = "float32";
  FlagSet flags(
      "score",
      "Per-token log-probabilities and greedy next tokens of sequences under a\n"
      "policy, to check that a checkpoint loaded right. Reads JSONL lines\n"
      "{\"ids\": [...]} or {\"text\": \"...\"} (BOS added as the model's tokenizer does);\n"
      "prints one JSON line per input:\n"
      "{\"ids\", \"logprobs\" (entry i = log p(ids[i+1] | ids[0..i]), natural log,\n"
      "float32 compute), \"greedy\" (argmax next token at each position)}.");
  flags.String("config", &config_path,
               "Run config YAML giving the model (model section); empty = the defaults.");
  flags.StringList("set", &overrides, "Override a config key (repeatable).");
  flags.String("model", &model_dir,
               "A Hugging Face model directory (sets model.hf_path): shape, weights, tokenizer.");
  flags.String("weights", &weights,
               "rlvr weights: a weight file or a checkpoint directory (ckpt-<step>); empty = the\n"
               "Hugging Face weights of model.hf_path.");
  flags.String("input", &input, "JSONL file of sequences ('-' = stdin). Required.");
  flags.Int("threads", &threads, "Intra-op threads (torch::set_num_threads).");
  flags.String("device", &device, "auto, cpu, cuda or cuda:N (as actor.device).");
  flags.String("dtype", &dtype, "Compute dtype: float32, bfloat16 or auto (bfloat16 on CUDA).");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  const CommandReporter command("score");
  if (input.empty()) return command.Fail(absl::InvalidArgumentError("--input is required"), 2);
  absl::StatusOr<RunConfig> config = config_path.empty() && overrides.empty()
                                         ? absl::StatusOr<RunConfig>(RunConfig())
                                         : LoadCommandConfig(config_path, overrides);
  if (!config.ok()) return command.Fail(config.status(), 2);
  if (!model_dir.empty()) config->model.hf_path = model_dir;
  torch::set_num_threads(std::max(1, threads));
  if (dtype != "auto" && dtype != "float32" && dtype != "bfloat16") {
    return command.Fail(absl::InvalidArgumentError("--dtype must be auto, float32 or bfloat16"), 2);
  }
  absl::StatusOr<policy::Placement> placement =
      policy::ResolvePlacement("--device", device, dtype, /*rank=*/0);
  if (!placement.ok()) return command.Fail(placement.status(), 2);
  absl::StatusOr<CommandPolicy> loaded = LoadCommandPolicy(config->model, weights, *placement);
  if (!loaded.ok()) return command.Fail(loaded.status(), 1);

  std::ifstream file;
  if (input != "-") {
    file.open(input);
    if (!file) return command.Fail(absl::NotFoundError(absl::StrCat("cannot open ", input)), 1);
  }
  std::istream& in = input == "-" ? std::cin : file;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    absl::StatusOr<std::vector<int>> ids = LineIds(line, *loaded->resolved.tokenizer);
    absl::StatusOr<policy::SequenceScore> score =
        ids.ok() ? policy::ScoreSequence(loaded->model, *ids) : ids.status();
    if (!score.ok()) {
      return command.Fail(absl::InvalidArgumentError(
                              absl::StrCat(input, ":", line_no, ": ", score.status().message())),
                          1);
    }
    nlohmann::json out = {{"ids", *ids}, {"logprobs", score->logprobs}, {"greedy", score->greedy}};
    std::printf("%s\n", out.dump().c_str());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace rlvr::services
