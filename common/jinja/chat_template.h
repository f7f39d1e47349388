// A Hugging Face model's chat template, rendered as transformers'
// tokenizer.apply_chat_template(messages, tokenize=False,
// add_generation_prompt=..., **kwargs) renders it.
//
// The template comes from the model directory: `chat_template.jinja` when
// present (newer checkpoints), otherwise the `chat_template` of
// `tokenizer_config.json`: a string, or a list of {"name", "template"}
// entries of which "default" is used. The special tokens the template may
// print (bos_token, eos_token, unk_token, pad_token) come from
// tokenizer_config.json, written as strings or as {"content": ...} objects.
//
// Apply's context is what transformers passes: messages, tools (None unless
// given in `kwargs`), documents (None), add_generation_prompt, the special
// tokens, then `kwargs` (which override any of those).
//
// Thread safety: a ChatTemplate is immutable; Apply may be called from
// several threads at once.
#ifndef RLVR_COMMON_JINJA_CHAT_TEMPLATE_H_
#define RLVR_COMMON_JINJA_CHAT_TEMPLATE_H_

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/jinja/template.h"

namespace rlvr::jinja {

class ChatTemplate {
 public:
  // Loads and parses the template of the model directory `dir`. NotFound
  // when neither file holds a template ("<dir> has no chat template: ...");
  // InvalidArgument, naming the file, for invalid JSON, a template of the
  // wrong type, a list without "default", or a template that does not parse
  // (with its line and column).
  static absl::StatusOr<std::unique_ptr<ChatTemplate>> FromModelDir(const std::string& dir);

  // A template given as text, with the special tokens it may print (e.g.
  // {"bos_token": "<s>"}). `origin` names it in errors.
  static absl::StatusOr<std::unique_ptr<ChatTemplate>> FromSource(
      std::string source, std::map<std::string, std::string> special_tokens, std::string origin);

  // Renders `messages` (a JSON array of {"role", "content", ...} objects).
  // `kwargs` is a JSON object of extra template variables (e.g.
  // {"enable_thinking": false}). Errors are the template's (see
  // template.h), prefixed with the origin.
  absl::StatusOr<std::string> Apply(const nlohmann::ordered_json& messages,
                                    bool add_generation_prompt,
                                    const nlohmann::ordered_json& kwargs,
                                    const RenderOptions& options = {}) const;

  const std::string& source() const { return source_; }
  // Where the template was read from ("<dir>/tokenizer_config.json").
  const std::string& origin() const { return origin_; }
  // The special token `name` ("bos_token"), or "" when the model has none.
  std::string special_token(const std::string& name) const;

 private:
  ChatTemplate() = default;

  std::string source_;
  std::string origin_;
  std::map<std::string, std::string> special_tokens_;
  std::unique_ptr<Template> template_;
};

// Parses extra template variables written as comma-separated `name=value`
// pairs, e.g. "enable_thinking=false, date_string=26 Jul 2024". A value is
// read as JSON when it is JSON (true, false, null, 3, 2.5, "text", [..],
// {..}); otherwise it is the text itself, trimmed. Commas inside quotes or
// brackets do not separate pairs. "" is an empty object. InvalidArgument
// (saying what is wrong, for the caller to prefix with its config key) for a
// pair without "=", a name that is not an identifier, or a repeated name.
absl::StatusOr<nlohmann::ordered_json> ParseTemplateKwargs(absl::string_view text);

}  // namespace rlvr::jinja

#endif  // RLVR_COMMON_JINJA_CHAT_TEMPLATE_H_
