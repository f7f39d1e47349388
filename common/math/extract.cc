#include "common/math/extract.h"

#include <cctype>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/math/parser.h"

namespace rlvr::math {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// Fenced code blocks (except LaTeX ones) and inline code, blanked out.
std::string RemoveCode(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 3, "```") == 0) {
      size_t lang_end = i + 3;
      while (lang_end < s.size() && (IsAlpha(s[lang_end]) || s[lang_end] == '+')) ++lang_end;
      const std::string lang = absl::AsciiStrToLower(s.substr(i + 3, lang_end - i - 3));
      size_t close = s.find("```", lang_end);
      const size_t end = close == absl::string_view::npos ? s.size() : close + 3;
      if (lang == "latex" || lang == "tex" || lang == "math") {
        out.append(std::string(
            s.substr(lang_end, (close == absl::string_view::npos ? s.size() : close) - lang_end)));
      }
      out.push_back('\n');
      i = end;
      continue;
    }
    if (s[i] == '`') {
      // Inline code: up to the next backtick on the same line.
      size_t close = i + 1;
      while (close < s.size() && s[close] != '`' && s[close] != '\n') ++close;
      if (close < s.size() && s[close] == '`' && close - i < 400) {
        out.push_back(' ');
        i = close + 1;
        continue;
      }
    }
    out.push_back(s[i++]);
  }
  return out;
}

// The balanced {...} opening at s[open]: content and the index past it.
std::optional<std::pair<size_t, size_t>> Braced(absl::string_view s, size_t open) {
  int depth = 0;
  for (size_t k = open; k < s.size(); ++k) {
    if (s[k] == '\\' && k + 1 < s.size() && (s[k + 1] == '{' || s[k + 1] == '}')) {
      ++k;
      continue;
    }
    if (s[k] == '{') ++depth;
    if (s[k] == '}' && --depth == 0) return std::make_pair(open + 1, k);
  }
  return std::nullopt;
}

struct Box {
  size_t start = 0;  // the backslash
  size_t end = 0;    // past '}'
  std::string content;
};

// Whether the text between two boxes only separates them.
bool SeparatesBoxes(absl::string_view gap) {
  std::string g(gap);
  for (const char* junk : {"\\text{", "\\mbox{", "\\textnormal{", "\\quad", "\\qquad", "\\(", "\\)",
                           "\\[", "\\]", "}", "$", ",", ";", "\\,"}) {
    size_t pos;
    while ((pos = g.find(junk)) != std::string::npos) g.erase(pos, std::strlen(junk));
  }
  std::string rest;
  for (char c : g) {
    if (!std::isspace(static_cast<unsigned char>(c))) rest.push_back(c);
  }
  rest = absl::AsciiStrToLower(rest);
  return rest.empty() || rest == "and" || rest == "or";
}

struct Span {
  size_t start = 0;
  size_t end = 0;  // past the span
  std::string text;
};

// Math spans: $$..$$, $..$, \(..\), \[..\].
std::vector<Span> MathSpans(absl::string_view s) {
  std::vector<Span> out;
  size_t i = 0;
  while (i < s.size()) {
    auto try_pair = [&](absl::string_view open, absl::string_view close) -> bool {
      if (s.compare(i, open.size(), open) != 0) return false;
      size_t from = i + open.size();
      size_t c = s.find(close, from);
      while (c != absl::string_view::npos && close == "$" && c > 0 && s[c - 1] == '\\') {
        c = s.find(close, c + 1);
      }
      if (c == absl::string_view::npos) return false;
      out.push_back(Span{i, c + close.size(), std::string(s.substr(from, c - from))});
      i = c + close.size();
      return true;
    };
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '$') {
      i += 2;
      continue;
    }
    if (try_pair("$$", "$$") || try_pair("\\[", "\\]") || try_pair("\\(", "\\)") ||
        try_pair("$", "$")) {
      continue;
    }
    ++i;
  }
  return out;
}

// The last plain number: [-]digits[,ddd]*[.digits][/digits][%], not glued to
// a letter on its left.
std::optional<Span> LastNumber(absl::string_view s) {
  std::optional<Span> last;
  size_t i = 0;
  while (i < s.size()) {
    if (!IsDigit(s[i]) || (i > 0 && (IsAlpha(s[i - 1]) || IsDigit(s[i - 1]) || s[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    while (i + 3 < s.size() + 0 && s[i] == ',' && IsDigit(s[i + 1]) && IsDigit(s[i + 2]) &&
           IsDigit(s[i + 3]) && (i + 4 >= s.size() || !IsDigit(s[i + 4]))) {
      i += 4;
    }
    if (i + 1 < s.size() && s[i] == '.' && IsDigit(s[i + 1])) {
      ++i;
      while (i < s.size() && IsDigit(s[i])) ++i;
    }
    if (i + 1 < s.size() && s[i] == '/' && IsDigit(s[i + 1])) {
      ++i;
      while (i < s.size() && IsDigit(s[i])) ++i;
    }
    if (i < s.size() && s[i] == '%') ++i;
    if (start > 0 && s[start - 1] == '-' &&
        (start < 2 ||
         !(std::isalnum(static_cast<unsigned char>(s[start - 2])) || s[start - 2] == ')'))) {
      --start;
    }
    last = Span{start, i, std::string(s.substr(start, i - start))};
  }
  return last;
}

// The later-ending of the last math span and the last number of `s`.
std::optional<std::string> LastMath(absl::string_view s) {
  std::vector<Span> spans = MathSpans(s);
  std::optional<Span> number = LastNumber(s);
  const Span* span = nullptr;
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    if (!absl::StripAsciiWhitespace(it->text).empty()) {
      span = &*it;
      break;
    }
  }
  if (span != nullptr && (!number.has_value() || span->end >= number->end)) return span->text;
  if (number.has_value()) return number->text;
  return std::nullopt;
}

// Case-insensitive rfind.
size_t RFindIgnoreCase(absl::string_view text, absl::string_view needle) {
  if (needle.size() > text.size()) return absl::string_view::npos;
  for (size_t i = text.size() - needle.size() + 1; i-- > 0;) {
    if (absl::EqualsIgnoreCase(text.substr(i, needle.size()), needle)) return i;
  }
  return absl::string_view::npos;
}

std::optional<std::string> PhraseAnswer(absl::string_view s) {
  size_t best_end = absl::string_view::npos;
  size_t best_start = 0;
  for (const char* phrase : {"final answer is", "final answer:", "answer is", "answer:", "####"}) {
    const size_t p = RFindIgnoreCase(s, phrase);
    if (p == absl::string_view::npos) continue;
    if (best_end == absl::string_view::npos || p >= best_start) {
      best_start = p;
      best_end = p + std::strlen(phrase);
    }
  }
  if (best_end == absl::string_view::npos) return std::nullopt;
  absl::string_view t = s.substr(best_end);
  // Its line.
  if (size_t nl = t.find('\n'); nl != absl::string_view::npos) {
    // A display answer on the next line ("Final answer:\n$$ 5 $$").
    if (absl::StripAsciiWhitespace(t.substr(0, nl)).empty()) {
      t = t.substr(nl + 1);
      nl = t.find('\n');
    }
    if (nl != absl::string_view::npos) t = t.substr(0, nl);
  }
  t = absl::StripAsciiWhitespace(t);
  while (absl::StartsWith(t, "**") || absl::StartsWith(t, ":")) {
    t = absl::StripLeadingAsciiWhitespace(t.substr(absl::StartsWith(t, "**") ? 2 : 1));
  }
  if (size_t hope = RFindIgnoreCase(t, "I hope"); hope != absl::string_view::npos) {
    t = absl::StripAsciiWhitespace(t.substr(0, hope));
  }
  // A leading math span is the answer.
  std::vector<Span> spans = MathSpans(t);
  if (!spans.empty() && spans[0].start == 0) return spans[0].text;
  // The sentence: up to ". " (a period not inside a number).
  for (size_t k = 0; k + 1 < t.size(); ++k) {
    if (t[k] == '.' && std::isspace(static_cast<unsigned char>(t[k + 1]))) {
      t = t.substr(0, k);
      break;
    }
  }
  while (absl::EndsWith(t, "**")) t = absl::StripTrailingAsciiWhitespace(t.substr(0, t.size() - 2));
  if (absl::EndsWith(t, ".") && !absl::EndsWith(t, "..")) t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  if (ParseAnswer(t).ok() || ParseChoice(t, /*lenient=*/false).has_value()) return std::string(t);
  return LastMath(t);
}

// The complete boxes of `text`, and where the last unterminated one starts.
struct Boxes {
  std::vector<Box> complete;
  size_t last_incomplete = std::string::npos;
};

Boxes FindBoxes(absl::string_view text) {
  Boxes out;
  for (size_t i = text.find('\\'); i != absl::string_view::npos; i = text.find('\\', i + 1)) {
    size_t n = 0;
    if (text.compare(i, 6, "\\boxed") == 0) n = 6;
    if (text.compare(i, 5, "\\fbox") == 0) n = 5;
    if (n == 0 || (i + n < text.size() && IsAlpha(text[i + n]))) continue;
    size_t open = i + n;
    while (open < text.size() && (text[open] == ' ' || text[open] == '\n')) ++open;
    if (open >= text.size()) {
      out.last_incomplete = i;
      continue;
    }
    if (text[open] != '{') continue;
    auto braced = Braced(text, open);
    if (!braced.has_value()) {
      out.last_incomplete = i;
      continue;
    }
    out.complete.push_back(
        Box{i, braced->second + 1,
            std::string(text.substr(braced->first, braced->second - braced->first))});
    i = braced->second;
  }
  return out;
}

// The last box's content, joined with the boxes right before it that only
// separators divide from it.
std::string LastBoxes(absl::string_view text, const std::vector<Box>& boxes) {
  size_t first = boxes.size() - 1;
  while (first > 0 && boxes.size() - first < 16 &&
         SeparatesBoxes(
             text.substr(boxes[first - 1].end, boxes[first].start - boxes[first - 1].end))) {
    --first;
  }
  std::vector<std::string> parts;
  for (size_t k = first; k < boxes.size(); ++k) parts.push_back(boxes[k].content);
  return absl::StrJoin(parts, ", ");
}

}  // namespace

const char* SourceName(AnswerSource source) {
  switch (source) {
    case AnswerSource::kBox:
      return "box";
    case AnswerSource::kPhrase:
      return "phrase";
    case AnswerSource::kSpan:
      return "span";
    case AnswerSource::kNone:
      return "none";
  }
  return "none";
}

Extracted ExtractAnswer(absl::string_view completion) {
  absl::string_view region = completion;
  if (size_t think = completion.rfind("</think>"); think != absl::string_view::npos) {
    region = completion.substr(think + 8);
  }
  const std::string text = RemoveCode(region);
  Extracted out;

  const Boxes boxes = FindBoxes(text);
  if (boxes.last_incomplete != std::string::npos &&
      (boxes.complete.empty() || boxes.last_incomplete > boxes.complete.back().start)) {
    out.truncated_box = true;
    return out;
  }
  if (!boxes.complete.empty()) {
    out.source = AnswerSource::kBox;
    out.text = LastBoxes(text, boxes.complete);
    return out;
  }
  if (auto phrase = PhraseAnswer(text)) {
    out.source = AnswerSource::kPhrase;
    out.text = std::move(*phrase);
    return out;
  }
  if (auto span = LastMath(text)) {
    out.source = AnswerSource::kSpan;
    out.text = std::move(*span);
  }
  return out;
}

std::string ReferenceAnswer(absl::string_view reference) {
  const Boxes boxes = FindBoxes(reference);
  if (!boxes.complete.empty()) return LastBoxes(reference, boxes.complete);
  if (size_t hashes = reference.rfind("####"); hashes != absl::string_view::npos) {
    return std::string(absl::StripAsciiWhitespace(reference.substr(hashes + 4)));
  }
  return std::string(absl::StripAsciiWhitespace(reference));
}

}  // namespace rlvr::math
