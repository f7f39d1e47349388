#include "common/policy/factory.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/policy/hf_checkpoint.h"
#include "common/policy/hf_config.h"
#include "common/policy/model.h"
#include "common/tokenizer/hf_tokenizer.h"

namespace rlvr::policy {

bool IsHfPolicy(const ModelConfig& config) { return !config.hf_path.empty(); }

absl::StatusOr<ResolvedPolicy> ResolvePolicy(const ModelConfig& config) {
  ResolvedPolicy out;
  if (!IsHfPolicy(config)) {
    out.model = config;
    out.tokenizer = MakeCharTokenizer();
    ASSIGN_OR_RETURN(out.vocab_size, ModelVocabSize(config, out.tokenizer->vocab_size()));
    return out;
  }
  const std::string& dir = config.hf_path;
  if (!std::filesystem::exists(std::filesystem::path(dir) / "config.json")) {
    return absl::NotFoundError(
        absl::StrCat("model.hf_path ", dir,
                     ": no config.json (a Hugging Face model directory is expected; "
                     "configs/tiny-qwen3.yaml's is made by `bash scripts/make-tiny-qwen3`)"));
  }
  ASSIGN_OR_RETURN(HfModelInfo info, ReadHfModelInfo(dir));
  out.model = info.config;
  // model.max_seq_len stays the run's cap on prompt + completion tokens
  // (config.json's max_position_embeddings is the model's own limit).
  out.model.max_seq_len = std::min(config.max_seq_len, info.config.max_seq_len);
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = LoadTokenizer(dir);
  if (!tokenizer.ok()) {
    return absl::Status(
        tokenizer.status().code(),
        absl::StrCat("model.hf_path ", dir, ": the tokenizer: ", tokenizer.status().message()));
  }
  out.tokenizer = std::move(*tokenizer);
  ASSIGN_OR_RETURN(out.vocab_size, ModelVocabSize(out.model, out.tokenizer->vocab_size()));
  return out;
}

absl::StatusOr<Transformer> CreateInitialPolicy(const ModelConfig& model, int vocab_size,
                                                uint64_t init_seed) {
  if (!IsHfPolicy(model)) return CreateTransformer(model, vocab_size, init_seed);
  HfLoadOptions options;
  options.max_seq_len = model.max_seq_len;
  ASSIGN_OR_RETURN(Transformer loaded, LoadHfModel(model.hf_path, options));
  if (loaded->vocab_size() != vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("model.hf_path ", model.hf_path, ": vocabulary ",
                                                   loaded->vocab_size(), " != expected ",
                                                   vocab_size));
  }
  return loaded;
}

}  // namespace rlvr::policy
