#include "common/tasks/task.h"

#include <glog/logging.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/splitmix.h"
#include "common/base/status_macros.h"
#include "common/tasks/chain_task.h"
#include "common/tasks/expression_draw.h"
#include "common/tasks/prompt_format.h"

namespace rlvr {

Task::~Task() = default;

namespace {

// Exact integer arithmetic with overflow detection.
bool EvalExpression(const std::vector<int64_t>& operands, const std::string& ops, int64_t* out) {
  // Standard precedence: fold '*' runs into terms, then add/subtract.
  int64_t total = 0;
  int64_t term = operands[0];
  char pending = '+';
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k] == '*') {
      if (__builtin_mul_overflow(term, operands[k + 1], &term)) return false;
      continue;
    }
    if (pending == '+' ? __builtin_add_overflow(total, term, &total)
                       : __builtin_sub_overflow(total, term, &total)) {
      return false;
    }
    pending = ops[k];
    term = operands[k + 1];
  }
  if (pending == '+' ? __builtin_add_overflow(total, term, &total)
                     : __builtin_sub_overflow(total, term, &total)) {
    return false;
  }
  *out = total;
  return true;
}

class FixedTask final : public Task {
 public:
  FixedTask(std::string name, std::vector<Prompt> train, std::vector<Prompt> heldout)
      : name_(std::move(name)), train_(std::move(train)), heldout_(std::move(heldout)) {}
  std::string name() const override { return name_; }
  const std::vector<Prompt>& train() const override { return train_; }
  const std::vector<Prompt>& heldout() const override { return heldout_; }
  Verdict Verify(absl::string_view answer, absl::string_view completion_text) const override {
    return VerifyFinalAnswer(answer, completion_text);
  }
  // Moves the splits out (MakeTask formats them).
  void Release(std::vector<Prompt>* train, std::vector<Prompt>* heldout) {
    *train = std::move(train_);
    *heldout = std::move(heldout_);
  }

 private:
  std::string name_;
  std::vector<Prompt> train_;
  std::vector<Prompt> heldout_;
};

absl::StatusOr<std::unique_ptr<Task>> MakeArithmetic(const TaskConfig& c) {
  RETURN_IF_ERROR(CheckExpressionConfig(c, "+-*", "unsupported operator", 18));
  const double space = ExpressionSpace(c);
  const int64_t needed = int64_t{c.train_size} + c.heldout_size;
  if (space < double(needed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("task: only ", space,
                     " distinct expressions exist for these ops/digits/num_terms, but "
                     "train_size + heldout_size = ",
                     needed));
  }
  ASSIGN_OR_RETURN(std::vector<Prompt> all,
                   DrawDistinctPrompts(c, needed, [](const DrawnExpression& e) {
                     int64_t result;
                     return EvalExpression(e.operands, e.ops, &result)
                                ? std::optional<std::string>(absl::StrCat(result))
                                : std::nullopt;
                   }));
  auto [train, heldout] = SplitDrawnPrompts(std::move(all), c.train_size);
  return std::unique_ptr<Task>(
      std::make_unique<FixedTask>("arithmetic", std::move(train), std::move(heldout)));
}

// One JSONL file's prompts; ids go into `ids` (duplicates are errors).
absl::Status ReadJsonl(const TaskConfig& c, const std::string& path,
                       std::unordered_map<std::string, std::string>* ids,
                       std::vector<Prompt>* out) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("task: cannot open ", path));
  const std::string file_name = std::filesystem::path(path).filename().string();
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string where = absl::StrCat(path, ":", line_no);
    auto bad = [&where](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
    };
    if (line.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      return bad(absl::StrCat("invalid JSON (", e.what(), ")"));
    }
    if (!j.is_object()) return bad("not a JSON object");
    Prompt p;
    auto question = j.find(c.question_field);
    if (question == j.end()) return bad(absl::StrCat("missing \"", c.question_field, "\""));
    if (!question->is_string())
      return bad(absl::StrCat("\"", c.question_field, "\" must be a string"));
    p.text = question->get<std::string>();
    auto answer = j.find(c.answer_field);
    if (answer == j.end()) return bad(absl::StrCat("missing \"", c.answer_field, "\""));
    if (answer->is_string()) {
      p.answer = answer->get<std::string>();
    } else if (answer->is_number()) {
      p.answer = answer->dump();
    } else {
      return bad(absl::StrCat("\"", c.answer_field, "\" must be a string or a number"));
    }
    if (c.id_field.empty()) {
      p.id = absl::StrCat(file_name, ":", line_no);
    } else {
      auto id = j.find(c.id_field);
      if (id == j.end()) return bad(absl::StrCat("missing \"", c.id_field, "\""));
      if (id->is_string()) {
        p.id = id->get<std::string>();
      } else if (id->is_number_integer()) {
        p.id = id->dump();
      } else {
        return bad(absl::StrCat("\"", c.id_field, "\" must be a string or an integer"));
      }
    }
    auto [it, inserted] = ids->emplace(p.id, where);
    if (!inserted)
      return bad(absl::StrCat("duplicate id \"", p.id, "\" (first at ", it->second, ")"));
    out->push_back(std::move(p));
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("task: error reading ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Task>> MakeJsonl(const TaskConfig& c) {
  if (c.train_path.empty())
    return absl::InvalidArgumentError("task.train_path: required for jsonl");
  if (!c.heldout_path.empty() && c.heldout_fraction > 0) {
    return absl::InvalidArgumentError(
        "task.heldout_fraction: set together with task.heldout_path; use one of them");
  }
  if (!(c.heldout_fraction >= 0 && c.heldout_fraction < 1)) {
    return absl::InvalidArgumentError("task.heldout_fraction: must be in [0, 1)");
  }
  std::unordered_map<std::string, std::string> ids;  // id -> file:line
  std::vector<Prompt> train;
  RETURN_IF_ERROR(ReadJsonl(c, c.train_path, &ids, &train));
  std::vector<Prompt> heldout;
  if (!c.heldout_path.empty()) {
    RETURN_IF_ERROR(ReadJsonl(c, c.heldout_path, &ids, &heldout));
  } else if (c.heldout_fraction > 0) {
    // The k prompts with the smallest hash of (seed, id) are held out: an
    // exact count, independent of the order of lines, and mostly unchanged
    // when lines are appended.
    const size_t k = static_cast<size_t>(std::llround(c.heldout_fraction * double(train.size())));
    std::vector<std::pair<uint64_t, size_t>> keys(train.size());
    for (size_t i = 0; i < train.size(); ++i) {
      keys[i] = {SplitMix64(static_cast<uint64_t>(c.seed) ^ Fingerprint64(train[i].id)), i};
    }
    std::nth_element(keys.begin(), keys.begin() + k, keys.end());
    std::vector<bool> held(train.size(), false);
    for (size_t i = 0; i < k; ++i) held[keys[i].second] = true;
    std::vector<Prompt> kept;
    kept.reserve(train.size() - k);
    for (size_t i = 0; i < train.size(); ++i) {
      (held[i] ? heldout : kept).push_back(std::move(train[i]));
    }
    train = std::move(kept);
  }
  return std::unique_ptr<Task>(
      std::make_unique<FixedTask>("jsonl", std::move(train), std::move(heldout)));
}

// The prompts of config.kind, before formatting. One line per kind.
absl::StatusOr<std::unique_ptr<Task>> MakeTaskOfKind(const TaskConfig& config) {
  if (config.kind == "arithmetic") return MakeArithmetic(config);
  if (config.kind == "jsonl") return MakeJsonl(config);
  if (config.kind == "chain") return MakeChainTask(config);
  return absl::InvalidArgumentError(absl::StrCat("task.kind: unknown '", config.kind, "'"));
}

// What MakeTask returns: formatted, length-filtered prompts and the
// configured verifier.
class PreparedTask final : public Task {
 public:
  PreparedTask(std::string name, std::vector<Prompt> train, std::vector<Prompt> heldout,
               std::unique_ptr<Verifier> verifier, std::vector<int> stop_ids, int64_t skipped,
               std::unique_ptr<Task> kind_verifier = nullptr)
      : name_(std::move(name)),
        train_(std::move(train)),
        heldout_(std::move(heldout)),
        verifier_(std::move(verifier)),
        stop_ids_(std::move(stop_ids)),
        skipped_(skipped),
        kind_verifier_(std::move(kind_verifier)) {}
  std::string name() const override { return name_; }
  const std::vector<Prompt>& train() const override { return train_; }
  const std::vector<Prompt>& heldout() const override { return heldout_; }
  Verdict Verify(absl::string_view answer, absl::string_view completion_text) const override {
    if (kind_verifier_ != nullptr) return kind_verifier_->Verify(answer, completion_text);
    return verifier_->Verify(answer, completion_text);
  }
  const std::vector<int>& stop_ids() const override { return stop_ids_; }
  int64_t skipped_too_long() const override { return skipped_; }

 private:
  std::string name_;
  std::vector<Prompt> train_;
  std::vector<Prompt> heldout_;
  std::unique_ptr<Verifier> verifier_;
  std::vector<int> stop_ids_;
  int64_t skipped_;
  // A kind whose reference answer is not the final answer (chain: the whole
  // worked chain) scores with its own Verify while task.verifier is left at
  // the default.
  std::unique_ptr<Task> kind_verifier_;
};

// Renders every prompt with `format`, encodes it and drops those longer than
// `max_tokens` (0 = no limit). Returns how many were dropped.
absl::StatusOr<int64_t> FormatAndFilter(const PromptFormat& format, const Tokenizer& tokenizer,
                                        int max_tokens, std::vector<Prompt>* prompts) {
  int64_t skipped = 0;
  size_t kept = 0;
  for (size_t i = 0; i < prompts->size(); ++i) {
    Prompt& p = (*prompts)[i];
    absl::StatusOr<std::string> text = format.TryRender(p.text);
    if (!text.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task: prompt ", p.id, ": ", text.status().message()));
    }
    p.text = *std::move(text);
    absl::StatusOr<std::vector<int>> ids = EncodePrompt(tokenizer, p.text);
    if (!ids.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task: prompt ", p.id, ": ", ids.status().message()));
    }
    if (max_tokens > 0 && ids->size() > static_cast<size_t>(max_tokens)) {
      ++skipped;
      continue;
    }
    if (kept != i) (*prompts)[kept] = std::move(p);
    ++kept;
  }
  prompts->resize(kept);
  return skipped;
}

// task.prompt_format: "model" renders the chat template of the model
// directory; the rest are built in.
absl::StatusOr<PromptFormat> MakePromptFormat(const TaskConfig& config, const Tokenizer& tokenizer,
                                              const TaskOptions& options) {
  if (config.prompt_format != "model") {
    if (!config.chat_template_kwargs.empty()) {
      return absl::InvalidArgumentError(
          "task.chat_template_kwargs: set, but only task.prompt_format model uses it");
    }
    return PromptFormat::Create(config.prompt_format, config.system_prompt, tokenizer);
  }
  if (options.model_dir.empty() && !options.load_prompts) {
    // A process that only verifies (an actor) renders no prompt: the
    // tokenizer's stop ids are all it could use.
    return PromptFormat::Create("raw", "", tokenizer);
  }
  return PromptFormat::CreateFromModel(options.model_dir, config.system_prompt,
                                       config.chat_template_kwargs, tokenizer);
}

}  // namespace

const std::vector<int>& Task::stop_ids() const {
  static const std::vector<int>* const kNone = new std::vector<int>();
  return *kNone;
}

int MaxPromptTokens(const RunConfig& config) {
  return config.model.max_seq_len - config.sampling.max_new_tokens;
}

absl::StatusOr<std::unique_ptr<Task>> MakeTask(const TaskConfig& config, const Tokenizer& tokenizer,
                                               const TaskOptions& options) {
  ASSIGN_OR_RETURN(PromptFormat format, MakePromptFormat(config, tokenizer, options));
  VerifierOptions verifier_options;
  verifier_options.format_reward = config.format_reward;
  verifier_options.math_relative_tolerance = config.math_relative_tolerance;
  ASSIGN_OR_RETURN(std::unique_ptr<Verifier> verifier,
                   MakeVerifier(config.verifier, verifier_options));
  if (format.kind() == "model" && tokenizer.adds_bos() && !format.writes_bos()) {
    LOG(WARNING) << "task.prompt_format model: the chat template does not write the BOS token "
                    "but the tokenizer adds one; rlvr prepends it (Hugging Face's "
                    "apply_chat_template(tokenize=True) would not)";
  }
  if (!options.model_dir.empty() && format.kind() != "model") {
    ASSIGN_OR_RETURN(std::vector<std::string> warnings,
                     CheckModelChatTemplate(options.model_dir, format));
    for (const std::string& w : warnings) LOG(WARNING) << "task.prompt_format: " << w;
  }
  std::vector<Prompt> train, heldout;
  int64_t skipped = 0;
  if (options.load_prompts) {
    ASSIGN_OR_RETURN(std::unique_ptr<Task> source, MakeTaskOfKind(config));
    if (auto* fixed = dynamic_cast<FixedTask*>(source.get())) {
      fixed->Release(&train, &heldout);
    } else {
      train = source->train();
      heldout = source->heldout();
    }
    const size_t train_before = train.size(), heldout_before = heldout.size();
    ASSIGN_OR_RETURN(int64_t skipped_train,
                     FormatAndFilter(format, tokenizer, options.max_prompt_tokens, &train));
    ASSIGN_OR_RETURN(int64_t skipped_heldout,
                     FormatAndFilter(format, tokenizer, options.max_prompt_tokens, &heldout));
    skipped = skipped_train + skipped_heldout;
    if (skipped > 0) {
      LOG(WARNING) << "task " << config.kind << ": skipped " << skipped << " prompts longer than "
                   << options.max_prompt_tokens
                   << " tokens (model.max_seq_len - sampling.max_new_tokens): " << skipped_train
                   << " of " << train_before << " training, " << skipped_heldout << " of "
                   << heldout_before << " held-out";
    }
  }
  std::unique_ptr<Task> kind_verifier;
  if (config.kind == "chain" && config.verifier == "final_answer") {
    ASSIGN_OR_RETURN(kind_verifier, MakeTaskOfKind(config));
  }
  return std::unique_ptr<Task>(std::make_unique<PreparedTask>(
      config.kind, std::move(train), std::move(heldout), std::move(verifier), format.stop_ids(),
      skipped, std::move(kind_verifier)));
}

absl::StatusOr<std::vector<int>> EncodePrompt(const Tokenizer& tokenizer, absl::string_view text) {
  ASSIGN_OR_RETURN(std::vector<int> ids, tokenizer.Encode(text));
  const int bos = tokenizer.bos_id();
  if (tokenizer.adds_bos() && (ids.empty() || ids.front() != bos)) ids.insert(ids.begin(), bos);
  return ids;
}

absl::StatusOr<std::vector<int>> EncodeTargetCompletion(const Tokenizer& tokenizer,
                                                        absl::string_view answer) {
  ASSIGN_OR_RETURN(std::vector<int> ids, tokenizer.Encode(answer));
  ids.push_back(tokenizer.eos_id());
  return ids;
}

std::string CompletionText(const Tokenizer& tokenizer, const std::vector<int>& completion) {
  std::vector<int> kept;
  for (int id : completion) {
    if (id == tokenizer.eos_id()) break;
    kept.push_back(id);
  }
  return tokenizer.Decode(kept);
}

}  // namespace rlvr
