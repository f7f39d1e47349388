// Tasks: a prompt source with train and held-out splits, and a verifier.
//
// A prompt's text is what the model continues: the question rendered by the
// prompt format (common/tasks/prompt_format.h; "12+34=" in the raw format). The
// model input is EncodePrompt(text); the supervised completion is the answer
// then EOS. Verify() scores the completion text, i.e. the completion tokens
// before the stop token, decoded (CompletionText below).
//
// Thread safety: a Task is immutable after MakeTask returns; all methods are
// const and safe to call concurrently.
#ifndef RLVR_COMMON_TASKS_TASK_H_
#define RLVR_COMMON_TASKS_TASK_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config/run_config.h"
#include "common/tasks/verifier.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr {

struct Prompt {
  std::string id;      // Unique within the task (both splits).
  std::string text;    // What the model continues, e.g. "12+34=" (format applied).
  std::string answer;  // Reference answer, e.g. "46".
};

class Task {
 public:
  virtual ~Task();
  // The task kind: "arithmetic", "jsonl", ...
  virtual std::string name() const = 0;
  // The splits. Prompt ids never repeat across or within splits; for
  // arithmetic no prompt text of one split appears in the other.
  virtual const std::vector<Prompt>& train() const = 0;
  virtual const std::vector<Prompt>& heldout() const = 0;
  // Scores `completion_text` against the reference `answer` (see
  // common/tasks/verifier.h). Pure function of its arguments.
  virtual Verdict Verify(absl::string_view answer, absl::string_view completion_text) const = 0;

  // Token ids that end a completion (the prompt format's stop_ids(): EOS and
  // the chat format's end-of-turn token). Empty only for a Task not made by
  // MakeTask.
  virtual const std::vector<int>& stop_ids() const;
  // Prompts left out of train() / heldout() because they were too long.
  virtual int64_t skipped_too_long() const { return 0; }
};

// How MakeTask prepares prompts.
struct TaskOptions {
  // Prompts whose EncodePrompt length exceeds this are skipped: counted, with
  // one warning for the task. 0 = no limit. See MaxPromptTokens.
  int max_prompt_tokens = 0;
  // false: no prompts are read or generated (train() and heldout() are
  // empty); only Verify and stop_ids work. For processes that only verify
  // (actors), so that they do not read a large dataset.
  bool load_prompts = true;
  // A model directory: if it holds a tokenizer_config.json with a
  // chat_template, CheckModelChatTemplate runs and its warnings are logged.
  // Empty: no check. task.prompt_format model renders this directory's chat
  // template, and needs it unless load_prompts is false.
  std::string model_dir;
};

// model.max_seq_len - sampling.max_new_tokens: the longest prompt a lease can
// carry (actors reject longer ones).
int MaxPromptTokens(const RunConfig& config);

// Builds the task: the prompts of config.kind, rendered with
// config.prompt_format (and system_prompt), encoded with `tokenizer` and
// filtered by options.max_prompt_tokens, scored by the verifier named
// config.verifier (with config.format_reward). Kinds:
//  - "arithmetic": train_size + heldout_size distinct expressions of
//    num_terms operands (each with min_digits..max_digits digits) joined by
//    operators drawn from `ops` (+ - *; usual precedence), written "a+b*c=";
//    answer = the exact integer result. Deterministic in config.seed.
//    InvalidArgument if the expression space is too small for the sizes.
//  - "jsonl": streams train_path line by line, one JSON object per line with
//    the question under question_field and the reference under answer_field
//    (a string or a number), and the id under id_field (a string or an
//    integer) when id_field is set; else the id is "<file name>:<line>".
//    Blank lines are skipped. The held-out split is heldout_path's lines, or
//    round(heldout_fraction x lines) of train_path's prompts chosen by a hash
//    of (seed, id) (deterministic; stable when lines are appended), or empty.
//    A bad line (invalid JSON, missing field, wrong type, duplicate id) is an
//    InvalidArgument naming file:line. The splits keep file order, so the
//    learner's cursor (which names prompts by index) resumes on the same
//    prompts as long as the files, the tokenizer and the length limit are
//    unchanged.
// The kind's own Verify() is not used: config.verifier scores (its default,
// final_answer, is the arithmetic task's verifier).
// InvalidArgument for an unknown kind, prompt format or verifier, and for a
// chat format the tokenizer cannot encode (see PromptFormat::Create).
absl::StatusOr<std::unique_ptr<Task>> MakeTask(const TaskConfig& config, const Tokenizer& tokenizer,
                                               const TaskOptions& options);

// tokenizer.Encode(text) (special tokens recognised), with BOS prepended when
// the tokenizer adds one (adds_bos(): the char tokenizer, Llama-3; not Qwen3)
// and the text does not already start with it (the llama3 format writes
// <|begin_of_text|> itself): the model input for a prompt.
absl::StatusOr<std::vector<int>> EncodePrompt(const Tokenizer& tokenizer, absl::string_view text);

// Encode(answer) + EOS: the supervised completion target of a prompt (the
// model input being EncodePrompt(prompt.text)).
absl::StatusOr<std::vector<int>> EncodeTargetCompletion(const Tokenizer& tokenizer,
                                                        absl::string_view answer);

// The text Verify() expects for `completion` tokens: tokens up to (not
// including) the first EOS, decoded (special tokens, such as a chat format's
// end-of-turn token, decode to nothing).
std::string CompletionText(const Tokenizer& tokenizer, const std::vector<int>& completion);

}  // namespace rlvr

#endif  // RLVR_COMMON_TASKS_TASK_H_
