// Prompt formats: how a task's question becomes the text the model continues.
//
// `task.prompt_format` names one of:
//  - "raw": the question itself (the synthetic tasks' format).
//  - "chatml": Qwen's chat format, as Qwen3's chat template renders a
//    [system], user turn with the generation prompt:
//      <|im_start|>system\n{system}<|im_end|>\n        (only with a system prompt)
//      <|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n
//    The question is not trimmed. Qwen3's template in thinking mode (its
//    default) ends the prompt there and the model opens its own <think>
//    block; rlvr does the same. (enable_thinking=false appends an empty
//    "<think>\n\n</think>\n\n"; write a template, below, for that.)
//  - "llama3": Llama-3's header format, system and question trimmed of
//    surrounding whitespace as its template does:
//      <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{system}<|eot_id|>
//      <|start_header_id|>user<|end_header_id|>\n\n{question}<|eot_id|>
//      <|start_header_id|>assistant<|end_header_id|>\n\n
//  - "model": the model's own Jinja chat template (common/jinja), read from
//    the model directory (tokenizer_config.json's chat_template or
//    chat_template.jinja) and rendered as Hugging Face's
//    apply_chat_template(messages, add_generation_prompt=True, **kwargs)
//    renders it, with messages [system (when set), user = question] and the
//    extra variables of task.chat_template_kwargs. See CreateFromModel.
//  - any other string containing "{question}": a template; "{question}" is
//    replaced by the question and "{system}" by task.system_prompt (in one
//    pass: text inside the question is never substituted). Special tokens
//    written in it ("<|im_start|>") are encoded as such.
//
// For the built-in chat formats, CheckChatTemplate compares the model's
// template with them (they are not rendered from it).
//
// Thread safety: a PromptFormat is immutable after Create.
#ifndef RLVR_COMMON_TASKS_PROMPT_FORMAT_H_
#define RLVR_COMMON_TASKS_PROMPT_FORMAT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/jinja/chat_template.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr {

class PromptFormat {
 public:
  // Validates `format` (a name or a template) and `system_prompt` against
  // `tokenizer`: a chat format (or a template that writes "<|...|>" markers)
  // needs each of its special tokens to encode as one id; a tokenizer without
  // them (the char tokenizer) is an InvalidArgument naming the format and the
  // token. Also InvalidArgument: an unknown name, a template without
  // "{question}", a system prompt with "raw" or with a template lacking
  // "{system}".
  static absl::StatusOr<PromptFormat> Create(absl::string_view format,
                                             absl::string_view system_prompt,
                                             const Tokenizer& tokenizer);

  // The "model" format: the chat template of the model directory
  // `model_dir` (jinja::ChatTemplate::FromModelDir), rendered with
  // [system (when `system_prompt` is set), user = question], the generation
  // prompt, and the variables of `template_kwargs` (task.chat_template_kwargs,
  // jinja::ParseTemplateKwargs syntax: "enable_thinking=false"). The template
  // is rendered once here for a probe question, so that a template that
  // cannot render this conversation fails at startup. Errors: NotFound when
  // the directory has no chat template; InvalidArgument for a template that
  // does not parse or render (with its file, line and column) and for bad
  // kwargs (naming task.chat_template_kwargs).
  // stop_ids(): the tokenizer's, then each end-of-turn marker the template
  // writes (<|im_end|>, <|eot_id|>, <end_of_turn>, <|end|>) that is one token.
  static absl::StatusOr<PromptFormat> CreateFromModel(const std::string& model_dir,
                                                      absl::string_view system_prompt,
                                                      absl::string_view template_kwargs,
                                                      const Tokenizer& tokenizer);

  // "raw", "chatml", "llama3", "template" or "model".
  const std::string& kind() const { return kind_; }

  // The text the model continues for `question`. "model" renders the
  // template, which can fail (raise_exception on some content): Render
  // returns "" then; use TryRender to see the error.
  std::string Render(absl::string_view question) const;
  absl::StatusOr<std::string> TryRender(absl::string_view question) const;

  // "model": whether the rendered prompt starts with the tokenizer's BOS
  // (Hugging Face tokenizes a rendered chat without adding BOS, while
  // EncodePrompt adds it for tokenizers with adds_bos(); MakeTask warns when
  // the two differ). True for the other kinds.
  bool writes_bos() const { return writes_bos_; }

  // Token ids that end a completion: the tokenizer's stop_ids() (EOS first),
  // then the format's end-of-turn token (<|im_end|>, <|eot_id|>) when it has
  // one and it is not among them.
  const std::vector<int>& stop_ids() const { return stop_ids_; }

  // This format with another system prompt (not re-validated: for checks).
  PromptFormat WithSystemPrompt(absl::string_view system_prompt) const;

 private:
  PromptFormat() = default;

  std::string kind_;
  std::string template_;  // kind "template": the user's string.
  std::string system_;
  std::vector<int> stop_ids_;
  // kind "model": the template and its extra variables.
  std::shared_ptr<const jinja::ChatTemplate> chat_;
  nlohmann::ordered_json template_kwargs_;
  bool writes_bos_ = true;
};

// The id of the special token `text` (one id when encoded), or nullopt.
std::optional<int> SpecialTokenId(const Tokenizer& tokenizer, absl::string_view text);

// Checks a model's Jinja `chat_template` (from its tokenizer_config.json)
// against `format` and returns warnings (empty when nothing to say). Known
// templates (Qwen3's, Llama-3's; recognised by an FNV-1a 64 fingerprint of
// the exact template text) have their rendering of a sample conversation
// embedded (made with Jinja by scripts/render-chat-templates): a chat format
// must reproduce the rendering of the template it belongs to, and a chat
// format other than the template's is reported. An unknown template is
// reported (with which markers it uses) since it is not rendered. "raw" and
// templates are not checked.
std::vector<std::string> CheckChatTemplate(absl::string_view chat_template,
                                           const PromptFormat& format);

// CheckChatTemplate on `dir`/tokenizer_config.json when that file exists and
// has a chat_template; no warnings otherwise. An unreadable or invalid file
// is an error.
absl::StatusOr<std::vector<std::string>> CheckModelChatTemplate(const std::string& dir,
                                                                const PromptFormat& format);

// FNV-1a 64 of `text` (the template fingerprint).
uint64_t Fingerprint64(absl::string_view text);

}  // namespace rlvr

#endif  // RLVR_COMMON_TASKS_PROMPT_FORMAT_H_
