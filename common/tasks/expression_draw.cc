#include "common/tasks/expression_draw.h"

#include <cmath>
#include <unordered_set>

#include "absl/strings/str_cat.h"

namespace rlvr {
namespace {

int64_t LowestOperand(int digits) {
  return digits == 1 ? 0 : static_cast<int64_t>(std::pow(10, digits - 1));
}
int64_t HighestOperand(int digits) { return static_cast<int64_t>(std::pow(10, digits)) - 1; }

}  // namespace

absl::Status CheckExpressionConfig(const TaskConfig& c, absl::string_view allowed_ops,
                                   absl::string_view op_error, int max_digits_cap) {
  if (c.ops.empty()) return absl::InvalidArgumentError("task.ops: empty");
  for (char op : c.ops) {
    if (allowed_ops.find(op) == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("task.ops: ", op_error, " '", std::string(1, op), "'"));
    }
  }
  if (c.min_digits < 1 || c.max_digits < c.min_digits || c.max_digits > max_digits_cap) {
    return absl::InvalidArgumentError(
        absl::StrCat("task: need 1 <= min_digits <= max_digits <= ", max_digits_cap));
  }
  if (c.num_terms < 2) return absl::InvalidArgumentError("task.num_terms: must be >= 2");
  if (c.train_size < 0 || c.heldout_size < 0) {
    return absl::InvalidArgumentError("task: sizes must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Prompt>> DrawDistinctPrompts(
    const TaskConfig& c, int64_t needed,
    const std::function<std::optional<std::string>(const DrawnExpression&)>& answer) {
  ExpressionDrawer draw(c);
  std::unordered_set<std::string> seen;
  std::vector<Prompt> all;
  all.reserve(static_cast<size_t>(needed));
  const int64_t max_attempts = 200 * needed + 1000000;
  for (int64_t attempt = 0; static_cast<int64_t>(all.size()) < needed; ++attempt) {
    if (attempt >= max_attempts) {
      return absl::InvalidArgumentError(
          absl::StrCat("task: could not draw ", needed, " distinct expressions (space too small)"));
    }
    DrawnExpression e = draw.Next();
    std::optional<std::string> a = answer(e);
    if (!a.has_value()) continue;
    if (!seen.insert(e.text).second) continue;
    all.push_back(Prompt{"", std::move(e.text), *std::move(a)});
  }
  return all;
}

double ExpressionSpace(const TaskConfig& c) {
  double operands = 0;
  for (int d = c.min_digits; d <= c.max_digits; ++d) {
    operands += double(HighestOperand(d) - LowestOperand(d) + 1);
  }
  return std::pow(operands, c.num_terms) * std::pow(double(c.ops.size()), c.num_terms - 1);
}

ExpressionDrawer::ExpressionDrawer(const TaskConfig& config)
    : config_(config),
      rng_(static_cast<uint64_t>(config.seed)),
      digits_(config.min_digits, config.max_digits),
      op_index_(0, config.ops.size() - 1) {}

DrawnExpression ExpressionDrawer::Next() {
  DrawnExpression e;
  e.operands.resize(static_cast<size_t>(config_.num_terms));
  for (int k = 0; k < config_.num_terms; ++k) {
    const int d = digits_(rng_);
    e.operands[static_cast<size_t>(k)] =
        std::uniform_int_distribution<int64_t>(LowestOperand(d), HighestOperand(d))(rng_);
    if (k > 0) {
      e.ops.push_back(config_.ops[op_index_(rng_)]);
      e.text.push_back(e.ops.back());
    }
    absl::StrAppend(&e.text, e.operands[static_cast<size_t>(k)]);
  }
  e.text.push_back('=');
  return e;
}

std::pair<std::vector<Prompt>, std::vector<Prompt>> SplitDrawnPrompts(std::vector<Prompt> all,
                                                                      int train_size) {
  std::vector<Prompt> train(std::make_move_iterator(all.begin()),
                            std::make_move_iterator(all.begin() + train_size));
  std::vector<Prompt> heldout(std::make_move_iterator(all.begin() + train_size),
                              std::make_move_iterator(all.end()));
  for (size_t i = 0; i < train.size(); ++i) train[i].id = absl::StrCat("train-", i);
  for (size_t i = 0; i < heldout.size(); ++i) heldout[i].id = absl::StrCat("heldout-", i);
  return {std::move(train), std::move(heldout)};
}

}  // namespace rlvr
