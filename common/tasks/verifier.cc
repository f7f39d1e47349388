#include "common/tasks/verifier.h"

#include <cctype>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/tasks/math_verifier.h"

namespace rlvr {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

std::string RemoveSpaces(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (!IsSpace(c)) out.push_back(c);
  }
  return out;
}

// Canonical text of a number "[+-]ddd[.ddd]" (commas and whitespace already
// removed), or nullopt if `s` is not such a number.
std::optional<std::string> CanonicalNumber(absl::string_view s) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  size_t int_begin = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  std::string int_part(s.substr(int_begin, i - int_begin));
  std::string frac_part;
  if (i < s.size() && s[i] == '.') {
    size_t frac_begin = ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    frac_part = std::string(s.substr(frac_begin, i - frac_begin));
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

// The content of the balanced {...} whose '{' is at text[open], and the
// index just past its '}'; nullopt if the braces never balance.
std::optional<std::pair<std::string, size_t>> BracedGroup(absl::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) {
      return std::make_pair(std::string(text.substr(open + 1, i - open - 1)), i + 1);
    }
  }
  return std::nullopt;
}

// The content of the last complete `command{...}` for any of `commands`.
std::optional<std::string> LastCommandGroup(absl::string_view text,
                                            std::initializer_list<absl::string_view> commands) {
  std::optional<std::string> found;
  size_t found_at = 0;
  for (absl::string_view command : commands) {
    size_t pos = 0;
    while ((pos = text.find(command, pos)) != absl::string_view::npos) {
      const size_t open = pos + command.size() - 1;  // `command` ends with '{'.
      auto group = BracedGroup(text, open);
      if (group.has_value() && (!found.has_value() || pos >= found_at)) {
        found = std::move(group->first);
        found_at = pos;
      }
      pos = open + 1;
    }
  }
  return found;
}

// A number token in text: [sign]digits[,ddd]*[.digits].
struct NumberToken {
  size_t begin = 0;
  size_t end = 0;
  std::string text;
};

// Every number token of `text`, left to right. A '+'/'-' counts as a sign
// only at the start or after a character that cannot end an operand (so
// "5-3" ends with "3", "x = -3" with "-3").
std::vector<NumberToken> Numbers(absl::string_view text, size_t from = 0) {
  std::vector<NumberToken> out;
  size_t i = from;
  while (i < text.size()) {
    if (!IsDigit(text[i])) {
      ++i;
      continue;
    }
    size_t begin = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    // Comma groups: exactly three digits after each comma.
    while (i + 3 < text.size() && text[i] == ',' && IsDigit(text[i + 1]) && IsDigit(text[i + 2]) &&
           IsDigit(text[i + 3]) && (i + 4 >= text.size() || !IsDigit(text[i + 4]))) {
      i += 4;
    }
    if (i + 1 < text.size() && text[i] == '.' && IsDigit(text[i + 1])) {
      ++i;
      while (i < text.size() && IsDigit(text[i])) ++i;
    }
    size_t start = begin;
    if (begin > from && (text[begin - 1] == '-' || text[begin - 1] == '+')) {
      char before = begin >= from + 2 ? text[begin - 2] : ' ';
      bool operand_end = std::isalnum(static_cast<unsigned char>(before)) || before == ')' ||
                         before == ']' || before == '}' || before == '.' || before == '_';
      if (begin < from + 2 || !operand_end) start = begin - 1;
    }
    out.push_back(NumberToken{start, i, std::string(text.substr(start, i - start))});
  }
  return out;
}

std::optional<std::string> FirstNumberFrom(absl::string_view text, size_t from) {
  // Also accept "-$5" / "$-5" style signs by scanning only what follows.
  std::vector<NumberToken> numbers = Numbers(text, from);
  if (numbers.empty()) return std::nullopt;
  std::string number = numbers.front().text;
  const size_t b = numbers.front().begin;
  if (number[0] != '-' && b >= from + 2 && text[b - 1] == '$' && text[b - 2] == '-') {
    number = "-" + number;
  }
  return number;
}

// Case-insensitive rfind.
size_t RFindIgnoreCase(absl::string_view text, absl::string_view needle) {
  if (needle.size() > text.size()) return absl::string_view::npos;
  for (size_t i = text.size() - needle.size() + 1; i-- > 0;) {
    if (absl::EqualsIgnoreCase(text.substr(i, needle.size()), needle)) return i;
  }
  return absl::string_view::npos;
}

// ---------------------------------------------------------------- rationals

// A number as sign * num / den with decimal digit strings (no leading zeros,
// den != "0").
struct Rational {
  bool negative = false;
  std::string num;
  std::string den = "1";
};

std::string StripLeadingZeros(std::string s) {
  size_t nz = s.find_first_not_of('0');
  return nz == std::string::npos ? "0" : s.substr(nz);
}

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// "12", "1.25", ".5", "3." (sign handled by the caller).
std::optional<Rational> ParseDecimal(absl::string_view s) {
  size_t dot = s.find('.');
  absl::string_view int_part = s.substr(0, dot);
  absl::string_view frac_part = dot == absl::string_view::npos ? "" : s.substr(dot + 1);
  if (int_part.empty() && frac_part.empty()) return std::nullopt;
  if ((!int_part.empty() && !AllDigits(int_part)) ||
      (!frac_part.empty() && !AllDigits(frac_part))) {
    return std::nullopt;
  }
  Rational r;
  r.num = StripLeadingZeros(absl::StrCat(int_part, frac_part));
  r.den = absl::StrCat("1", std::string(frac_part.size(), '0'));
  return r;
}

std::optional<Rational> ParseSignedInteger(absl::string_view s, bool* negative) {
  *negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    *negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (!AllDigits(s)) return std::nullopt;
  Rational r;
  r.num = StripLeadingZeros(std::string(s));
  return r;
}

// A normalised answer as a rational: [-]decimal, [-]a/b, [-]\frac{a}{b}.
std::optional<Rational> ParseRational(absl::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::optional<Rational> r;
  absl::string_view a, b;
  if (absl::StartsWith(s, "\\frac{")) {
    s.remove_prefix(6);
    size_t close = s.find('}');
    if (close == absl::string_view::npos || close + 1 >= s.size() || s[close + 1] != '{' ||
        s.back() != '}') {
      return std::nullopt;
    }
    a = s.substr(0, close);
    b = s.substr(close + 2, s.size() - close - 3);
  } else if (size_t slash = s.find('/'); slash != absl::string_view::npos) {
    a = s.substr(0, slash);
    b = s.substr(slash + 1);
  } else {
    r = ParseDecimal(s);
    if (!r.has_value()) return std::nullopt;
  }
  if (!r.has_value()) {
    bool neg_a = false, neg_b = false;
    std::optional<Rational> ra = ParseSignedInteger(a, &neg_a);
    std::optional<Rational> rb = ParseSignedInteger(b, &neg_b);
    if (!ra.has_value() || !rb.has_value() || rb->num == "0") return std::nullopt;
    r = Rational{neg_a != neg_b, ra->num, rb->num};
  }
  r->negative = r->negative != negative;
  if (r->num == "0") r->negative = false;
  return r;
}

// Exact equality of two rationals: cross products in 128 bits when every
// part has at most 18 digits, else equality of the digit strings after
// dividing out common powers of ten only (enough for decimals vs decimals).
bool RationalsEqual(const Rational& x, const Rational& y) {
  if (x.negative != y.negative) return false;
  auto fits = [](const std::string& s) { return s.size() <= 18; };
  if (fits(x.num) && fits(x.den) && fits(y.num) && fits(y.den)) {
    auto value = [](const std::string& s) {
      __int128 v = 0;
      for (char c : s) v = v * 10 + (c - '0');
      return v;
    };
    return value(x.num) * value(y.den) == value(y.num) * value(x.den);
  }
  auto reduce10 = [](Rational r) {
    while (r.den.size() > 1 && r.den.back() == '0' && r.num.size() > 1 && r.num.back() == '0') {
      r.den.pop_back();
      r.num.pop_back();
    }
    return r;
  };
  Rational a = reduce10(x), b = reduce10(y);
  return a.num == b.num && a.den == b.den;
}

// ------------------------------------------------------- LaTeX normalising

// Removes `command` where it is not followed by a letter (so "\right" goes
// but "\rightarrow" stays).
void RemoveCommand(std::string* s, std::string_view command, std::string_view replacement = "") {
  size_t pos = 0;
  while ((pos = s->find(command, pos)) != std::string::npos) {
    const size_t end = pos + command.size();
    if (end < s->size() && IsAlpha((*s)[end])) {
      pos = end;
      continue;
    }
    s->replace(pos, command.size(), replacement);
    pos += replacement.size();
  }
}

// \frac12 -> \frac{1}{2}, \frac1{2} -> \frac{1}{2}.
std::string BraceFracArguments(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 5, "\\frac") == 0 && (i + 5 >= s.size() || !IsAlpha(s[i + 5]))) {
      out += "\\frac";
      i += 5;
      for (int arg = 0; arg < 2 && i < s.size(); ++arg) {
        if (s[i] == '{') {
          auto group = BracedGroup(s, i);
          if (!group.has_value()) break;
          absl::StrAppend(&out, "{", group->first, "}");
          i = group->second;
        } else if (s[i] != '\\') {
          absl::StrAppend(&out, "{", std::string(1, s[i]), "}");
          ++i;
        } else {
          break;
        }
      }
      continue;
    }
    out.push_back(s[i++]);
  }
  return out;
}

// \text{X} -> X (also \mbox, \mathrm, \textbf).
std::string UnwrapText(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    bool unwrapped = false;
    for (std::string_view command : {"\\text{", "\\mbox{", "\\mathrm{", "\\textbf{"}) {
      if (s.compare(i, command.size(), command) == 0) {
        auto group = BracedGroup(s, i + command.size() - 1);
        if (!group.has_value()) break;
        out += group->first;
        i = group->second;
        unwrapped = true;
        break;
      }
    }
    if (!unwrapped) out.push_back(s[i++]);
  }
  return out;
}

// A trailing \text{unit} (or \mbox / \mathrm) after a number is dropped.
std::string DropUnit(const std::string& s) {
  for (std::string_view command : {"\\text{", "\\mbox{", "\\mathrm{"}) {
    size_t pos = s.rfind(command);
    if (pos == std::string::npos || pos == 0) continue;
    auto group = BracedGroup(s, pos + command.size() - 1);
    if (!group.has_value() || group->second != s.size()) continue;
    std::string head = s.substr(0, pos);
    if (ParseRational(head).has_value()) return head;
  }
  return s;
}

bool IsThousandsInteger(absl::string_view s) {
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  size_t dot = s.find('.');
  absl::string_view frac = dot == absl::string_view::npos ? "" : s.substr(dot + 1);
  s = s.substr(0, dot);
  if (dot != absl::string_view::npos && !AllDigits(frac)) return false;
  size_t comma = s.find(',');
  if (comma == absl::string_view::npos || comma == 0 || comma > 3) return false;
  if (!AllDigits(s.substr(0, comma))) return false;
  for (size_t i = comma; i < s.size(); i += 4) {
    if (s[i] != ',' || i + 4 > s.size() || !AllDigits(s.substr(i + 1, 3))) return false;
  }
  return true;
}

// ---------------------------------------------------------------- verifiers

Verdict Judge(bool correct, bool well_formed, double format_reward, absl::string_view got,
              absl::string_view want) {
  if (correct) return Verdict{1.0, "correct"};
  return Verdict{
      well_formed ? format_reward : 0.0,
      absl::StrCat(well_formed ? "wrong (well formed)" : "wrong", ": got ", got, ", want ", want)};
}

class FinalAnswerVerifier final : public Verifier {
 public:
  explicit FinalAnswerVerifier(double format_reward) : format_reward_(format_reward) {}
  std::string name() const override { return "final_answer"; }

 protected:
  Verdict Score(absl::string_view answer, absl::string_view completion,
                VerdictDetail* detail) const override {
    Verdict v = VerifyFinalAnswer(answer, completion);
    std::optional<std::string> got = ExtractFinalAnswer(completion);
    const bool well_formed = got.has_value() && !NormalizeAnswer(*got).empty();
    if (v.reward < 1.0 && well_formed) v.reward = format_reward_;
    if (detail != nullptr) {
      detail->extracted = got.value_or("");
      detail->well_formed = well_formed;
      if (got.has_value()) detail->parsed_completion = NormalizeAnswer(*got);
      detail->parsed_answer = NormalizeAnswer(answer);
    }
    return v;
  }

 private:
  double format_reward_;
};

class Gsm8kVerifier final : public Verifier {
 public:
  explicit Gsm8kVerifier(double format_reward) : format_reward_(format_reward) {}
  std::string name() const override { return "gsm8k"; }

 protected:
  Verdict Score(absl::string_view answer, absl::string_view completion,
                VerdictDetail* detail) const override {
    size_t hashes = answer.rfind("####");
    std::string want = NormalizeGsm8kNumber(
        hashes == absl::string_view::npos ? answer : answer.substr(hashes + 4));
    if (detail != nullptr) detail->parsed_answer = want;
    std::optional<std::string> got = ExtractGsm8kAnswer(completion);
    if (!got.has_value()) return Verdict{0.0, "no answer found"};
    std::string got_norm = NormalizeGsm8kNumber(*got);
    const size_t marker = completion.rfind("####");
    const bool well_formed =
        marker != absl::string_view::npos && FirstNumberFrom(completion, marker + 4).has_value();
    if (detail != nullptr) {
      detail->extracted = *got;
      detail->parsed_completion = got_norm;
      detail->well_formed = well_formed;
    }
    return Judge(!want.empty() && got_norm == want, well_formed, format_reward_, got_norm, want);
  }

 private:
  double format_reward_;
};

class BoxedVerifier final : public Verifier {
 public:
  explicit BoxedVerifier(double format_reward) : format_reward_(format_reward) {}
  std::string name() const override { return "boxed"; }

 protected:
  Verdict Score(absl::string_view answer, absl::string_view completion,
                VerdictDetail* detail) const override {
    // A reference written with its own \boxed{} is unwrapped.
    std::optional<std::string> ref_box = LastBoxedContent(answer);
    std::string want = NormalizeLatexAnswer(ref_box.has_value() ? *ref_box : answer);
    if (detail != nullptr) detail->parsed_answer = want;
    std::optional<std::string> got = LastBoxedContent(completion);
    if (!got.has_value()) return Verdict{0.0, "no boxed answer"};
    std::string got_norm = NormalizeLatexAnswer(*got);
    if (detail != nullptr) {
      detail->extracted = *got;
      detail->parsed_completion = got_norm;
      detail->well_formed = !got_norm.empty();
    }
    if (got_norm.empty()) return Verdict{0.0, "empty boxed answer"};
    return Judge(LatexAnswersEqual(got_norm, want), true, format_reward_, got_norm, want);
  }

 private:
  double format_reward_;
};

class ExactVerifier final : public Verifier {
 public:
  explicit ExactVerifier(double format_reward) : format_reward_(format_reward) {}
  std::string name() const override { return "exact"; }

 protected:
  Verdict Score(absl::string_view answer, absl::string_view completion,
                VerdictDetail* detail) const override {
    absl::string_view want = absl::StripAsciiWhitespace(answer);
    absl::string_view got = absl::StripAsciiWhitespace(completion);
    if (detail != nullptr) {
      detail->extracted = std::string(got);
      detail->well_formed = !got.empty();
      detail->parsed_completion = std::string(got);
      detail->parsed_answer = std::string(want);
    }
    if (got.empty()) return Verdict{0.0, "empty completion"};
    return Judge(got == want, true, format_reward_, got, want);
  }

 private:
  double format_reward_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Verifier>> MakeVerifier(absl::string_view name,
                                                       const VerifierOptions& options) {
  const double format_reward = options.format_reward;
  if (!(format_reward >= 0.0 && format_reward < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("task.format_reward: must be in [0, 1), got ", format_reward));
  }
  if (name == "final_answer") return std::make_unique<FinalAnswerVerifier>(format_reward);
  if (name == "gsm8k") return std::make_unique<Gsm8kVerifier>(format_reward);
  if (name == "boxed") return std::make_unique<BoxedVerifier>(format_reward);
  if (name == "exact") return std::make_unique<ExactVerifier>(format_reward);
  if (name == "math") {
    if (!(options.math_relative_tolerance > 0.0 && options.math_relative_tolerance <= 0.1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("task.math_relative_tolerance: must be in (0, 0.1], got ",
                       options.math_relative_tolerance));
    }
    MathVerifierOptions math;
    math.format_reward = format_reward;
    math.equivalence.relative_tolerance = options.math_relative_tolerance;
    return MakeMathVerifier(math);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("task.verifier: unknown verifier '", name, "'; known: ", KnownVerifierNames()));
}

absl::StatusOr<std::unique_ptr<Verifier>> MakeVerifier(absl::string_view name,
                                                       double format_reward) {
  VerifierOptions options;
  options.format_reward = format_reward;
  return MakeVerifier(name, options);
}

std::string KnownVerifierNames() { return "final_answer, gsm8k, boxed, exact, math"; }

std::string NormalizeAnswer(absl::string_view text) {
  std::string compact = RemoveSpaces(text);
  std::string no_commas;
  for (char c : compact) {
    if (c != ',') no_commas.push_back(c);
  }
  if (auto number = CanonicalNumber(no_commas)) return *number;
  return compact;
}

std::optional<std::string> ExtractFinalAnswer(absl::string_view completion_text) {
  if (auto boxed = LastCommandGroup(completion_text, {"\\boxed{"})) return boxed;
  std::vector<NumberToken> numbers = Numbers(completion_text);
  if (numbers.empty()) return std::nullopt;
  return numbers.back().text;
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

std::optional<std::string> ExtractGsm8kAnswer(absl::string_view completion_text) {
  const size_t marker = completion_text.rfind("####");
  if (marker != absl::string_view::npos) {
    if (auto n = FirstNumberFrom(completion_text, marker + 4)) return n;
  }
  const size_t phrase = RFindIgnoreCase(completion_text, "answer is");
  if (phrase != absl::string_view::npos) {
    if (auto n = FirstNumberFrom(completion_text, phrase + 9)) return n;
  }
  std::vector<NumberToken> numbers = Numbers(completion_text);
  if (numbers.empty()) return std::nullopt;
  return numbers.back().text;
}

std::string NormalizeGsm8kNumber(absl::string_view text) {
  std::string s;
  for (char c : text) {
    if (!IsSpace(c) && c != '$' && c != ',') s.push_back(c);
  }
  while (!s.empty() && (s.back() == '.' || s.back() == '%')) s.pop_back();
  if (auto number = CanonicalNumber(s)) return *number;
  return RemoveSpaces(text);
}

std::optional<std::string> LastBoxedContent(absl::string_view text) {
  return LastCommandGroup(text, {"\\boxed{", "\\fbox{"});
}

std::string NormalizeLatexAnswer(absl::string_view text) {
  std::string s = RemoveSpaces(text);
  RemoveCommand(&s, "\\left");
  RemoveCommand(&s, "\\right");
  for (absl::string_view spacing : {"\\!", "\\,", "\\;", "\\:"}) {
    s = absl::StrReplaceAll(s, {{spacing, ""}});
  }
  RemoveCommand(&s, "\\dfrac", "\\frac");
  RemoveCommand(&s, "\\tfrac", "\\frac");
  s = absl::StrReplaceAll(s, {{"^{\\circ}", ""}, {"^\\circ", ""}, {"\\%", ""}, {"\\$", ""}});
  s = absl::StrReplaceAll(s, {{"%", ""}, {"$", ""}});
  while (!s.empty() && s.back() == '.') s.pop_back();
  s = BraceFracArguments(s);
  s = DropUnit(s);
  s = UnwrapText(s);
  // "x=5" -> "5" when the left side is a short variable name.
  if (size_t eq = s.find('=');
      eq != std::string::npos && eq > 0 && eq <= 2 && s.find('=', eq + 1) == std::string::npos) {
    bool variable = true;
    for (size_t i = 0; i < eq; ++i) variable = variable && IsAlpha(s[i]);
    if (variable) s = s.substr(eq + 1);
  }
  if (IsThousandsInteger(s)) s = absl::StrReplaceAll(s, {{",", ""}});
  return s;
}

bool LatexAnswersEqual(const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::optional<Rational> x = ParseRational(a);
  std::optional<Rational> y = ParseRational(b);
  return x.has_value() && y.has_value() && RationalsEqual(*x, *y);
}

}  // namespace rlvr
