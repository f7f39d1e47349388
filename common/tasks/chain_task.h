// The built-in "chain" task: multi-operand arithmetic written out step by step
// (a scratchpad), so that the completions of one prompt share a long prefix and
// differ late (where the cancellation of shared-token gradients matters; see
// docs/algorithms.md and docs/results.md).
//
// Prompt text: the expression, e.g. "12+34+7=". Reference completion (the
// pretraining target, Prompt::answer): the running result, one step per
// operand, then the final result after '#':
//   "12+34=46;46+7=53;#53"
// Operators are applied left to right (only + and - are allowed, so this is
// also the usual precedence). Reward (Verify): 1 when the number after the last
// '#' of the completion equals the final result (the shared verifier's
// normalisation), else 0; the intermediate steps are not scored (outcome reward
// only). A completion without '#' gets 0.
//
// Thread safety: the Task is immutable; const methods are safe concurrently.
#ifndef RLVR_COMMON_TASKS_CHAIN_TASK_H_
#define RLVR_COMMON_TASKS_CHAIN_TASK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/run_config.h"
#include "common/tasks/task.h"

namespace rlvr {

// Uses task.{num_terms, min_digits, max_digits, ops, train_size, heldout_size,
// seed}; deterministic in seed; splits disjoint by prompt text.
// InvalidArgument for ops other than + and -, bad digit ranges, or an
// expression space too small for the sizes.
absl::StatusOr<std::unique_ptr<Task>> MakeChainTask(const TaskConfig& config);

// The reference chain of `operands` combined by `ops` (ops.size() ==
// operands.size() - 1), e.g. ({12, 34, 7}, "++") -> "12+34=46;46+7=53;#53".
std::string ChainCompletion(const std::vector<int64_t>& operands, const std::string& ops);

}  // namespace rlvr

#endif  // RLVR_COMMON_TASKS_CHAIN_TASK_H_
