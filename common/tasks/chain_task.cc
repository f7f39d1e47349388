#include "common/tasks/chain_task.h"

#include <cmath>
#include <random>
#include <unordered_set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

std::string ChainCompletion(const std::vector<long long>& operands, const std::string& ops) {
  std::string out;
  long long acc = operands.empty() ? 0 : operands[0];
  for (size_t k = 0; k < ops.size() && k + 1 < operands.size(); ++k) {
    const long long next = ops[k] == '-' ? acc - operands[k + 1] : acc + operands[k + 1];
    absl::StrAppend(&out, acc, std::string(1, ops[k]), operands[k + 1], "=", next, ";");
    acc = next;
  }
  absl::StrAppend(&out, "#", acc);
  return out;
}

absl::StatusOr<std::unique_ptr<Task>> MakeChainTask(const TaskConfig& c) {
  if (c.ops.empty()) return absl::InvalidArgumentError("task.ops: empty");
  for (char op : c.ops) {
    if (op != '+' && op != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("task.ops: chain supports + and - only, got '", std::string(1, op), "'"));
    }
  }
  if (c.min_digits < 1 || c.max_digits < c.min_digits || c.max_digits > 9) {
    return absl::InvalidArgumentError("task: need 1 <= min_digits <= max_digits <= 9");
  }
  if (c.num_terms < 2) return absl::InvalidArgumentError("task.num_terms: must be >= 2");
  if (c.train_size < 0 || c.heldout_size < 0) {
    return absl::InvalidArgumentError("task: sizes must be >= 0");
  }
  auto low = [](int d) -> long long {
    return d == 1 ? 0 : static_cast<long long>(std::pow(10, d - 1));
  };
  auto high = [](int d) -> long long { return static_cast<long long>(std::pow(10, d)) - 1; };
  double operands = 0;
  for (int d = c.min_digits; d <= c.max_digits; ++d) operands += double(high(d) - low(d) + 1);
  const double space =
      std::pow(operands, c.num_terms) * std::pow(double(c.ops.size()), c.num_terms - 1);
  const long long needed = static_cast<long long>(c.train_size) + c.heldout_size;
  // Distinct draws get slow near the size of the space; require 2x headroom.
  if (space < 2.0 * double(needed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("task: only ", space,
                     " distinct chains exist for these ops/digits/num_terms; need at "
                     "least twice train_size + heldout_size = ",
                     needed));
  }
  std::mt19937_64 rng(static_cast<uint64_t>(c.seed));
  std::uniform_int_distribution<int> digits(c.min_digits, c.max_digits);
  std::uniform_int_distribution<size_t> op_index(0, c.ops.size() - 1);
  std::unordered_set<std::string> seen;
  std::vector<Prompt> all;
  all.reserve(static_cast<size_t>(needed));
  while (static_cast<long long>(all.size()) < needed) {
    std::vector<long long> values(static_cast<size_t>(c.num_terms));
    std::string ops, text;
    for (int k = 0; k < c.num_terms; ++k) {
      const int d = digits(rng);
      values[static_cast<size_t>(k)] =
          std::uniform_int_distribution<long long>(low(d), high(d))(rng);
      if (k > 0) {
        ops.push_back(c.ops[op_index(rng)]);
        text.push_back(ops.back());
      }
      absl::StrAppend(&text, values[static_cast<size_t>(k)]);
    }
    text.push_back('=');
    if (!seen.insert(text).second) continue;
    all.push_back(Prompt{"", std::move(text), ChainCompletion(values, ops)});
  }
  std::vector<Prompt> train(all.begin(), all.begin() + c.train_size);
  std::vector<Prompt> heldout(all.begin() + c.train_size, all.end());
  for (size_t i = 0; i < train.size(); ++i) train[i].id = absl::StrCat("train-", i);
  for (size_t i = 0; i < heldout.size(); ++i) heldout[i].id = absl::StrCat("heldout-", i);
  return std::unique_ptr<Task>(std::make_unique<ChainTask>(std::move(train), std::move(heldout)));
}

}  // namespace rlvr
