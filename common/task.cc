#include "common/task.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <random>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/chain_task.h"
#include "common/status_macros.h"

namespace rlvr {

Task::~Task() = default;

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Canonical text of a number "[+-]ddd[.ddd]" (commas and whitespace already
// removed), or nullopt if `s` is not such a number.
std::optional<std::string> CanonicalNumber(const std::string& s) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  size_t int_begin = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  std::string int_part = s.substr(int_begin, i - int_begin);
  std::string frac_part;
  if (i < s.size() && s[i] == '.') {
    size_t frac_begin = ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    frac_part = s.substr(frac_begin, i - frac_begin);
  }
  if (i != s.size() || (int_part.empty() && frac_part.empty())) return std::nullopt;
  size_t nz = int_part.find_first_not_of('0');
  int_part = nz == std::string::npos ? "0" : int_part.substr(nz);
  size_t last = frac_part.find_last_not_of('0');
  frac_part = last == std::string::npos ? "" : frac_part.substr(0, last + 1);
  std::string out = int_part;
  if (!frac_part.empty()) absl::StrAppend(&out, ".", frac_part);
  if (negative && out != "0") out = "-" + out;
  return out;
}

// The content of the last balanced \boxed{...}, if any.
std::optional<std::string> LastBoxed(absl::string_view text) {
  constexpr absl::string_view kBoxed = "\\boxed{";
  std::optional<std::string> found;
  size_t pos = 0;
  while ((pos = text.find(kBoxed, pos)) != absl::string_view::npos) {
    size_t begin = pos + kBoxed.size();
    int depth = 1;
    size_t i = begin;
    for (; i < text.size(); ++i) {
      if (text[i] == '{') ++depth;
      if (text[i] == '}' && --depth == 0) break;
    }
    if (depth == 0) found = std::string(text.substr(begin, i - begin));
    pos = begin;
  }
  return found;
}

// The last number in `text`: [sign]digits[,ddd]*[.digits]. A '+'/'-' counts
// as a sign only at the start or after a character that cannot end an
// operand (so "5-3" ends with "3", "x = -3" with "-3").
std::optional<std::string> LastNumber(absl::string_view text) {
  std::optional<std::string> found;
  size_t i = 0;
  while (i < text.size()) {
    if (!IsDigit(text[i])) {
      ++i;
      continue;
    }
    size_t begin = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    // Comma groups: exactly three digits after each comma.
    while (i + 3 < text.size() && text[i] == ',' && IsDigit(text[i + 1]) &&
           IsDigit(text[i + 2]) && IsDigit(text[i + 3]) &&
           (i + 4 >= text.size() || !IsDigit(text[i + 4]))) {
      i += 4;
    }
    if (i + 1 < text.size() && text[i] == '.' && IsDigit(text[i + 1])) {
      ++i;
      while (i < text.size() && IsDigit(text[i])) ++i;
    }
    size_t start = begin;
    if (begin > 0 && (text[begin - 1] == '-' || text[begin - 1] == '+')) {
      char before = begin >= 2 ? text[begin - 2] : ' ';
      bool operand_end = std::isalnum(static_cast<unsigned char>(before)) || before == ')' ||
                         before == ']' || before == '}' || before == '.' || before == '_';
      if (begin < 2 || !operand_end) start = begin - 1;
    }
    found = std::string(text.substr(start, i - start));
  }
  return found;
}

// Exact integer arithmetic with overflow detection.
bool EvalExpression(const std::vector<int64_t>& operands, const std::string& ops, int64_t* out) {
  // Standard precedence: fold '*' runs into terms, then add/subtract.
  int64_t total = 0;
  int64_t term = operands[0];
  char pending = '+';
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k] == '*') {
      if (__builtin_mul_overflow(term, operands[k + 1], &term)) return false;
      continue;
    }
    if (pending == '+' ? __builtin_add_overflow(total, term, &total)
                       : __builtin_sub_overflow(total, term, &total)) {
      return false;
    }
    pending = ops[k];
    term = operands[k + 1];
  }
  if (pending == '+' ? __builtin_add_overflow(total, term, &total)
                     : __builtin_sub_overflow(total, term, &total)) {
    return false;
  }
  *out = total;
  return true;
}

class FixedTask final : public Task {
 public:
  FixedTask(std::string name, std::vector<Prompt> train, std::vector<Prompt> heldout)
      : name_(std::move(name)), train_(std::move(train)), heldout_(std::move(heldout)) {}
  std::string name() const override { return name_; }
  const std::vector<Prompt>& train() const override { return train_; }
  const std::vector<Prompt>& heldout() const override { return heldout_; }
  Verdict Verify(absl::string_view answer, absl::string_view completion_text) const override {
    return VerifyFinalAnswer(answer, completion_text);
  }

 private:
  std::string name_;
  std::vector<Prompt> train_;
  std::vector<Prompt> heldout_;
};

absl::StatusOr<std::unique_ptr<Task>> MakeArithmetic(const TaskConfig& c) {
  if (c.ops.empty()) return absl::InvalidArgumentError("task.ops: empty");
  for (char op : c.ops) {
    if (op != '+' && op != '-' && op != '*') {
      return absl::InvalidArgumentError(absl::StrCat("task.ops: unsupported operator '",
                                                     std::string(1, op), "'"));
    }
  }
  if (c.min_digits < 1 || c.max_digits < c.min_digits || c.max_digits > 18) {
    return absl::InvalidArgumentError("task: need 1 <= min_digits <= max_digits <= 18");
  }
  if (c.num_terms < 2) return absl::InvalidArgumentError("task.num_terms: must be >= 2");
  if (c.train_size < 0 || c.heldout_size < 0) {
    return absl::InvalidArgumentError("task: sizes must be >= 0");
  }
  // Operand ranges per digit count: 1 digit is 0..9, d digits 10^(d-1)..10^d-1.
  auto low = [](int d) -> int64_t { return d == 1 ? 0 : static_cast<int64_t>(std::pow(10, d - 1)); };
  auto high = [](int d) -> int64_t { return static_cast<int64_t>(std::pow(10, d)) - 1; };
  double operands = 0;
  for (int d = c.min_digits; d <= c.max_digits; ++d) operands += double(high(d) - low(d) + 1);
  const double space =
      std::pow(operands, c.num_terms) * std::pow(double(c.ops.size()), c.num_terms - 1);
  const int64_t needed = int64_t{c.train_size} + c.heldout_size;
  if (space < double(needed)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task: only ", space, " distinct expressions exist for these ops/digits/num_terms, but "
        "train_size + heldout_size = ", needed));
  }
  std::mt19937_64 rng(static_cast<uint64_t>(c.seed));
  std::uniform_int_distribution<int> digits(c.min_digits, c.max_digits);
  std::uniform_int_distribution<size_t> op_index(0, c.ops.size() - 1);
  std::unordered_set<std::string> seen;
  std::vector<Prompt> all;
  all.reserve(needed);
  const int64_t max_attempts = 200 * needed + 1000000;
  for (int64_t attempt = 0; int64_t(all.size()) < needed; ++attempt) {
    if (attempt >= max_attempts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task: could not draw ", needed, " distinct expressions (space too small)"));
    }
    std::vector<int64_t> values(c.num_terms);
    std::string ops;
    std::string text;
    for (int k = 0; k < c.num_terms; ++k) {
      int d = digits(rng);
      values[k] = std::uniform_int_distribution<int64_t>(low(d), high(d))(rng);
      if (k > 0) {
        ops.push_back(c.ops[op_index(rng)]);
        text.push_back(ops.back());
      }
      absl::StrAppend(&text, values[k]);
    }
    text.push_back('=');
    int64_t result;
    if (!EvalExpression(values, ops, &result)) continue;
    if (!seen.insert(text).second) continue;
    all.push_back(Prompt{"", std::move(text), absl::StrCat(result)});
  }
  std::vector<Prompt> train(all.begin(), all.begin() + c.train_size);
  std::vector<Prompt> heldout(all.begin() + c.train_size, all.end());
  for (size_t i = 0; i < train.size(); ++i) train[i].id = absl::StrCat("train-", i);
  for (size_t i = 0; i < heldout.size(); ++i) heldout[i].id = absl::StrCat("heldout-", i);
  return std::unique_ptr<Task>(
      std::make_unique<FixedTask>("arithmetic", std::move(train), std::move(heldout)));
}

absl::StatusOr<std::vector<Prompt>> ReadJsonl(const std::string& path,
                                              std::unordered_set<std::string>* ids) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("task: cannot open ", path));
  std::vector<Prompt> out;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const std::string where = absl::StrCat(path, ":", line_no, ": ");
    if (line.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(where + "not a JSON object");
    }
    Prompt p;
    for (const char* key : {"id", "prompt", "answer"}) {
      auto it = j.find(key);
      if (it == j.end()) return absl::InvalidArgumentError(where + "missing \"" + key + "\"");
      std::string value;
      if (it->is_string()) {
        value = it->get<std::string>();
      } else if (it->is_number()) {
        value = it->dump();
      } else {
        return absl::InvalidArgumentError(where + "\"" + key + "\" must be a string or number");
      }
      if (std::string(key) == "id") p.id = value;
      if (std::string(key) == "prompt") p.text = value;
      if (std::string(key) == "answer") p.answer = value;
    }
    if (!ids->insert(p.id).second) {
      return absl::InvalidArgumentError(where + "duplicate id \"" + p.id + "\"");
    }
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Task>> MakeJsonl(const TaskConfig& c) {
  if (c.train_path.empty()) return absl::InvalidArgumentError("task.train_path: required for jsonl");
  std::unordered_set<std::string> ids;
  ASSIGN_OR_RETURN(std::vector<Prompt> train, ReadJsonl(c.train_path, &ids));
  std::vector<Prompt> heldout;
  if (!c.heldout_path.empty()) {
    ASSIGN_OR_RETURN(heldout, ReadJsonl(c.heldout_path, &ids));
  }
  return std::unique_ptr<Task>(
      std::make_unique<FixedTask>("jsonl", std::move(train), std::move(heldout)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> MakeTask(const TaskConfig& config) {
  if (config.kind == "arithmetic") return MakeArithmetic(config);
  if (config.kind == "jsonl") return MakeJsonl(config);
  if (config.kind == "chain") return MakeChainTask(config);
  return absl::InvalidArgumentError(absl::StrCat("task.kind: unknown '", config.kind, "'"));
}

std::string NormalizeAnswer(absl::string_view text) {
  std::string compact;
  for (char c : text) {
    if (!IsSpace(c)) compact.push_back(c);
  }
  std::string no_commas;
  for (char c : compact) {
    if (c != ',') no_commas.push_back(c);
  }
  if (auto number = CanonicalNumber(no_commas)) return *number;
  return compact;
}

std::optional<std::string> ExtractFinalAnswer(absl::string_view completion_text) {
  if (auto boxed = LastBoxed(completion_text)) return boxed;
  return LastNumber(completion_text);
}

Verdict VerifyFinalAnswer(absl::string_view answer, absl::string_view completion_text) {
  std::optional<std::string> got = ExtractFinalAnswer(completion_text);
  if (!got.has_value()) return Verdict{0.0, "no answer found"};
  std::string got_norm = NormalizeAnswer(*got);
  std::string want_norm = NormalizeAnswer(answer);
  if (got_norm.empty()) return Verdict{0.0, "empty answer"};
  if (got_norm == want_norm) return Verdict{1.0, "correct"};
  return Verdict{0.0, absl::StrCat("wrong: got ", got_norm, ", want ", want_norm)};
}

absl::StatusOr<std::vector<int>> EncodePrompt(const Tokenizer& tokenizer, absl::string_view text) {
  ASSIGN_OR_RETURN(std::vector<int> ids, tokenizer.Encode(text));
  ids.insert(ids.begin(), tokenizer.bos_id());
  return ids;
}

absl::StatusOr<std::vector<int>> EncodeTargetCompletion(const Tokenizer& tokenizer,
                                                        absl::string_view answer) {
  ASSIGN_OR_RETURN(std::vector<int> ids, tokenizer.Encode(answer));
  ids.push_back(tokenizer.eos_id());
  return ids;
}

std::string CompletionText(const Tokenizer& tokenizer, const std::vector<int>& completion) {
  std::vector<int> kept;
  for (int id : completion) {
    if (id == tokenizer.eos_id()) break;
    kept.push_back(id);
  }
  return tokenizer.Decode(kept);
}

}  // namespace rlvr
