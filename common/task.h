// Tasks: a prompt source with train and held-out splits, and a verifier.
//
// A prompt's text is what the model continues ("12+34="); the model input is
// BOS + Encode(text) (EncodePrompt below); the completion is the answer then
// EOS. Verify() scores the completion text, i.e. Decode(completion tokens
// without the stop token) (CompletionText below).
//
// Thread safety: a Task is immutable after MakeTask returns; all methods are
// const and safe to call concurrently.
#ifndef RLVR_COMMON_TASK_H_
#define RLVR_COMMON_TASK_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/run_config.h"
#include "common/tokenizer.h"

namespace rlvr {

struct Prompt {
  std::string id;      // Unique within the task (both splits).
  std::string text;    // What the model continues, e.g. "12+34=".
  std::string answer;  // Reference answer, e.g. "46".
};

struct Verdict {
  double reward = 0.0;  // In [0, 1]; the built-in verifiers give exactly 0 or 1.
  std::string reason;   // Short, human-readable: "correct", "wrong: got 45, want 46", ...
};

class Task {
 public:
  virtual ~Task();
  // "arithmetic" or "jsonl".
  virtual std::string name() const = 0;
  // The splits. Prompt ids never repeat across or within splits; for
  // arithmetic no prompt text of one split appears in the other.
  virtual const std::vector<Prompt>& train() const = 0;
  virtual const std::vector<Prompt>& heldout() const = 0;
  // Scores `completion_text` against the reference `answer` (see
  // VerifyFinalAnswer). Pure function of its arguments.
  virtual Verdict Verify(absl::string_view answer, absl::string_view completion_text) const = 0;
};

// Builds the task named by config.kind:
//  - "arithmetic": train_size + heldout_size distinct expressions of
//    num_terms operands (each with min_digits..max_digits digits) joined by
//    operators drawn from `ops` (+ - *; usual precedence), written "a+b*c=";
//    answer = the exact integer result. Deterministic in config.seed.
//    InvalidArgument if the expression space is too small for the sizes.
//  - "jsonl": reads train_path (and heldout_path if set; else the held-out
//    split is empty), one {"id","prompt","answer"} object per line (answer may
//    be a JSON string or number; blank lines skipped). Errors name file:line.
absl::StatusOr<std::unique_ptr<Task>> MakeTask(const TaskConfig& config);

// The shared verifier. Extracts the final answer from `completion_text`: the
// content of the last \boxed{...} if any, otherwise the last number (optional
// sign, digits with optional 3-digit comma groups, optional decimals). Both
// sides are normalised (whitespace and commas removed, leading '+' and
// leading zeros dropped, "-0" -> "0", trailing decimal zeros dropped) and
// compared exactly. Reward 1 if equal, else 0, with the reason.
Verdict VerifyFinalAnswer(absl::string_view answer, absl::string_view completion_text);

// The normalised form used by VerifyFinalAnswer: for a number, its canonical
// text ("-001,234.50" -> "-1234.5"); otherwise the text with all whitespace
// removed. Exposed for tests.
std::string NormalizeAnswer(absl::string_view text);

// The extracted final answer of `completion_text` (unnormalised), or nullopt
// when there is none. Exposed for tests.
std::optional<std::string> ExtractFinalAnswer(absl::string_view completion_text);

// BOS + tokenizer.Encode(text): the model input for a prompt.
absl::StatusOr<std::vector<int>> EncodePrompt(const Tokenizer& tokenizer, absl::string_view text);

// Encode(answer) + EOS: the supervised completion target of a prompt (the
// model input being EncodePrompt(prompt.text)).
absl::StatusOr<std::vector<int>> EncodeTargetCompletion(const Tokenizer& tokenizer,
                                                        absl::string_view answer);

// The text Verify() expects for `completion` tokens: tokens up to (not
// including) the first EOS, decoded.
std::string CompletionText(const Tokenizer& tokenizer, const std::vector<int>& completion);

}  // namespace rlvr

#endif  // RLVR_COMMON_TASK_H_
