// Random arithmetic expressions for the built-in tasks (arithmetic, chain):
// how many distinct ones a config allows, drawing them, and splitting the
// drawn prompts into train and held-out. Internal to rlvr_tasks.
//
// Thread safety: ExpressionDrawer is not thread-safe; the functions are pure.
#ifndef RLVR_COMMON_TASKS_EXPRESSION_DRAW_H_
#define RLVR_COMMON_TASKS_EXPRESSION_DRAW_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config/run_config.h"
#include "common/tasks/task.h"

namespace rlvr {

// The checks both built-in tasks make of their config: every character of
// task.ops in `allowed_ops` (else "task.ops: <op_error> '<op>'"), 1 <=
// min_digits <= max_digits <= `max_digits_cap`, num_terms >= 2, sizes >= 0.
// InvalidArgument naming the key.
absl::Status CheckExpressionConfig(const TaskConfig& config, absl::string_view allowed_ops,
                                   absl::string_view op_error, int max_digits_cap);

// The number of distinct expressions task.{num_terms, min_digits, max_digits,
// ops} allows (operands of d digits: 0..9 for d = 1, 10^(d-1)..10^d-1 above).
double ExpressionSpace(const TaskConfig& config);

struct DrawnExpression {
  std::vector<int64_t> operands;  // num_terms of them.
  std::string ops;                // operands.size() - 1 operators.
  std::string text;               // The prompt, e.g. "12+34+7=".
};

// Draws expressions seeded by task.seed: per operand a digit count uniform in
// [min_digits, max_digits], the operand uniform among numbers of that many
// digits, and (after the first) an operator uniform in task.ops.
class ExpressionDrawer {
 public:
  explicit ExpressionDrawer(const TaskConfig& config);
  DrawnExpression Next();

 private:
  const TaskConfig& config_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<int> digits_;
  std::uniform_int_distribution<size_t> op_index_;
};

// Draws with an ExpressionDrawer until `needed` prompts with distinct texts
// have an answer; `answer` returns nullopt to skip an expression (it is not
// counted as seen). InvalidArgument after 200 * needed + 10^6 draws.
absl::StatusOr<std::vector<Prompt>> DrawDistinctPrompts(
    const TaskConfig& config, int64_t needed,
    const std::function<std::optional<std::string>(const DrawnExpression&)>& answer);

// The first train_size prompts of `all` as train ("train-i"), the rest as
// held-out ("heldout-i").
std::pair<std::vector<Prompt>, std::vector<Prompt>> SplitDrawnPrompts(std::vector<Prompt> all,
                                                                      int train_size);

}  // namespace rlvr

#endif  // RLVR_COMMON_TASKS_EXPRESSION_DRAW_H_
