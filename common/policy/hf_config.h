// Hugging Face config.json <-> rlvr::ModelConfig, torch-free.
//
// Supported architectures (config.json "architectures"[0] / "model_type"):
// LlamaForCausalLM / llama, Qwen2ForCausalLM / qwen2, Qwen3ForCausalLM /
// qwen3. Keys read: hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, vocab_size (required); num_key_value_heads,
// head_dim, rms_norm_eps, rope_theta, rope_scaling, tie_word_embeddings,
// attention_bias, mlp_bias, max_position_embeddings, torch_dtype,
// hidden_act, use_sliding_window (optional, with the defaults of the
// architecture's HF config class). Biases follow the architecture: Qwen2 has
// q/k/v biases and none on o_proj; Llama and Qwen3 put `attention_bias` on
// q, k, v and o; Llama's `mlp_bias` on gate, up and down. Qwen3 has the
// per-head q/k RMSNorm.
//
// max_seq_len is set to max_position_embeddings (Llama 3.2: 131072): the
// model then tabulates RoPE angles only for the first positions and computes
// the rest (model.h), so a large context costs no memory up front; a run that
// wants a smaller cap sets it after reading (the pipeline caps it with the
// run config's prompt + completion lengths).
//
// Errors (InvalidArgument / NotFound) name the file and the key: an unknown
// architecture or model_type, a missing required key, a value of the wrong
// type or out of range, an unsupported rope_scaling type, hidden_act other
// than silu, sliding-window attention switched on.
#ifndef RLVR_COMMON_POLICY_HF_CONFIG_H_
#define RLVR_COMMON_POLICY_HF_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config/run_config.h"

namespace rlvr::policy {

struct HfModelInfo {
  rlvr::ModelConfig config;  // arch, shape, vocab_size, hf_path = the directory.
  std::string torch_dtype;   // config.json's torch_dtype ("bfloat16", ...); "" if absent.
  std::string config_json;   // The file's text, for export to start from.
};

// Parses config.json text; `source` names it in errors. hf_path is left empty.
absl::StatusOr<HfModelInfo> ParseHfConfigJson(absl::string_view json_text,
                                              const std::string& source);

// Reads <dir>/config.json; config.hf_path = dir.
absl::StatusOr<HfModelInfo> ReadHfModelInfo(const std::string& dir);
absl::StatusOr<rlvr::ModelConfig> ReadHfModelConfig(const std::string& dir);

// The config.json for `config` (arch llama/qwen2/qwen3) with torch_dtype
// `torch_dtype` ("float32", "bfloat16", "float16"). If `source_json` is a
// JSON object (the original config.json), its other keys (token ids,
// transformers_version, ...) are kept and the model keys overwritten.
// InvalidArgument for the built-in arch or a config the architecture cannot
// express (e.g. qwen2 with o_bias).
absl::StatusOr<std::string> WriteHfModelConfigJson(const rlvr::ModelConfig& config,
                                                   const std::string& torch_dtype,
                                                   absl::string_view source_json = "");

// The model's vocabulary: config.vocab_size when set (then the tokenizer's
// ids must fit: InvalidArgument if tokenizer_vocab > it), else
// tokenizer_vocab.
absl::StatusOr<int> ModelVocabSize(const rlvr::ModelConfig& config, int tokenizer_vocab);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_HF_CONFIG_H_
