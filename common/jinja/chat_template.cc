#include "common/jinja/chat_template.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace rlvr::jinja {
namespace {

constexpr const char* kSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "pad_token"};

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The chat_template value of tokenizer_config.json: a string, or a list of
// named templates of which "default" is used.
absl::StatusOr<std::string> TemplateFromConfig(const nlohmann::json& value,
                                               const std::string& file) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    for (const nlohmann::json& entry : value) {
      if (!entry.is_object()) break;
      auto name = entry.find("name");
      auto text = entry.find("template");
      if (name == entry.end() || text == entry.end() || !name->is_string() || !text->is_string()) {
        break;
      }
      if (*name == "default") return text->get<std::string>();
    }
    return absl::InvalidArgumentError(absl::StrCat(
        file,
        ": chat_template is a list without a {\"name\": \"default\", \"template\": ...} "
        "entry"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(file, ": chat_template must be a string or a list of named templates"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChatTemplate>> ChatTemplate::FromModelDir(const std::string& dir) {
  const std::filesystem::path config_path = std::filesystem::path(dir) / "tokenizer_config.json";
  const std::filesystem::path jinja_path = std::filesystem::path(dir) / "chat_template.jinja";
  std::error_code ec;
  std::map<std::string, std::string> special;
  std::optional<std::string> source;
  std::string origin;
  if (std::filesystem::exists(config_path, ec)) {
    ASSIGN_OR_RETURN(std::string text, ReadFile(config_path));
    nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(config_path.string(), ": not a JSON object"));
    }
    for (const char* key : kSpecialTokens) {
      auto it = config.find(key);
      if (it == config.end()) continue;
      if (it->is_string()) {
        special[key] = it->get<std::string>();
      } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
        special[key] = (*it)["content"].get<std::string>();
      }
    }
    auto it = config.find("chat_template");
    if (it != config.end() && !it->is_null()) {
      ASSIGN_OR_RETURN(source, TemplateFromConfig(*it, config_path.string()));
      origin = config_path.string();
    }
  }
  if (std::filesystem::exists(jinja_path, ec)) {
    ASSIGN_OR_RETURN(source, ReadFile(jinja_path));
    origin = jinja_path.string();
  }
  if (!source.has_value()) {
    return absl::NotFoundError(absl::StrCat(
        dir,
        " has no chat template: neither chat_template.jinja nor a chat_template in "
        "tokenizer_config.json (a base model: use task.prompt_format raw or a template "
        "string)"));
  }
  return FromSource(std::move(*source), std::move(special), std::move(origin));
}

absl::StatusOr<std::unique_ptr<ChatTemplate>> ChatTemplate::FromSource(
    std::string source, std::map<std::string, std::string> special_tokens, std::string origin) {
  absl::StatusOr<std::unique_ptr<Template>> parsed = Template::Parse(source);
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(),
                        absl::StrCat(origin, ": chat template: ", parsed.status().message()));
  }
  std::unique_ptr<ChatTemplate> t(new ChatTemplate());
  t->source_ = std::move(source);
  t->origin_ = std::move(origin);
  t->special_tokens_ = std::move(special_tokens);
  t->template_ = std::move(*parsed);
  return t;
}

absl::StatusOr<std::string> ChatTemplate::Apply(const nlohmann::ordered_json& messages,
                                                bool add_generation_prompt,
                                                const nlohmann::ordered_json& kwargs,
                                                const RenderOptions& options) const {
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["tools"] = nullptr;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  for (const auto& [key, value] : special_tokens_) context[key] = value;
  if (!kwargs.is_null()) {
    if (!kwargs.is_object()) {
      return absl::InvalidArgumentError("chat template kwargs must be a JSON object");
    }
    for (const auto& [key, value] : kwargs.items()) context[key] = value;
  }
  absl::StatusOr<std::string> text = template_->Render(context, options);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat(origin_, ": chat template: ", text.status().message()));
  }
  return text;
}

absl::StatusOr<nlohmann::ordered_json> ParseTemplateKwargs(absl::string_view text) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  // Split at commas outside quotes and brackets.
  std::vector<std::string> pairs;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      current.push_back(c);
      if (c == '\\' && i + 1 < text.size()) {
        current.push_back(text[++i]);
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    if (c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      pairs.push_back(std::move(current));
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  pairs.push_back(std::move(current));
  for (const std::string& pair : pairs) {
    const absl::string_view trimmed = absl::StripAsciiWhitespace(pair);
    if (trimmed.empty() && pairs.size() == 1) break;
    const size_t eq = trimmed.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected name=value pairs separated by commas, got '", trimmed, "'"));
    }
    const std::string name(absl::StripAsciiWhitespace(trimmed.substr(0, eq)));
    bool identifier = !name.empty() && !absl::ascii_isdigit(name[0]);
    for (char c : name) identifier = identifier && (absl::ascii_isalnum(c) || c == '_');
    if (!identifier) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", name, "' is not a template variable name"));
    }
    if (out.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat("'", name, "' is given twice"));
    }
    std::string value(absl::StripAsciiWhitespace(trimmed.substr(eq + 1)));
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
      out[name] = value.substr(1, value.size() - 2);  // 'text', as YAML quotes it.
      continue;
    }
    nlohmann::ordered_json parsed =
        nlohmann::ordered_json::parse(value, nullptr, /*allow_exceptions=*/false);
    out[name] = parsed.is_discarded() ? nlohmann::ordered_json(value) : parsed;
  }
  return out;
}

std::string ChatTemplate::special_token(const std::string& name) const {
  auto it = special_tokens_.find(name);
  return it == special_tokens_.end() ? "" : it->second;
}

}  // namespace rlvr::jinja
