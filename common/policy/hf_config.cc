#include "common/policy/hf_config.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace rlvr::policy {
namespace {

using Json = nlohmann::json;

struct ArchName {
  const char* arch;          // rlvr's name.
  const char* architecture;  // config.json "architectures"[0].
  const char* model_type;
};
constexpr ArchName kArchs[] = {
    {"llama", "LlamaForCausalLM", "llama"},
    {"qwen2", "Qwen2ForCausalLM", "qwen2"},
    {"qwen3", "Qwen3ForCausalLM", "qwen3"},
};

class Reader {
 public:
  Reader(const Json& j, const std::string& source) : j_(j), source_(source) {}

  absl::Status Error(absl::string_view key, absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": key '", key, "': ", why));
  }
  bool Has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  // A positive integer (required unless `fallback` is given).
  absl::StatusOr<int> PositiveInt(const char* key, std::optional<int> fallback = std::nullopt,
                                  int64_t max = std::numeric_limits<int32_t>::max()) const {
    if (!Has(key)) {
      if (fallback.has_value()) return *fallback;
      return Error(key, "missing");
    }
    const Json& v = j_[key];
    if (!v.is_number_integer()) return Error(key, "must be an integer");
    const int64_t x = v.get<int64_t>();
    if (x < 1 || x > max) return Error(key, absl::StrCat("must be in [1, ", max, "], got ", x));
    return static_cast<int>(x);
  }
  absl::StatusOr<double> PositiveDouble(const Json& obj, const std::string& key,
                                        std::optional<double> fallback) const {
    if (!obj.contains(key) || obj[key].is_null()) {
      if (fallback.has_value()) return *fallback;
      return Error(key, "missing");
    }
    const Json& v = obj[key];
    if (!v.is_number()) return Error(key, "must be a number");
    const double x = v.get<double>();
    if (!(x > 0) || x > 1e30) return Error(key, absl::StrCat("must be positive, got ", x));
    return x;
  }
  absl::StatusOr<bool> Bool(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    if (!j_[key].is_boolean()) return Error(key, "must be true or false");
    return j_[key].get<bool>();
  }
  absl::StatusOr<std::string> String(const char* key) const {
    if (!Has(key)) return std::string();
    if (!j_[key].is_string()) return Error(key, "must be a string");
    return j_[key].get<std::string>();
  }

 private:
  const Json& j_;
  const std::string& source_;
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<HfModelInfo> ParseHfConfigJson(absl::string_view json_text,
                                              const std::string& source) {
  Json j = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(source + ": not valid JSON");
  if (!j.is_object()) return absl::InvalidArgumentError(source + ": not a JSON object");
  Reader r(j, source);

  // Architecture: "architectures"[0] and "model_type" must agree.
  const ArchName* arch = nullptr;
  if (r.Has("architectures")) {
    const Json& a = j["architectures"];
    if (!a.is_array() || a.empty() || !a[0].is_string()) {
      return r.Error("architectures", "must be a non-empty list of strings");
    }
    const std::string name = a[0].get<std::string>();
    for (const ArchName& k : kArchs) {
      if (name == k.architecture) arch = &k;
    }
    if (arch == nullptr) {
      return r.Error("architectures",
                     absl::StrCat("unsupported architecture '", name,
                                  "' (supported: LlamaForCausalLM, Qwen2ForCausalLM, "
                                  "Qwen3ForCausalLM)"));
    }
  }
  ASSIGN_OR_RETURN(std::string model_type, r.String("model_type"));
  if (!model_type.empty()) {
    const ArchName* by_type = nullptr;
    for (const ArchName& k : kArchs) {
      if (model_type == k.model_type) by_type = &k;
    }
    if (by_type == nullptr) {
      return r.Error("model_type", absl::StrCat("unsupported model_type '", model_type,
                                                "' (supported: llama, qwen2, qwen3)"));
    }
    if (arch != nullptr && arch != by_type) {
      return r.Error("model_type", absl::StrCat("'", model_type, "' contradicts architectures '",
                                                arch->architecture, "'"));
    }
    arch = by_type;
  }
  if (arch == nullptr) return r.Error("architectures", "missing (and no model_type)");
  const std::string a = arch->arch;

  HfModelInfo info;
  ModelConfig& c = info.config;
  c.arch = a;
  ASSIGN_OR_RETURN(c.d_model, r.PositiveInt("hidden_size"));
  ASSIGN_OR_RETURN(c.d_ff, r.PositiveInt("intermediate_size"));
  ASSIGN_OR_RETURN(c.n_layers, r.PositiveInt("num_hidden_layers"));
  ASSIGN_OR_RETURN(c.n_heads, r.PositiveInt("num_attention_heads"));
  ASSIGN_OR_RETURN(c.vocab_size, r.PositiveInt("vocab_size"));
  ASSIGN_OR_RETURN(c.n_kv_heads, r.PositiveInt("num_key_value_heads", c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0) {
    return r.Error("num_key_value_heads", "must divide num_attention_heads");
  }
  // Qwen3Config's head_dim defaults to 128; the others derive it.
  const int default_head_dim =
      a == "qwen3" ? 128 : (c.d_model % c.n_heads == 0 ? c.d_model / c.n_heads : 0);
  if (r.Has("head_dim") || default_head_dim == 0) {
    ASSIGN_OR_RETURN(c.head_dim, r.PositiveInt("head_dim"));
  } else {
    c.head_dim = default_head_dim;
  }
  if (c.head_dim % 2 != 0) return r.Error("head_dim", "must be even (RoPE)");
  ASSIGN_OR_RETURN(c.rms_norm_eps, r.PositiveDouble(j, "rms_norm_eps", 1e-6));
  ASSIGN_OR_RETURN(c.rope_theta, r.PositiveDouble(j, "rope_theta", 10000.0));
  ASSIGN_OR_RETURN(c.max_seq_len,
                   r.PositiveInt("max_position_embeddings", a == "llama" ? 2048 : 32768));
  ASSIGN_OR_RETURN(c.tie_embeddings, r.Bool("tie_word_embeddings", false));
  ASSIGN_OR_RETURN(const bool attention_bias, r.Bool("attention_bias", false));
  ASSIGN_OR_RETURN(const bool mlp_bias, r.Bool("mlp_bias", false));
  if (a == "qwen2") {
    c.qkv_bias = true;  // Qwen2Attention: q/k/v with bias, o_proj without.
    c.o_bias = false;
  } else {
    c.qkv_bias = attention_bias;
    c.o_bias = attention_bias;
  }
  c.mlp_bias = a == "llama" && mlp_bias;
  if (a != "llama" && mlp_bias) return r.Error("mlp_bias", "only Llama has MLP biases");
  c.qk_norm = a == "qwen3";

  ASSIGN_OR_RETURN(const std::string act, r.String("hidden_act"));
  if (!act.empty() && act != "silu") {
    return r.Error("hidden_act", absl::StrCat("'", act, "' is not supported (only silu)"));
  }
  ASSIGN_OR_RETURN(const bool sliding, r.Bool("use_sliding_window", false));
  if (sliding) return r.Error("use_sliding_window", "sliding-window attention is not supported");

  if (r.Has("rope_scaling")) {
    const Json& rs = j["rope_scaling"];
    if (!rs.is_object()) return r.Error("rope_scaling", "must be an object or null");
    std::string type;
    for (const char* k : {"rope_type", "type"}) {
      if (rs.contains(k) && rs[k].is_string()) {
        type = rs[k].get<std::string>();
        break;
      }
    }
    if (type == "llama3") {
      Reader rr(rs, source);
      c.rope_scaling = "llama3";
      ASSIGN_OR_RETURN(c.rope_factor, rr.PositiveDouble(rs, "factor", std::nullopt));
      ASSIGN_OR_RETURN(c.rope_low_freq_factor,
                       rr.PositiveDouble(rs, "low_freq_factor", std::nullopt));
      ASSIGN_OR_RETURN(c.rope_high_freq_factor,
                       rr.PositiveDouble(rs, "high_freq_factor", std::nullopt));
      ASSIGN_OR_RETURN(c.rope_original_max_position,
                       rr.PositiveInt("original_max_position_embeddings"));
      if (c.rope_high_freq_factor <= c.rope_low_freq_factor) {
        return r.Error("rope_scaling.high_freq_factor", "must be > low_freq_factor");
      }
    } else if (type != "default") {
      return r.Error("rope_scaling", absl::StrCat("unsupported rope_scaling type '", type,
                                                  "' (supported: llama3)"));
    }
  }
  ASSIGN_OR_RETURN(info.torch_dtype, r.String("torch_dtype"));
  if (info.torch_dtype.empty()) {
    ASSIGN_OR_RETURN(info.torch_dtype, r.String("dtype"));
  }
  info.config_json = std::string(json_text);
  absl::Status valid = ValidateModelConfig(c);
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat(source, ": ", valid.message()));
  return info;
}

absl::StatusOr<HfModelInfo> ReadHfModelInfo(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  ASSIGN_OR_RETURN(HfModelInfo info, ParseHfConfigJson(text, path));
  info.config.hf_path = dir;
  return info;
}

absl::StatusOr<rlvr::ModelConfig> ReadHfModelConfig(const std::string& dir) {
  ASSIGN_OR_RETURN(HfModelInfo info, ReadHfModelInfo(dir));
  return info.config;
}

absl::StatusOr<std::string> WriteHfModelConfigJson(const rlvr::ModelConfig& c,
                                                   const std::string& torch_dtype,
                                                   absl::string_view source_json) {
  const ArchName* arch = nullptr;
  for (const ArchName& k : kArchs) {
    if (c.arch == k.arch) arch = &k;
  }
  if (arch == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("export: arch '", c.arch, "' has no Hugging Face equivalent"));
  }
  const std::string a = c.arch;
  if (a == "qwen2" && (!c.qkv_bias || c.o_bias)) {
    return absl::InvalidArgumentError("export: qwen2 has q/k/v biases and no o_proj bias");
  }
  if (a != "qwen2" && c.qkv_bias != c.o_bias) {
    return absl::InvalidArgumentError("export: " + a + " puts attention_bias on q, k, v and o");
  }
  if ((a == "qwen3") != c.qk_norm) {
    return absl::InvalidArgumentError("export: only qwen3 has (and must have) q/k norms");
  }
  if (a != "llama" && c.mlp_bias) {
    return absl::InvalidArgumentError("export: only llama has MLP biases");
  }
  if (torch_dtype != "float32" && torch_dtype != "bfloat16" && torch_dtype != "float16") {
    return absl::InvalidArgumentError("export: torch_dtype must be float32, bfloat16 or float16");
  }
  Json j = Json::object();
  if (!source_json.empty()) {
    Json src = Json::parse(source_json.begin(), source_json.end(), nullptr, false);
    if (src.is_object()) j = src;
  }
  const int n_kv = c.n_kv_heads > 0 ? c.n_kv_heads : c.n_heads;
  const int head_dim = c.head_dim > 0 ? c.head_dim : c.d_model / c.n_heads;
  j["architectures"] = {arch->architecture};
  j["model_type"] = arch->model_type;
  j["hidden_size"] = c.d_model;
  j["intermediate_size"] = c.d_ff;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = n_kv;
  j["head_dim"] = head_dim;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["max_position_embeddings"] = c.max_seq_len;
  j["tie_word_embeddings"] = c.tie_embeddings;
  j["vocab_size"] = c.vocab_size;
  j["torch_dtype"] = torch_dtype;
  if (a != "qwen2") j["attention_bias"] = c.qkv_bias;
  if (a == "llama") j["mlp_bias"] = c.mlp_bias;
  if (a != "llama") j["use_sliding_window"] = false;
  if (c.rope_scaling == "llama3") {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", c.rope_factor},
                         {"low_freq_factor", c.rope_low_freq_factor},
                         {"high_freq_factor", c.rope_high_freq_factor},
                         {"original_max_position_embeddings", c.rope_original_max_position}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  return j.dump(2) + "\n";
}

absl::StatusOr<int> ModelVocabSize(const rlvr::ModelConfig& config, int tokenizer_vocab) {
  if (config.vocab_size <= 0) return tokenizer_vocab;
  if (tokenizer_vocab > config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("the tokenizer has ", tokenizer_vocab,
                                                   " ids but the model's vocab_size is ",
                                                   config.vocab_size));
  }
  return config.vocab_size;
}

}  // namespace rlvr::policy
