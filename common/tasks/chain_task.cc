#include "common/tasks/chain_task.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/tasks/expression_draw.h"

namespace rlvr {
namespace {

class ChainTask final : public Task {
 public:
  ChainTask(std::vector<Prompt> train, std::vector<Prompt> heldout)
      : train_(std::move(train)), heldout_(std::move(heldout)) {}
  std::string name() const override { return "chain"; }
  const std::vector<Prompt>& train() const override { return train_; }
  const std::vector<Prompt>& heldout() const override { return heldout_; }
  Verdict Verify(absl::string_view answer, absl::string_view completion_text) const override {
    const size_t want_at = answer.rfind('#');
    const absl::string_view want =
        want_at == absl::string_view::npos ? answer : answer.substr(want_at + 1);
    const size_t got_at = completion_text.rfind('#');
    if (got_at == absl::string_view::npos) return Verdict{0.0, "no final answer ('#')"};
    return VerifyFinalAnswer(want, completion_text.substr(got_at + 1));
  }

 private:
  std::vector<Prompt> train_;
  std::vector<Prompt> heldout_;
};

}  // namespace

std::string ChainCompletion(const std::vector<int64_t>& operands, const std::string& ops) {
  std::string out;
  int64_t acc = operands.empty() ? 0 : operands[0];
  for (size_t k = 0; k < ops.size() && k + 1 < operands.size(); ++k) {
    const int64_t next = ops[k] == '-' ? acc - operands[k + 1] : acc + operands[k + 1];
    absl::StrAppend(&out, acc, std::string(1, ops[k]), operands[k + 1], "=", next, ";");
    acc = next;
  }
  absl::StrAppend(&out, "#", acc);
  return out;
}

absl::StatusOr<std::unique_ptr<Task>> MakeChainTask(const TaskConfig& c) {
  RETURN_IF_ERROR(CheckExpressionConfig(c, "+-", "chain supports + and - only, got", 9));
  const double space = ExpressionSpace(c);
  const long long needed = static_cast<long long>(c.train_size) + c.heldout_size;
  // Distinct draws get slow near the size of the space; require 2x headroom.
  if (space < 2.0 * double(needed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("task: only ", space,
                     " distinct chains exist for these ops/digits/num_terms; need at "
                     "least twice train_size + heldout_size = ",
                     needed));
  }
  ASSIGN_OR_RETURN(std::vector<Prompt> all,
                   DrawDistinctPrompts(c, needed, [](const DrawnExpression& e) {
                     return std::optional<std::string>(ChainCompletion(e.operands, e.ops));
                   }));
  auto [train, heldout] = SplitDrawnPrompts(std::move(all), c.train_size);
  return std::unique_ptr<Task>(std::make_unique<ChainTask>(std::move(train), std::move(heldout)));
}

}  // namespace rlvr
