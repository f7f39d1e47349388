// `rlvr export`: rlvr weights (a checkpoint or a weight file) of a model
// that came from a Hugging Face directory -> a Hugging Face directory again
// (config.json, model.safetensors, generation_config.json, tokenizer files).
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/config/flags.h"
#include "common/config/run_config.h"
#include "common/policy/hf_checkpoint.h"
#include "common/policy/hf_config.h"
#include "common/policy/model.h"
#include "services/commands.h"
#include "services/load_config.h"
#include "services/policy_source.h"

namespace rlvr::services {
namespace {

namespace fs = std::filesystem;

// Tokenizer and generation files copied verbatim from the source directory
// when present (which of them a model has varies).
constexpr const char* kCopiedFiles[] = {"tokenizer.json",
                                        "tokenizer_config.json",
                                        "special_tokens_map.json",
                                        "vocab.json",
                                        "merges.txt",
                                        "tokenizer.model",
                                        "added_tokens.json",
                                        "chat_template.jinja",
                                        "generation_config.json"};

absl::StatusOr<torch::ScalarType> ParseDtype(const std::string& name) {
  if (name == "f32" || name == "float32") return torch::kFloat32;
  if (name == "bf16" || name == "bfloat16") return torch::kBFloat16;
  if (name == "f16" || name == "float16") return torch::kFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported dtype '", name, "' (f32, bf16 or f16)"));
}

// The source directory's model: --model, else the run config's model.hf_path
// (--config, else the config.yaml of the run the checkpoint belongs to:
// runs/<name>/checkpoints/ckpt-<step> -> runs/<name>/config.yaml).
absl::StatusOr<std::string> SourceDir(const std::string& model_dir, const std::string& config_path,
                                      const std::vector<std::string>& overrides,
                                      const std::string& checkpoint) {
  if (!model_dir.empty()) return model_dir;
  std::string path = config_path;
  if (path.empty()) {
    fs::path guess = fs::path(checkpoint).lexically_normal();
    if (guess.has_filename() == false) guess = guess.parent_path();
    guess = guess.parent_path().parent_path() / "config.yaml";
    if (!fs::exists(guess)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot tell which Hugging Face model ", checkpoint,
          " came from: pass --model DIR or --config RUN_CONFIG (no ", guess.string(), ")"));
    }
    path = guess.string();
  }
  ASSIGN_OR_RETURN(RunConfig config, LoadCommandConfig(path, overrides));
  if (config.model.hf_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": model.hf_path is empty; export writes Hugging Face directories of models that "
        "came from one (pass --model DIR)"));
  }
  return config.model.hf_path;
}

absl::Status CopyFile(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("copy ", from.string(), " -> ", to.string(), ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status Export(const std::string& source, const std::string& checkpoint,
                    const std::string& out_dir, const std::string& dtype_flag) {
  ASSIGN_OR_RETURN(policy::HfModelInfo info, policy::ReadHfModelInfo(source));
  std::string dtype_name = dtype_flag;
  if (dtype_name.empty()) {
    dtype_name = info.torch_dtype.empty() ? "float32" : info.torch_dtype;
  }
  ASSIGN_OR_RETURN(torch::ScalarType dtype, ParseDtype(dtype_name));
  // The source's own config (its max_position_embeddings and all), so that
  // config.json is the source's with the same shape; the run's cap on
  // sequence length only limits what rlvr trains on.
  ASSIGN_OR_RETURN(int vocab, policy::ModelVocabSize(info.config, 0));
  ASSIGN_OR_RETURN(policy::Transformer model, policy::CreateTransformer(info.config, vocab, 0));
  uint64_t version = 0;
  RETURN_IF_ERROR(LoadRlvrWeights(checkpoint, model, &version));
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", out_dir, ": ", ec.message()));
  RETURN_IF_ERROR(policy::ExportHfModel(model, out_dir, dtype, info.config_json));
  for (const char* name : kCopiedFiles) {
    const fs::path from = fs::path(source) / name;
    if (fs::exists(from)) RETURN_IF_ERROR(CopyFile(from, fs::path(out_dir) / name));
  }
  if (!fs::exists(fs::path(out_dir) / "generation_config.json")) {
    // A minimal one from config.json's token ids (what transformers derives
    // when a model has none).
    nlohmann::json src = nlohmann::json::parse(info.config_json, nullptr, false);
    nlohmann::json gen = {{"_from_model_config", true}};
    for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
      if (src.is_object() && src.contains(key) && !src[key].is_null()) gen[key] = src[key];
    }
    RETURN_IF_ERROR(WriteFileAtomically((fs::path(out_dir) / "generation_config.json").string(),
                                        gen.dump(2) + "\n"));
  }
  std::printf("export: %s (policy version %llu) -> %s (%s, from %s)\n", checkpoint.c_str(),
              static_cast<unsigned long long>(version), out_dir.c_str(), dtype_name.c_str(),
              source.c_str());
  return absl::OkStatus();
}

}  // namespace

int ExportCommand(int argc, char** argv) {
  std::string checkpoint;
  std::string out;
  std::string dtype;
  std::string model_dir;
  std::string config_path;
  std::vector<std::string> overrides;
  FlagSet flags("export",
                "Writes rlvr weights of a model that came from a Hugging Face directory as a\n"
                "Hugging Face directory: config.json (the source's, same architecture),\n"
                "model.safetensors, generation_config.json and the source's tokenizer files.");
  flags.String("checkpoint", &checkpoint,
               "A learner checkpoint directory (runs/<name>/checkpoints/ckpt-<step>) or a\n"
               "weight file. Required.");
  flags.String("out", &out, "Output directory (created). Required.");
  flags.String("dtype", &dtype, "f32, bf16 or f16; empty = the source's torch_dtype.");
  flags.String("model", &model_dir,
               "The source Hugging Face directory; empty = model.hf_path\n"
               "of --config, or of the checkpoint's run config.yaml.");
  flags.String("config", &config_path, "Run config YAML naming model.hf_path.");
  flags.StringList("set", &overrides, "Override a config key (repeatable).");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  LoggingOptions logging;
  logging.program = "rlvr-export";
  InitLogging(logging);
  if (checkpoint.empty() || out.empty()) {
    std::fprintf(stderr, "rlvr export: --checkpoint and --out are required\n");
    return 2;
  }
  absl::StatusOr<std::string> source = SourceDir(model_dir, config_path, overrides, checkpoint);
  if (!source.ok()) {
    std::fprintf(stderr, "rlvr export: %s\n", std::string(source.status().message()).c_str());
    return 2;
  }
  if (absl::Status s = Export(*source, checkpoint, out, dtype); !s.ok()) {
    std::fprintf(stderr, "rlvr export: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace rlvr::services
