#include "common/tasks/expression_draw.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace rlvr {
namespace {

int64_t LowestOperand(int digits) {
  return digits == 1 ? 0 : static_cast<int64_t>(std::pow(10, digits - 1));
}
int64_t HighestOperand(int digits) { return static_cast<int64_t>(std::pow(10, digits)) - 1; }

}  // namespace

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
