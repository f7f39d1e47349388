#include "common/math/parser.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rlvr::math {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// ------------------------------------------------------------------- tokens

enum class Tok : uint8_t {
  kEnd,
  kNumber,
  kIdent,  // a letter or a Greek letter: a variable (e and i: constants)
  kConst,  // pi, inf
  kWord,   // a word of text (units, names)
  kUnit,   // a short unit (cm, kg, ...)
  kFunc,
  kHedge,  // "approximately", "about"
  kPlus,
  kMinus,
  kPm,
  kMp,
  kStar,
  kSlash,
  kCaret,
  kUnderscore,
  kBang,
  kPercent,
  kDegree,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kLSet,
  kRSet,
  kLAngle,
  kRAngle,
  kBar,
  kLFloor,
  kRFloor,
  kLCeil,
  kRCeil,
  kComma,
  kSemicolon,
  kAnd,
  kRel,
  kCup,
  kCap,
  kDot,
  kFrac,
  kSqrt,
  kBinom,
  kOverline,
  kBeginEnv,
  kEndEnv,
  kAmp,
  kRowSep,
  kEllipsis,
  kEmptySet,
  kReals,
};

struct Token {
  Tok tok = Tok::kEnd;
  bool space_before = false;
  size_t pos = 0;
  std::string text;  // name of an identifier, constant, function, word or environment
  RelOp rel = RelOp::kEq;
  // kNumber.
  std::string int_digits;
  std::string frac_digits;
  std::string repeat_digits;  // 0.1\overline{6}
  int exponent = 0;
  bool decimal = false;
};

std::string Describe(const Token& t) {
  switch (t.tok) {
    case Tok::kEnd:
      return "end of input";
    case Tok::kNumber:
      return absl::StrCat("number ", t.int_digits, t.frac_digits.empty() ? "" : ".", t.frac_digits);
    case Tok::kWord:
    case Tok::kUnit:
      return absl::StrCat("word '", t.text, "'");
    default:
      return t.text.empty() ? "symbol" : absl::StrCat("'", t.text, "'");
  }
}

const absl::flat_hash_map<std::string, std::string>& Functions() {
  static const auto* m = new absl::flat_hash_map<std::string, std::string>{
      {"sin", "sin"},       {"cos", "cos"},       {"tan", "tan"},       {"sec", "sec"},
      {"csc", "csc"},       {"cot", "cot"},       {"arcsin", "arcsin"}, {"arccos", "arccos"},
      {"arctan", "arctan"}, {"asin", "arcsin"},   {"acos", "arccos"},   {"atan", "arctan"},
      {"sinh", "sinh"},     {"cosh", "cosh"},     {"tanh", "tanh"},     {"log", "log"},
      {"ln", "ln"},         {"lg", "lg"},         {"exp", "exp"},       {"sqrt", "sqrt"},
      {"abs", "abs"},       {"floor", "floor"},   {"ceil", "ceil"},     {"gcd", "gcd"},
      {"lcm", "lcm"},       {"arcsec", "arcsec"}, {"arccsc", "arccsc"}, {"arccot", "arccot"},
  };
  return *m;
}

bool IsGreek(absl::string_view name) {
  static const char* kGreek[] = {"alpha",  "beta",    "gamma", "delta",    "epsilon", "varepsilon",
                                 "zeta",   "eta",     "theta", "vartheta", "iota",    "kappa",
                                 "lambda", "mu",      "nu",    "xi",       "rho",     "sigma",
                                 "tau",    "upsilon", "phi",   "varphi",   "chi",     "psi",
                                 "omega",  "Gamma",   "Delta", "Theta",    "Lambda",  "Xi",
                                 "Sigma",  "Phi",     "Psi",   "Omega",    "Upsilon", "ell"};
  for (const char* g : kGreek) {
    if (name == g) return true;
  }
  return false;
}

bool IsShortUnit(absl::string_view w) {
  static const char* kUnits[] = {"cm",  "mm", "km", "ft",  "yd",  "mi",  "kg",  "mg", "lb",
                                 "lbs", "oz", "hr", "hrs", "min", "sec", "mph", "ml", "in",
                                 "sq",  "st", "nd", "rd",  "th",  "cu",  "kph", "mL", "kW"};
  for (const char* u : kUnits) {
    if (w == u) return true;
  }
  return false;
}

bool IsHedge(absl::string_view w) {
  static const char* kHedges[] = {"approximately", "approx", "about",   "around",
                                  "roughly",       "nearly", "exactly", "almost"};
  for (const char* h : kHedges) {
    if (absl::EqualsIgnoreCase(w, h)) return true;
  }
  return false;
}

// ------------------------------------------------------------------- lexer

#define RETURN_IF_LEX_ERROR(expr) \
  do {                            \
    absl::Status _st = (expr);    \
    if (!_st.ok()) return _st;    \
  } while (0)

class Lexer {
 public:
  // text_mode: the content of \text{..}: every letter run is a word.
  Lexer(absl::string_view s, bool text_mode, int nesting, std::vector<Token>* out)
      : s_(s), text_mode_(text_mode), nesting_(nesting), out_(out) {}

  absl::Status Run() {
    while (i_ < s_.size()) {
      RETURN_IF_LEX_ERROR(Step());
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(what, " at ", i_));
  }

  void Emit(Tok tok, std::string text = "", size_t pos = std::string::npos) {
    Token t;
    t.tok = tok;
    t.text = std::move(text);
    t.pos = pos == std::string::npos ? i_ : pos;
    t.space_before = space_;
    space_ = false;
    out_->push_back(std::move(t));
    if (tok == Tok::kLParen || tok == Tok::kLBracket || tok == Tok::kLBrace || tok == Tok::kLSet ||
        tok == Tok::kLAngle) {
      ++depth_;
    } else if ((tok == Tok::kRParen || tok == Tok::kRBracket || tok == Tok::kRBrace ||
                tok == Tok::kRSet || tok == Tok::kRAngle) &&
               depth_ > 0) {
      --depth_;
    }
  }
  void EmitRel(RelOp op) {
    Emit(Tok::kRel);
    out_->back().rel = op;
  }

  bool StartsWith(absl::string_view p) const { return absl::StartsWith(s_.substr(i_), p); }
  bool StartsWithAt(size_t at, absl::string_view p) const {
    return at <= s_.size() && absl::StartsWith(s_.substr(at), p);
  }

  // The balanced {...} group starting at s_[at] == '{': its content and the
  // index past '}'.
  std::optional<std::pair<absl::string_view, size_t>> Group(size_t at) const {
    if (at >= s_.size() || s_[at] != '{') return std::nullopt;
    int depth = 0;
    for (size_t k = at; k < s_.size(); ++k) {
      if (s_[k] == '\\' && k + 1 < s_.size()) {
        ++k;
        continue;
      }
      if (s_[k] == '{') ++depth;
      if (s_[k] == '}' && --depth == 0) return std::make_pair(s_.substr(at + 1, k - at - 1), k + 1);
    }
    return std::nullopt;
  }

  size_t SkipSpaces(size_t at) const {
    while (at < s_.size() && IsSpace(s_[at])) ++at;
    return at;
  }

  // Digits of exactly three, not followed by a digit, at s_[at].
  bool ThreeDigitsAt(size_t at) const {
    return at + 3 <= s_.size() && IsDigit(s_[at]) && IsDigit(s_[at + 1]) && IsDigit(s_[at + 2]) &&
           (at + 3 == s_.size() || !IsDigit(s_[at + 3]));
  }

  // A thousands separator at s_[at] followed by three digits: its length, or 0.
  size_t ThousandsSeparator(size_t at, size_t group_digits, bool first_group) const {
    static const char* kExplicit[] = {"{,}", ",\\!", ",\\,", "\\,", "\\!", "\\ ", "~", "{,}\\!"};
    for (const char* sep : kExplicit) {
      size_t n = std::strlen(sep);
      if (!StartsWithAt(at, sep)) continue;
      // "11,\! 111": spaces may follow an explicit separator.
      while (at + n < s_.size() && s_[at + n] == ' ') ++n;
      if (ThreeDigitsAt(at + n)) return n;
    }
    // A plain comma only outside brackets, where a list of numbers would
    // otherwise be ambiguous: "1,000" is a thousand, "(1,000)" a pair.
    if (depth_ == 0 && at < s_.size() && s_[at] == ',' && ThreeDigitsAt(at + 1) &&
        (!first_group || (group_digits >= 1 && group_digits <= 3))) {
      return 1;
    }
    return 0;
  }

  absl::Status LexNumber() {
    Token t;
    t.tok = Tok::kNumber;
    t.pos = i_;
    t.space_before = space_;
    space_ = false;
    size_t start = i_;
    while (i_ < s_.size() && IsDigit(s_[i_])) ++i_;
    t.int_digits = std::string(s_.substr(start, i_ - start));
    if (!t.int_digits.empty()) {
      bool first = true;
      size_t group = t.int_digits.size();
      while (size_t n = ThousandsSeparator(i_, group, first)) {
        t.int_digits += std::string(s_.substr(i_ + n, 3));  // n: the separator's length
        i_ += n + 3;
        first = false;
        group = 3;
      }
    }
    if (i_ < s_.size() && s_[i_] == '.' && !StartsWithAt(i_, "..")) {
      if (i_ + 1 < s_.size() && IsDigit(s_[i_ + 1])) {
        size_t f = ++i_;
        while (i_ < s_.size() && IsDigit(s_[i_])) ++i_;
        t.frac_digits = std::string(s_.substr(f, i_ - f));
        t.decimal = true;
      } else if (StartsWithAt(i_ + 1, "\\overline")) {
        ++i_;
        t.decimal = true;
      }
    }
    if (t.decimal && StartsWith("\\overline")) {
      size_t at = SkipSpaces(i_ + 9);
      auto g = Group(at);
      if (!g.has_value()) return Error("bad \\overline");
      std::string digits(absl::StripAsciiWhitespace(g->first));
      if (digits.empty() || !std::all_of(digits.begin(), digits.end(), IsDigit)) {
        return Error("bad repeating digits");
      }
      t.repeat_digits = digits;
      i_ = g->second;
    }
    // Scientific notation: 1.5e3, 2E-4 (directly attached).
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E') && t.repeat_digits.empty()) {
      size_t k = i_ + 1;
      bool neg = false;
      if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) neg = s_[k++] == '-';
      size_t d = k;
      while (k < s_.size() && IsDigit(s_[k])) ++k;
      if (k > d && k - d <= 5 && (k == s_.size() || !IsLetter(s_[k]))) {
        int e = 0;
        for (size_t q = d; q < k; ++q) e = e * 10 + (s_[q] - '0');
        t.exponent = neg ? -e : e;
        t.decimal = true;
        i_ = k;
      }
    }
    if (t.int_digits.empty() && t.frac_digits.empty() && t.repeat_digits.empty()) {
      return Error("bad number");
    }
    out_->push_back(std::move(t));
    return absl::OkStatus();
  }

  // A run of letters.
  absl::Status LexLetters() {
    const size_t start = i_;
    while (i_ < s_.size() && IsLetter(s_[i_])) ++i_;
    std::string w(s_.substr(start, i_ - start));
    const std::string lower = absl::AsciiStrToLower(w);
    if (lower == "and" || lower == "or") return Emit(Tok::kAnd, w, start), absl::OkStatus();
    if (IsHedge(w)) return Emit(Tok::kHedge, w, start), absl::OkStatus();
    if (lower == "percent" || lower == "percentage" || lower == "pct") {
      return Emit(Tok::kPercent, "%", start), absl::OkStatus();
    }
    if (lower == "degrees" || lower == "degree") {
      return Emit(Tok::kDegree, "deg", start), absl::OkStatus();
    }
    if (text_mode_) return Emit(Tok::kWord, w, start), absl::OkStatus();
    if (auto f = Functions().find(lower); f != Functions().end() && lower == w) {
      return Emit(Tok::kFunc, f->second, start), absl::OkStatus();
    }
    if (w == "pi") return Emit(Tok::kConst, "pi", start), absl::OkStatus();
    if (w == "inf" || w == "infty" || w == "infinity" || w == "oo") {
      return Emit(Tok::kConst, "inf", start), absl::OkStatus();
    }
    if (IsShortUnit(w)) return Emit(Tok::kUnit, w, start), absl::OkStatus();
    if (w.size() >= 4) return Emit(Tok::kWord, w, start), absl::OkStatus();
    // Up to three letters: a product of one-letter variables ("xy", "abc").
    for (size_t k = 0; k < w.size(); ++k) Emit(Tok::kIdent, std::string(1, w[k]), start + k);
    return absl::OkStatus();
  }

  // The content of a text command (\text{...}): lexed in text mode.
  absl::Status LexText(absl::string_view command, absl::string_view content, size_t pos) {
    std::string trimmed(absl::StripAsciiWhitespace(content));
    if (trimmed.empty()) {
      space_ = true;
      return absl::OkStatus();
    }
    if (nesting_ > 4) return Error("text nested too deeply");
    const bool math_like = command == "mathrm" || command == "operatorname";
    if (math_like) {
      const std::string lower = absl::AsciiStrToLower(trimmed);
      if (auto f = Functions().find(lower); f != Functions().end()) {
        Emit(Tok::kFunc, f->second, pos);
        return absl::OkStatus();
      }
      if (trimmed.size() == 1 && IsLetter(trimmed[0])) {
        Emit(Tok::kIdent, trimmed, pos);
        return absl::OkStatus();
      }
    }
    std::vector<Token> inner;
    Lexer sub(content, /*text_mode=*/true, nesting_ + 1, &inner);
    RETURN_IF_LEX_ERROR(sub.Run());
    for (size_t k = 0; k < inner.size(); ++k) {
      Token t = std::move(inner[k]);
      t.pos = pos;
      t.space_before = k == 0 ? true : t.space_before;
      out_->push_back(std::move(t));
    }
    space_ = true;
    return absl::OkStatus();
  }

  absl::Status LexCommand() {
    const size_t start = i_;
    ++i_;                                          // '\'
    if (i_ >= s_.size()) return absl::OkStatus();  // a lone trailing backslash
    const char c = s_[i_];
    if (!IsLetter(c)) {
      ++i_;
      switch (c) {
        case ',':
        case '!':
        case ';':
        case ':':
        case ' ':
        case '>':
          space_ = true;
          return absl::OkStatus();
        case '%':
          Emit(Tok::kPercent, "%", start);
          return absl::OkStatus();
        case '$':
          return absl::OkStatus();
        case '{':
          Emit(Tok::kLSet, "\\{", start);
          return absl::OkStatus();
        case '}':
          Emit(Tok::kRSet, "\\}", start);
          return absl::OkStatus();
        case '\\':
          Emit(Tok::kRowSep, "\\\\", start);
          return absl::OkStatus();
        case '|':
          return Error("unsupported '\\|'");
        case '(':
        case ')':
        case '[':
        case ']':
          // Math delimiters inside the text: ignored.
          space_ = true;
          return absl::OkStatus();
        default:
          return Error(absl::StrCat("unknown command '\\", std::string(1, c), "'"));
      }
    }
    const size_t name_start = i_;
    while (i_ < s_.size() && IsLetter(s_[i_])) ++i_;
    const std::string name(s_.substr(name_start, i_ - name_start));

    static const char* kSkip[] = {
        "left",   "right",    "bigl",       "bigr",         "Bigl",      "Bigr",
        "biggl",  "biggr",    "Biggl",      "Biggr",        "big",       "Big",
        "bigg",   "Bigg",     "middle",     "displaystyle", "textstyle", "scriptstyle",
        "limits", "nolimits", "mathbf",     "boldsymbol",   "bm",        "mathit",
        "mathsf", "mathcal",  "mathnormal", "boxed",        "fbox",      "mathbold",
        "hfill",  "phantom",  "vphantom",   "hphantom",     "smash",     "underline",
        "rm",     "bf",       "it"};
    for (const char* k : kSkip) {
      if (name == k) {
        // \left. and \right. are invisible delimiters.
        if ((name == "left" || name == "right" || absl::StartsWith(name, "big") ||
             absl::StartsWith(name, "Big") || name == "middle")) {
          size_t at = SkipSpaces(i_);
          if (at < s_.size() && s_[at] == '.') i_ = at + 1;
        }
        if (name == "phantom" || name == "vphantom" || name == "hphantom") {
          auto g = Group(SkipSpaces(i_));
          if (g.has_value()) i_ = g->second;
        }
        return absl::OkStatus();
      }
    }
    static const char* kSpace[] = {"quad",       "qquad",        "enspace", "thinspace", "medspace",
                                   "thickspace", "negthinspace", "hspace",  "space",     "cr"};
    for (const char* k : kSpace) {
      if (name == k) {
        if (name == "hspace") {
          auto g = Group(SkipSpaces(i_));
          if (g.has_value()) i_ = g->second;
        }
        if (name == "cr") {
          Emit(Tok::kRowSep, "\\\\", start);
          return absl::OkStatus();
        }
        space_ = true;
        return absl::OkStatus();
      }
    }
    static const char* kText[] = {"text",       "textbf", "textit", "textrm", "mbox",
                                  "textnormal", "texttt", "textsf", "mathrm", "operatorname",
                                  "hbox",       "textup", "emph",   "mathtt"};
    for (const char* k : kText) {
      if (name == k) {
        size_t at = SkipSpaces(i_);
        if (name == "operatorname" && at < s_.size() && s_[at] == '*') at = SkipSpaces(at + 1);
        auto g = Group(at);
        if (!g.has_value()) return Error(absl::StrCat("\\", name, " without {..}"));
        i_ = g->second;
        return LexText(name, g->first, start);
      }
    }
    if (name == "frac" || name == "dfrac" || name == "tfrac" || name == "cfrac") {
      Emit(Tok::kFrac, "\\frac", start);
    } else if (name == "sqrt") {
      Emit(Tok::kSqrt, "\\sqrt", start);
    } else if (name == "binom" || name == "dbinom" || name == "tbinom") {
      Emit(Tok::kBinom, "\\binom", start);
    } else if (name == "overline") {
      Emit(Tok::kOverline, "\\overline", start);
    } else if (name == "pi") {
      Emit(Tok::kConst, "pi", start);
    } else if (name == "infty" || name == "infin") {
      Emit(Tok::kConst, "inf", start);
    } else if (name == "imath") {
      Emit(Tok::kIdent, "i", start);
    } else if (IsGreek(name)) {
      Emit(Tok::kIdent, "\\" + name, start);
    } else if (name == "cdot" || name == "times" || name == "ast" || name == "bullet") {
      Emit(Tok::kStar, "*", start);
    } else if (name == "div") {
      Emit(Tok::kSlash, "/", start);
    } else if (name == "pm") {
      Emit(Tok::kPm, "\\pm", start);
    } else if (name == "mp") {
      Emit(Tok::kMp, "\\mp", start);
    } else if (name == "le" || name == "leq" || name == "leqslant") {
      EmitRel(RelOp::kLe);
    } else if (name == "ge" || name == "geq" || name == "geqslant") {
      EmitRel(RelOp::kGe);
    } else if (name == "lt") {
      EmitRel(RelOp::kLt);
    } else if (name == "gt") {
      EmitRel(RelOp::kGt);
    } else if (name == "ne" || name == "neq") {
      EmitRel(RelOp::kNe);
    } else if (name == "approx" || name == "simeq" || name == "approxeq" || name == "sim" ||
               name == "thickapprox" || name == "cong") {
      EmitRel(RelOp::kApprox);
    } else if (name == "in") {
      EmitRel(RelOp::kIn);
    } else if (name == "cup") {
      Emit(Tok::kCup, "\\cup", start);
    } else if (name == "cap") {
      Emit(Tok::kCap, "\\cap", start);
    } else if (name == "lbrace") {
      Emit(Tok::kLSet, "\\{", start);
    } else if (name == "rbrace") {
      Emit(Tok::kRSet, "\\}", start);
    } else if (name == "langle") {
      Emit(Tok::kLAngle, "<", start);
    } else if (name == "rangle") {
      Emit(Tok::kRAngle, ">", start);
    } else if (name == "lvert" || name == "rvert" || name == "vert" || name == "mid") {
      Emit(Tok::kBar, "|", start);
    } else if (name == "lfloor") {
      Emit(Tok::kLFloor, "floor", start);
    } else if (name == "rfloor") {
      Emit(Tok::kRFloor, "floor", start);
    } else if (name == "lceil") {
      Emit(Tok::kLCeil, "ceil", start);
    } else if (name == "rceil") {
      Emit(Tok::kRCeil, "ceil", start);
    } else if (auto f = Functions().find(name); f != Functions().end()) {
      Emit(Tok::kFunc, f->second, start);
    } else if (name == "dots" || name == "ldots" || name == "cdots" || name == "dotsc" ||
               name == "dotsb") {
      Emit(Tok::kEllipsis, "...", start);
    } else if (name == "emptyset" || name == "varnothing" || name == "O") {
      Emit(Tok::kEmptySet, "{}", start);
    } else if (name == "circ" || name == "degree") {
      Emit(Tok::kDegree, "deg", start);
    } else if (name == "mathbb" || name == "Bbb") {
      auto g = Group(SkipSpaces(i_));
      absl::string_view letter;
      if (g.has_value()) {
        letter = absl::StripAsciiWhitespace(g->first);
        i_ = g->second;
      } else if (SkipSpaces(i_) < s_.size()) {
        i_ = SkipSpaces(i_);
        letter = s_.substr(i_++, 1);
      }
      if (letter != "R")
        return Error(absl::StrCat("unsupported number set \\mathbb{", letter, "}"));
      Emit(Tok::kReals, "R", start);
    } else if (name == "begin" || name == "end") {
      auto g = Group(SkipSpaces(i_));
      if (!g.has_value()) return Error(absl::StrCat("\\", name, " without {..}"));
      std::string env(absl::StripAsciiWhitespace(g->first));
      i_ = g->second;
      if (name == "begin" && env == "array") {
        // Column specification.
        auto spec = Group(SkipSpaces(i_));
        if (spec.has_value()) i_ = spec->second;
      }
      Emit(name == "begin" ? Tok::kBeginEnv : Tok::kEndEnv, env, start);
    } else {
      return Error(absl::StrCat("unknown command '\\", name, "'"));
    }
    return absl::OkStatus();
  }

  // One UTF-8 character read as its LaTeX meaning; false when not known.
  bool LexUnicode() {
    struct Mapping {
      const char* utf8;
      Tok tok;
      const char* text;
      RelOp rel;
    };
    static const Mapping kMap[] = {
        {"\xCF\x80", Tok::kConst, "pi", RelOp::kEq},          // π
        {"\xC3\x97", Tok::kStar, "*", RelOp::kEq},            // ×
        {"\xC2\xB7", Tok::kStar, "*", RelOp::kEq},            // ·
        {"\xE2\x8B\x85", Tok::kStar, "*", RelOp::kEq},        // ⋅
        {"\xE2\x88\x97", Tok::kStar, "*", RelOp::kEq},        // ∗
        {"\xC3\xB7", Tok::kSlash, "/", RelOp::kEq},           // ÷
        {"\xE2\x88\x92", Tok::kMinus, "-", RelOp::kEq},       // − minus sign
        {"\xE2\x80\x93", Tok::kMinus, "-", RelOp::kEq},       // – en dash
        {"\xC2\xB1", Tok::kPm, "\\pm", RelOp::kEq},           // ±
        {"\xE2\x88\x93", Tok::kMp, "\\mp", RelOp::kEq},       // ∓
        {"\xE2\x89\xA4", Tok::kRel, "<=", RelOp::kLe},        // ≤
        {"\xE2\x89\xA5", Tok::kRel, ">=", RelOp::kGe},        // ≥
        {"\xE2\x89\xA0", Tok::kRel, "!=", RelOp::kNe},        // ≠
        {"\xE2\x89\x88", Tok::kRel, "~", RelOp::kApprox},     // ≈
        {"\xE2\x88\x88", Tok::kRel, "in", RelOp::kIn},        // ∈
        {"\xE2\x88\x9E", Tok::kConst, "inf", RelOp::kEq},     // ∞
        {"\xE2\x88\x9A", Tok::kSqrt, "\\sqrt", RelOp::kEq},   // √
        {"\xE2\x88\xAA", Tok::kCup, "\\cup", RelOp::kEq},     // ∪
        {"\xE2\x88\xA9", Tok::kCap, "\\cap", RelOp::kEq},     // ∩
        {"\xE2\x88\x85", Tok::kEmptySet, "{}", RelOp::kEq},   // ∅
        {"\xC2\xB0", Tok::kDegree, "deg", RelOp::kEq},        // °
        {"\xE2\x84\x9D", Tok::kReals, "R", RelOp::kEq},       // ℝ
        {"\xE2\x80\xA6", Tok::kEllipsis, "...", RelOp::kEq},  // …
    };
    for (const Mapping& m : kMap) {
      if (StartsWith(m.utf8)) {
        const size_t at = i_;
        i_ += std::strlen(m.utf8);
        if (m.tok == Tok::kRel) {
          Emit(Tok::kRel, m.text, at);
          out_->back().rel = m.rel;
        } else {
          Emit(m.tok, m.text, at);
        }
        return true;
      }
    }
    // Superscript digits: x² = x^2.
    if (StartsWith("\xC2\xB2") || StartsWith("\xC2\xB3") || StartsWith("\xC2\xB9")) {
      const char d = s_[i_ + 1] == '\xB2' ? '2' : (s_[i_ + 1] == '\xB3' ? '3' : '1');
      const size_t at = i_;
      i_ += 2;
      Emit(Tok::kCaret, "^", at);
      Token t;
      t.tok = Tok::kNumber;
      t.pos = at;
      t.int_digits = std::string(1, d);
      out_->push_back(std::move(t));
      return true;
    }
    // Currency signs and non-breaking spaces are ignored.
    static const char* kIgnored[] = {"\xE2\x82\xAC", "\xC2\xA3",     "\xC2\xA5",
                                     "\xC2\xA0",     "\xE2\x80\x89", "\xE2\x80\xAF"};
    for (const char* ign : kIgnored) {
      if (StartsWith(ign)) {
        i_ += std::strlen(ign);
        space_ = true;
        return true;
      }
    }
    return false;
  }

  absl::Status Step() {
    const char c = s_[i_];
    if (IsSpace(c) || c == '~') {
      ++i_;
      space_ = true;
      return absl::OkStatus();
    }
    if (IsDigit(c) || (c == '.' && i_ + 1 < s_.size() && IsDigit(s_[i_ + 1]))) return LexNumber();
    if (IsLetter(c)) return LexLetters();
    if (c == '\\') return LexCommand();
    if (static_cast<unsigned char>(c) >= 0x80) {
      if (LexUnicode()) return absl::OkStatus();
      return Error("unexpected character");
    }
    const size_t at = i_;
    ++i_;
    switch (c) {
      case '(':
        Emit(Tok::kLParen, "(", at);
        break;
      case ')':
        Emit(Tok::kRParen, ")", at);
        break;
      case '[':
        Emit(Tok::kLBracket, "[", at);
        break;
      case ']':
        Emit(Tok::kRBracket, "]", at);
        break;
      case '{':
        // {}^\circ: an empty group before a degree sign.
        if (StartsWith("}")) {
          ++i_;
          break;
        }
        Emit(Tok::kLBrace, "{", at);
        break;
      case '}':
        Emit(Tok::kRBrace, "}", at);
        break;
      case ',':
        Emit(Tok::kComma, ",", at);
        break;
      case ';':
        Emit(Tok::kSemicolon, ";", at);
        break;
      case '+':
        Emit(Tok::kPlus, "+", at);
        break;
      case '-':
        Emit(Tok::kMinus, "-", at);
        break;
      case '*':
        if (StartsWith("*")) {
          ++i_;
          Emit(Tok::kCaret, "^", at);
        } else {
          Emit(Tok::kStar, "*", at);
        }
        break;
      case '/':
        Emit(Tok::kSlash, "/", at);
        break;
      case '^': {
        // ^\circ and ^{\circ}: degrees.
        size_t k = SkipSpaces(i_);
        if (StartsWithAt(k, "\\circ") && (k + 5 >= s_.size() || !IsLetter(s_[k + 5]))) {
          i_ = k + 5;
          Emit(Tok::kDegree, "deg", at);
          break;
        }
        if (k < s_.size() && s_[k] == '{') {
          size_t m = SkipSpaces(k + 1);
          if (StartsWithAt(m, "\\circ")) {
            size_t e = SkipSpaces(m + 5);
            if (e < s_.size() && s_[e] == '}') {
              i_ = e + 1;
              Emit(Tok::kDegree, "deg", at);
              break;
            }
          }
        }
        Emit(Tok::kCaret, "^", at);
        break;
      }
      case '_':
        Emit(Tok::kUnderscore, "_", at);
        break;
      case '!':
        if (StartsWith("=")) {
          ++i_;
          EmitRel(RelOp::kNe);
        } else {
          Emit(Tok::kBang, "!", at);
        }
        break;
      case '%':
        Emit(Tok::kPercent, "%", at);
        break;
      case '|':
        Emit(Tok::kBar, "|", at);
        break;
      case '&':
        Emit(Tok::kAmp, "&", at);
        break;
      case '=':
        if (StartsWith("=")) ++i_;
        if (StartsWith("<")) {
          ++i_;
          EmitRel(RelOp::kLe);
        } else if (StartsWith(">")) {
          ++i_;
          EmitRel(RelOp::kGe);
        } else {
          EmitRel(RelOp::kEq);
        }
        break;
      case '<':
        if (StartsWith("=")) {
          ++i_;
          EmitRel(RelOp::kLe);
        } else if (StartsWith(">")) {
          ++i_;
          EmitRel(RelOp::kNe);
        } else {
          EmitRel(RelOp::kLt);
        }
        break;
      case '>':
        if (StartsWith("=")) {
          ++i_;
          EmitRel(RelOp::kGe);
        } else {
          EmitRel(RelOp::kGt);
        }
        break;
      case '.':
        if (StartsWith("..")) {
          i_ += 2;
          Emit(Tok::kEllipsis, "...", at);
        } else {
          Emit(Tok::kDot, ".", at);
        }
        break;
      case ':':
        // Labels ("x: 5") and ratios ("3:4") are not in the grammar.
        i_ = at;
        return Error("unexpected ':'");
      case '$':
      case '"':
      case '\'':
      case '`':
        // Math delimiters and quotes inside the answer.
        space_ = true;
        break;
      default:
        i_ = at;
        return Error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
    }
    return absl::OkStatus();
  }
#undef RETURN_IF_LEX_ERROR

  absl::string_view s_;
  bool text_mode_;
  int nesting_;
  std::vector<Token>* out_;
  size_t i_ = 0;
  bool space_ = false;
  int depth_ = 0;
};

// ------------------------------------------------------------------ parser

bool IsCloser(Tok t) {
  return t == Tok::kRParen || t == Tok::kRBracket || t == Tok::kRBrace || t == Tok::kRSet ||
         t == Tok::kRAngle || t == Tok::kEnd || t == Tok::kAmp || t == Tok::kRowSep ||
         t == Tok::kEndEnv || t == Tok::kRFloor || t == Tok::kRCeil;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ParseOptions& options)
      : toks_(std::move(tokens)), options_(options) {
    Token end;
    end.tok = Tok::kEnd;
    end.pos = toks_.empty() ? 0 : toks_.back().pos + 1;
    toks_.push_back(end);
  }

  absl::StatusOr<Expr> Run() {
    if (IsTextAnswer()) {
      std::string words;
      for (const Token& t : toks_) {
        if (t.tok != Tok::kWord && t.tok != Tok::kUnit && t.tok != Tok::kAnd &&
            t.tok != Tok::kIdent) {
          continue;
        }
        if (!words.empty() && (t.space_before || t.tok != Tok::kIdent)) words += " ";
        words += t.text;
      }
      Node n;
      n.kind = Kind::kText;
      n.name = std::move(words);
      expr_.root = expr_.Add(std::move(n));
      return std::move(expr_);
    }
    bool saw_or = false;
    std::vector<int> items = ParseList(&saw_or);
    while (Peek().tok == Tok::kDot || Peek().tok == Tok::kComma || Peek().tok == Tok::kSemicolon) {
      Next();
    }
    if (!failed() && Peek().tok != Tok::kEnd) Fail(absl::StrCat("unexpected ", Describe(Peek())));
    if (failed()) return error_;
    if (items.size() == 1) {
      expr_.root = items[0];
    } else {
      expr_.root = Make(Kind::kList, items, saw_or ? "or" : "");
    }
    if (failed()) return error_;
    return std::move(expr_);
  }

 private:
  // ---- helpers
  const Token& Peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  Token& PeekMutable() { return toks_[pos_]; }
  const Token& Next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool Accept(Tok t) {
    if (Peek().tok != t) return false;
    Next();
    return true;
  }
  bool failed() const { return !error_.ok(); }
  int Fail(absl::string_view what) {
    if (error_.ok()) {
      error_ = absl::InvalidArgumentError(absl::StrCat(what, " at ", Peek().pos));
    }
    return -1;
  }
  bool Expect(Tok t, absl::string_view what) {
    if (Accept(t)) return true;
    Fail(absl::StrCat("expected ", what, ", got ", Describe(Peek())));
    return false;
  }

  int Add(Node n) {
    if (static_cast<int>(expr_.nodes.size()) >= options_.max_nodes) {
      if (error_.ok()) error_ = absl::ResourceExhaustedError("too many expression nodes");
      return -1;
    }
    return expr_.Add(std::move(n));
  }
  int Make(Kind kind, std::vector<int> kids, std::string name = "") {
    for (int k : kids) {
      if (k < 0) return -1;
    }
    Node n;
    n.kind = kind;
    n.kids = std::move(kids);
    n.name = std::move(name);
    return Add(std::move(n));
  }
  int Const(const char* name) { return Make(Kind::kConstant, {}, name); }
  int Integer(int64_t v) {
    Node n;
    n.kind = Kind::kNumber;
    n.value = Rational(v);
    return Add(std::move(n));
  }
  // a * b, flattening products.
  int Times(int a, int b, bool call = false) {
    if (a < 0 || b < 0) return -1;
    if (expr_.at(a).kind == Kind::kMul && !expr_.at(a).call && !call) {
      expr_.at(a).kids.push_back(b);
      return a;
    }
    int m = Make(Kind::kMul, {a, b});
    if (m >= 0) expr_.at(m).call = call;
    return m;
  }

  // Depth guard for recursive productions.
  class Nest {
   public:
    explicit Nest(Parser* p) : p_(p) {
      if (++p_->depth_ > p_->options_.max_depth && p_->error_.ok()) {
        p_->error_ = absl::ResourceExhaustedError("nested too deeply");
      }
    }
    ~Nest() { --p_->depth_; }

   private:
    Parser* p_;
  };

  // Words only (at least one of four letters or more): "Evelyn", "no solution".
  bool IsTextAnswer() const {
    bool word = false;
    for (const Token& t : toks_) {
      switch (t.tok) {
        case Tok::kWord:
          word = true;
          break;
        case Tok::kIdent:
          if (t.text[0] == '\\') return false;  // a Greek letter
          break;
        case Tok::kUnit:
        case Tok::kAnd:
        case Tok::kHedge:
        case Tok::kComma:
        case Tok::kDot:
        case Tok::kEnd:
          break;
        default:
          return false;
      }
    }
    return word;
  }

  // ---- productions

  // item (sep item)* up to a closer.
  std::vector<int> ParseList(bool* saw_or = nullptr) {
    std::vector<int> items;
    Nest nest(this);
    if (failed()) return items;
    items.push_back(ParseItem());
    while (!failed()) {
      const Tok t = Peek().tok;
      if (t != Tok::kComma && t != Tok::kSemicolon && t != Tok::kAnd) break;
      if (t == Tok::kAnd && saw_or != nullptr && absl::EqualsIgnoreCase(Peek().text, "or")) {
        *saw_or = true;
      }
      Next();
      while (Peek().tok == Tok::kAnd || Peek().tok == Tok::kComma) Next();  // ", and"
      if (IsCloser(Peek().tok) || Peek().tok == Tok::kDot) break;           // trailing comma
      items.push_back(ParseItem());
    }
    return items;
  }

  int ParseItem() {
    while (Peek().tok == Tok::kHedge) Next();
    if (Peek().tok == Tok::kEllipsis) {
      Next();
      return Make(Kind::kEllipsis, {}, "...");
    }
    // "= 5", "\approx 3.14": a leading relation.
    if (Peek().tok == Tok::kRel && (Peek().rel == RelOp::kEq || Peek().rel == RelOp::kApprox)) {
      Next();
      while (Peek().tok == Tok::kHedge) Next();
    }
    int first = ParseUnion();
    if (first < 0 || Peek().tok != Tok::kRel) return first;
    Node rel;
    rel.kind = Kind::kRelation;
    rel.kids.push_back(first);
    while (Peek().tok == Tok::kRel) {
      rel.ops.push_back(Next().rel);
      while (Peek().tok == Tok::kHedge) Next();
      int next = ParseUnion();
      if (next < 0) return -1;
      rel.kids.push_back(next);
    }
    return Add(std::move(rel));
  }

  int ParseUnion() {
    int first = ParseSum();
    if (first < 0) return -1;
    if (Peek().tok == Tok::kCap) return Fail("set intersection is not supported");
    if (Peek().tok != Tok::kCup) return first;
    std::vector<int> parts = {first};
    while (Accept(Tok::kCup)) {
      int next = ParseSum();
      if (next < 0) return -1;
      parts.push_back(next);
    }
    return Make(Kind::kUnion, parts);
  }

  int ParseSum() {
    Nest nest(this);
    if (failed()) return -1;
    int first = ParseTerm();
    if (first < 0) return -1;
    std::vector<int> terms = {first};
    while (true) {
      const Tok t = Peek().tok;
      if (t != Tok::kPlus && t != Tok::kMinus && t != Tok::kPm && t != Tok::kMp) break;
      Next();
      int term = ParseTerm();
      if (term < 0) return -1;
      if (t == Tok::kMinus) term = Make(Kind::kNeg, {term});
      if (t == Tok::kPm) term = Make(Kind::kPlusMinus, {term}, "pm");
      if (t == Tok::kMp) term = Make(Kind::kPlusMinus, {term}, "mp");
      terms.push_back(term);
    }
    if (terms.size() == 1) return first;
    return Make(Kind::kAdd, terms);
  }

  // Whether `t` can begin a factor multiplied by juxtaposition.
  bool StartsImplicitFactor(const Token& t) const {
    switch (t.tok) {
      case Tok::kNumber:
      case Tok::kIdent:
      case Tok::kConst:
      case Tok::kFunc:
      case Tok::kFrac:
      case Tok::kSqrt:
      case Tok::kBinom:
      case Tok::kLParen:
      case Tok::kLBrace:
      case Tok::kLFloor:
      case Tok::kLCeil:
      case Tok::kOverline:
      case Tok::kBeginEnv:
        return true;
      case Tok::kBar:
        return abs_depth_ == 0;
      default:
        return false;
    }
  }

  bool IsIntegerLiteral(int node) const {
    if (node < 0) return false;
    const Node& n = expr_.at(node);
    return n.kind == Kind::kNumber && !n.decimal && n.value.is_integer() && !n.value.negative();
  }

  // Trailing unit words: words (or units) up to a terminator, with an
  // optional power ("cm^2") or "/ word" ("km/h").
  bool AtUnitTail() const {
    size_t k = 0;
    bool any = false;
    while (true) {
      const Token& t = Peek(k);
      if (t.tok == Tok::kWord || t.tok == Tok::kUnit) {
        any = true;
        ++k;
        continue;
      }
      if (any && t.tok == Tok::kCaret && Peek(k + 1).tok == Tok::kNumber) {
        k += 2;
        continue;
      }
      if (any && t.tok == Tok::kSlash &&
          (Peek(k + 1).tok == Tok::kWord || Peek(k + 1).tok == Tok::kUnit ||
           Peek(k + 1).tok == Tok::kIdent)) {
        k += 2;
        continue;
      }
      if (any && t.tok == Tok::kIdent && t.text.size() == 1 && Peek(k - 1).tok != Tok::kIdent) {
        // "km / h" style single letters after a unit.
        ++k;
        continue;
      }
      break;
    }
    if (!any) return false;
    const Tok end = Peek(k).tok;
    return IsCloser(end) || end == Tok::kComma || end == Tok::kSemicolon || end == Tok::kAnd ||
           end == Tok::kRel || end == Tok::kDot || end == Tok::kCup || end == Tok::kPlus ||
           end == Tok::kMinus;
  }
  void SkipUnitTail() {
    while (true) {
      const Tok t = Peek().tok;
      if (t == Tok::kWord || t == Tok::kUnit) {
        Next();
      } else if (t == Tok::kCaret && Peek(1).tok == Tok::kNumber) {
        Next();
        Next();
      } else if (t == Tok::kSlash && (Peek(1).tok == Tok::kWord || Peek(1).tok == Tok::kUnit ||
                                      Peek(1).tok == Tok::kIdent)) {
        Next();
        Next();
      } else if (t == Tok::kIdent && Peek().text.size() == 1 &&
                 (Peek(1).tok == Tok::kEnd || IsCloser(Peek(1).tok) || Peek(1).tok == Tok::kComma ||
                  Peek(1).tok == Tok::kDot)) {
        Next();
      } else {
        break;
      }
    }
  }

  int ParseTerm() {
    int cur = ParseUnary();
    if (cur < 0) return -1;
    bool last_was_number =
        IsIntegerLiteral(cur) || (cur >= 0 && expr_.at(cur).kind == Kind::kNumber);
    bool single_factor = true;
    while (!failed()) {
      const Token& t = Peek();
      if (t.tok == Tok::kStar) {
        Next();
        int f = ParseUnary();
        cur = Times(cur, f);
        last_was_number = f >= 0 && expr_.at(f).kind == Kind::kNumber;
        single_factor = false;
        continue;
      }
      if (t.tok == Tok::kSlash) {
        Next();
        int f = ParseUnary();
        cur = Make(Kind::kDiv, {cur, f});
        last_was_number = false;
        single_factor = false;
        continue;
      }
      if ((t.tok == Tok::kWord || t.tok == Tok::kUnit) && !HasVariable(cur) && AtUnitTail()) {
        SkipUnitTail();
        continue;
      }
      // Mixed numbers: 2\frac{1}{2} and "4 4/9".
      if (single_factor && IsMixedWhole(cur)) {
        int mixed = TryMixedNumber(cur);
        if (mixed >= 0) {
          cur = mixed;
          single_factor = false;
          last_was_number = false;
          continue;
        }
        if (failed()) return -1;
      }
      if (!StartsImplicitFactor(t)) break;
      if (t.tok == Tok::kNumber && last_was_number) {
        return Fail(absl::StrCat("two numbers without an operator: ", Describe(t)));
      }
      // "f(x)": a letter directly followed by '(' (reads as a product, marked).
      const bool call =
          t.tok == Tok::kLParen && !t.space_before && expr_.at(cur).kind == Kind::kVariable;
      int f = ParseUnary(/*implicit=*/true);
      if (f < 0) return -1;
      last_was_number = expr_.at(f).kind == Kind::kNumber;
      cur = Times(cur, f, call);
      single_factor = false;
    }
    return cur;
  }

  bool HasVariable(int node) const {
    const Node& n = expr_.at(node);
    if (n.kind == Kind::kVariable) return true;
    for (int k : n.kids) {
      if (HasVariable(k)) return true;
    }
    return false;
  }

  bool IsMixedWhole(int node) const {
    if (IsIntegerLiteral(node)) return true;
    const Node& n = expr_.at(node);
    return n.kind == Kind::kNeg && IsIntegerLiteral(n.kids[0]);
  }

  // After a whole number: \frac{a}{b} (LaTeX) or " a/b" (plain, after a
  // space) with integer literals.
  int TryMixedNumber(int whole) {
    const Node& w = expr_.at(whole);
    const bool negative = w.kind == Kind::kNeg;
    const int whole_value = negative ? w.kids[0] : whole;
    auto plain_integer = [](const Token& t) {
      return t.tok == Tok::kNumber && !t.decimal && t.exponent == 0 && !t.int_digits.empty();
    };
    int frac = -1;
    if (Peek().tok == Tok::kFrac) {
      // \frac{int}{int} or \frac12.
      size_t save = pos_;
      std::vector<Token> saved(toks_.begin() + static_cast<long>(pos_),
                               std::min(toks_.end(), toks_.begin() + static_cast<long>(pos_) + 8));
      Next();
      int a = ParseMacroArg();
      int b = a >= 0 ? ParseMacroArg() : -1;
      if (a >= 0 && b >= 0 && IsIntegerLiteral(a) && IsIntegerLiteral(b) &&
          !StartsPowerOrFactor()) {
        frac = Make(Kind::kDiv, {a, b});
      } else {
        // Not a mixed number: rewind (tokens split by \frac12 restored).
        std::copy(saved.begin(), saved.end(), toks_.begin() + static_cast<long>(save));
        pos_ = save;
        error_ = absl::OkStatus();
        return -1;
      }
    } else if (plain_integer(Peek()) && Peek().space_before && Peek(1).tok == Tok::kSlash &&
               plain_integer(Peek(2)) && !Peek(1).space_before && !Peek(2).space_before &&
               Peek(3).tok != Tok::kCaret && Peek(3).tok != Tok::kSlash) {
      int a = ParsePrimary();
      Next();  // '/'
      int b = ParsePrimary();
      frac = Make(Kind::kDiv, {a, b});
    } else {
      return -1;
    }
    int sum = Make(Kind::kAdd, {whole_value, frac});
    return negative ? Make(Kind::kNeg, {sum}) : sum;
  }
  bool StartsPowerOrFactor() const { return Peek().tok == Tok::kCaret; }

  int ParseUnary(bool implicit = false) {
    Nest nest(this);
    if (failed()) return -1;
    const Tok t = Peek().tok;
    if (!implicit) {
      if (t == Tok::kMinus) {
        Next();
        return Make(Kind::kNeg, {ParseUnary()});
      }
      if (t == Tok::kPlus) {
        Next();
        return ParseUnary();
      }
      if (t == Tok::kPm || t == Tok::kMp) {
        Next();
        return Make(Kind::kPlusMinus, {ParseUnary()}, t == Tok::kPm ? "pm" : "mp");
      }
    }
    return ParsePower();
  }

  int ParsePower() {
    int base = ParsePostfix();
    if (base < 0) return -1;
    if (Peek().tok != Tok::kCaret) return base;
    Next();
    int exponent = ParseExponent();
    int p = Make(Kind::kPow, {base, exponent});
    return ParsePostfixOps(p);
  }

  // The exponent after '^': a braced group, or one (signed) primary.
  int ParseExponent() {
    Nest nest(this);
    if (failed()) return -1;
    if (Accept(Tok::kMinus)) return Make(Kind::kNeg, {ParseExponent()});
    if (Accept(Tok::kPlus)) return ParseExponent();
    int e = ParsePostfix();
    if (e < 0) return -1;
    if (Accept(Tok::kCaret)) return Make(Kind::kPow, {e, ParseExponent()});
    return e;
  }

  int ParsePostfix() {
    int p = ParsePrimary();
    return ParsePostfixOps(p);
  }
  int ParsePostfixOps(int p) {
    while (p >= 0) {
      const Tok t = Peek().tok;
      if (t == Tok::kBang) {
        Next();
        p = Make(Kind::kFunction, {p}, "factorial");
      } else if (t == Tok::kPercent) {
        Next();
        p = Make(Kind::kPercent, {p});
      } else if (t == Tok::kDegree) {
        Next();
        p = Make(Kind::kDegree, {p});
        // 25^\circ C: a temperature scale letter after the degree sign.
        if (Peek().tok == Tok::kIdent && (Peek().text == "C" || Peek().text == "F") &&
            (IsCloser(Peek(1).tok) || Peek(1).tok == Tok::kComma || Peek(1).tok == Tok::kDot)) {
          Next();
        }
      } else {
        break;
      }
    }
    return p;
  }

  int NumberNode(const Token& t) {
    WorkBudget budget(1 << 22);
    std::optional<Rational> v =
        Rational::FromDecimal(t.int_digits, t.frac_digits, t.exponent, &budget);
    if (!v.has_value()) return Fail("number too large");
    if (!t.repeat_digits.empty()) {
      // 0.1\overline{6} = 0.1 + 6 / (9 * 10).
      auto rep = BigInt::FromDecimal(t.repeat_digits);
      auto nines = BigInt::Pow(BigInt(10), t.repeat_digits.size(), &budget);
      auto shift = BigInt::Pow(BigInt(10), t.frac_digits.size(), &budget);
      if (!rep.has_value() || !nines.has_value() || !shift.has_value()) {
        return Fail("repeating decimal too long");
      }
      auto n9 = BigInt::Sub(*nines, BigInt(1), &budget);
      auto den = n9.has_value() ? BigInt::Mul(*n9, *shift, &budget) : std::nullopt;
      auto tail = den.has_value() ? Rational::Make(*rep, *den, &budget) : std::nullopt;
      auto sum = tail.has_value() ? Rational::Add(*v, *tail, &budget) : std::nullopt;
      if (!sum.has_value()) return Fail("repeating decimal too long");
      v = std::move(sum);
    }
    Node n;
    n.kind = Kind::kNumber;
    n.value = std::move(*v);
    // A repeating decimal is exact.
    n.decimal = t.decimal && t.repeat_digits.empty();
    if (n.decimal) {
      // The decimal as written, without redundant zeros: "007.50" -> "7.5".
      size_t nz = t.int_digits.find_first_not_of('0');
      std::string text = nz == std::string::npos ? "0" : t.int_digits.substr(nz);
      size_t last = t.frac_digits.find_last_not_of('0');
      if (last != std::string::npos) text += "." + t.frac_digits.substr(0, last + 1);
      if (t.exponent != 0) text += absl::StrCat("e", t.exponent);
      n.name = std::move(text);
    }
    return Add(std::move(n));
  }

  // A subscript after '_': its text ("1", "n", "{10}").
  std::optional<std::string> SubscriptText() {
    if (Peek().tok == Tok::kNumber) {
      const Token& t = Next();
      return t.int_digits + (t.frac_digits.empty() ? "" : "." + t.frac_digits);
    }
    if (Peek().tok == Tok::kIdent || Peek().tok == Tok::kConst) return Next().text;
    if (Accept(Tok::kLBrace)) {
      std::string s;
      int depth = 1;
      while (Peek().tok != Tok::kEnd) {
        const Token& t = Peek();
        if (t.tok == Tok::kLBrace) ++depth;
        if (t.tok == Tok::kRBrace && --depth == 0) break;
        s += t.tok == Tok::kNumber ? t.int_digits : t.text;
        Next();
      }
      if (!Expect(Tok::kRBrace, "'}'")) return std::nullopt;
      return s;
    }
    Fail("bad subscript");
    return std::nullopt;
  }

  int ParsePrimary() {
    Nest nest(this);
    if (failed()) return -1;
    const Token t = Peek();
    switch (t.tok) {
      case Tok::kNumber: {
        Next();
        int n = NumberNode(t);
        if (n >= 0 && Peek().tok == Tok::kUnderscore && !t.decimal) {
          // A base numeral: 204_5.
          Next();
          std::optional<std::string> base_text = SubscriptText();
          if (!base_text.has_value()) return -1;
          int base = 0;
          for (char c : *base_text) {
            if (!IsDigit(c) || base > 100) return Fail("bad numeral base");
            base = base * 10 + (c - '0');
          }
          if (base < 2 || base > 36) return Fail("bad numeral base");
          for (char c : t.int_digits) {
            if (c - '0' >= base) return Fail("digit out of range for the base");
          }
          if (base == 10) return n;
          Node b;
          b.kind = Kind::kBaseNumeral;
          size_t nz = t.int_digits.find_first_not_of('0');
          b.name = nz == std::string::npos ? "0" : t.int_digits.substr(nz);
          b.base = base;
          return Add(std::move(b));
        }
        return n;
      }
      case Tok::kIdent: {
        Next();
        if (t.text == "e" && Peek().tok != Tok::kUnderscore) return Const("e");
        if (t.text == "i" && Peek().tok != Tok::kUnderscore) return Const("i");
        std::string name = t.text;
        if (Accept(Tok::kUnderscore)) {
          std::optional<std::string> sub = SubscriptText();
          if (!sub.has_value()) return -1;
          name += "_" + *sub;
        }
        return Make(Kind::kVariable, {}, name);
      }
      case Tok::kConst:
        Next();
        return Const(t.text == "pi" ? "pi" : "inf");
      case Tok::kLParen:
      case Tok::kLBracket:
        return ParseBracketed();
      case Tok::kLBrace: {
        Next();
        std::vector<int> items = ParseList();
        if (!Expect(Tok::kRBrace, "'}'")) return -1;
        if (items.size() == 1) return items[0];
        return Make(Kind::kSet, items);
      }
      case Tok::kLSet: {
        Next();
        std::vector<int> items;
        if (Peek().tok != Tok::kRSet) items = ParseList();
        if (!Expect(Tok::kRSet, "'\\}'")) return -1;
        return Make(Kind::kSet, items);
      }
      case Tok::kLAngle: {
        Next();
        std::vector<int> items = ParseList();
        if (!Expect(Tok::kRAngle, "'\\rangle'")) return -1;
        if (items.size() == 1) return items[0];
        return Make(Kind::kTuple, items);
      }
      case Tok::kBar: {
        Next();
        ++abs_depth_;
        int inner = ParseSum();
        --abs_depth_;
        if (!Expect(Tok::kBar, "'|'")) return -1;
        return Make(Kind::kFunction, {inner}, "abs");
      }
      case Tok::kLFloor:
      case Tok::kLCeil: {
        Next();
        int inner = ParseSum();
        if (!Expect(t.tok == Tok::kLFloor ? Tok::kRFloor : Tok::kRCeil, "closing bracket")) {
          return -1;
        }
        return Make(Kind::kFunction, {inner}, t.text);
      }
      case Tok::kFrac: {
        Next();
        int a = ParseMacroArg();
        int b = ParseMacroArg();
        return Make(Kind::kDiv, {a, b});
      }
      case Tok::kSqrt: {
        Next();
        int index = -1;
        if (Accept(Tok::kLBracket)) {
          index = ParseSum();
          if (!Expect(Tok::kRBracket, "']'")) return -1;
        }
        int arg = Peek().tok == Tok::kLParen ? ParsePrimary() : ParseMacroArg();
        if (index >= 0) return Make(Kind::kFunction, {arg, index}, "root");
        return Make(Kind::kFunction, {arg}, "sqrt");
      }
      case Tok::kBinom: {
        Next();
        int n = ParseMacroArg();
        int k = ParseMacroArg();
        return Make(Kind::kFunction, {n, k}, "binom");
      }
      case Tok::kOverline:
        Next();
        return ParseMacroArg();
      case Tok::kFunc:
        return ParseFunction();
      case Tok::kBeginEnv:
        return ParseMatrix();
      case Tok::kEmptySet:
        Next();
        return Make(Kind::kSet, {});
      case Tok::kReals: {
        Next();
        int lo = Make(Kind::kNeg, {Const("inf")});
        int hi = Const("inf");
        int iv = Make(Kind::kInterval, {lo, hi});
        if (iv >= 0) {
          expr_.at(iv).left_open = true;
          expr_.at(iv).right_open = true;
        }
        return iv;
      }
      default:
        return Fail(absl::StrCat("unexpected ", Describe(t)));
    }
  }

  // The argument of \frac, \sqrt, \binom: a braced group or one token
  // ("\frac12" = \frac{1}{2}: a bare number gives its first digit).
  int ParseMacroArg() {
    Nest nest(this);
    if (failed()) return -1;
    Token& t = PeekMutable();
    if (t.tok == Tok::kLBrace) {
      Next();
      std::vector<int> items = ParseList();
      if (!Expect(Tok::kRBrace, "'}'")) return -1;
      if (items.size() != 1) return Fail("a list inside a fraction or root");
      return items[0];
    }
    if (t.tok == Tok::kNumber && t.frac_digits.empty() && !t.decimal && t.int_digits.size() > 1) {
      Token first = t;
      first.int_digits = t.int_digits.substr(0, 1);
      t.int_digits = t.int_digits.substr(1);
      t.space_before = false;
      return NumberNode(first);
    }
    if (t.tok == Tok::kNumber || t.tok == Tok::kIdent || t.tok == Tok::kConst ||
        t.tok == Tok::kFrac || t.tok == Tok::kSqrt) {
      return ParsePrimary();
    }
    return Fail(absl::StrCat("expected an argument, got ", Describe(t)));
  }

  int ParseBracketed() {
    const Tok open = Next().tok;
    std::vector<int> items = ParseList();
    if (failed()) return -1;
    const Tok close = Peek().tok;
    if (close != Tok::kRParen && close != Tok::kRBracket) {
      return Fail(absl::StrCat("expected ')' or ']', got ", Describe(Peek())));
    }
    Next();
    const size_t n = items.size();
    if (open == Tok::kLParen && close == Tok::kRParen) {
      if (n == 1) return items[0];
      return Make(Kind::kTuple, items, "()");
    }
    if (open == Tok::kLBracket && close == Tok::kRBracket) {
      if (n == 1) return items[0];
      if (n == 2) return Interval(items[0], items[1], false, false);
      return Make(Kind::kTuple, items, "[]");
    }
    if (n != 2) return Fail("a half-open interval needs two ends");
    return Interval(items[0], items[1], open == Tok::kLParen, close == Tok::kRParen);
  }
  int Interval(int lo, int hi, bool left_open, bool right_open) {
    int iv = Make(Kind::kInterval, {lo, hi});
    if (iv < 0) return -1;
    expr_.at(iv).left_open = left_open;
    expr_.at(iv).right_open = right_open;
    return iv;
  }

  int ParseFunction() {
    std::string name = Next().text;
    int power = -1;
    int base = -1;
    for (int k = 0; k < 2; ++k) {
      if (Peek().tok == Tok::kCaret && power < 0) {
        Next();
        power = ParseExponent();
        if (power < 0) return -1;
        // \sin^{-1} x = \arcsin x.
        const Node& p = expr_.at(power);
        const bool minus_one = p.kind == Kind::kNeg && IsIntegerLiteral(p.kids[0]) &&
                               expr_.at(p.kids[0]).value == Rational(1);
        if (minus_one && (name == "sin" || name == "cos" || name == "tan" || name == "sec" ||
                          name == "csc" || name == "cot")) {
          name = "arc" + name;
          power = -1;
        }
      } else if (Peek().tok == Tok::kUnderscore && name == "log" && base < 0) {
        Next();
        base = ParseMacroArg();
        if (base < 0) return -1;
      }
    }
    std::vector<int> args;
    if (Peek().tok == Tok::kLParen) {
      Next();
      args = ParseList();
      if (!Expect(Tok::kRParen, "')'")) return -1;
    } else if (Peek().tok == Tok::kLBrace) {
      Next();
      args = ParseList();
      if (!Expect(Tok::kRBrace, "'}'")) return -1;
    } else {
      // \sin 2x, \log x: juxtaposed factors up to the next function or operator.
      int cur = ParsePower();
      while (cur >= 0 && StartsImplicitFactor(Peek()) && Peek().tok != Tok::kFunc &&
             Peek().tok != Tok::kNumber) {
        cur = Times(cur, ParsePower());
      }
      args.push_back(cur);
    }
    if (failed()) return -1;
    if (name == "lg") {
      name = "log";
      if (base < 0) base = Integer(10);
    }
    if (name == "log" && base < 0 && args.size() == 2) {
      base = args[1];
      args.pop_back();
    }
    const size_t want = (name == "gcd" || name == "lcm") ? 0 : 1;
    if (want == 1 && args.size() != 1) return Fail(absl::StrCat(name, " takes one argument"));
    if (want == 0 && args.size() < 2)
      return Fail(absl::StrCat(name, " takes two or more arguments"));
    if (base >= 0) args.push_back(base);
    int f = Make(Kind::kFunction, args, name);
    if (power >= 0) f = Make(Kind::kPow, {f, power});
    return f;
  }

  int ParseMatrix() {
    const std::string env = Next().text;
    static const char* kMatrices[] = {"pmatrix",     "bmatrix", "Bmatrix", "matrix",
                                      "smallmatrix", "array",   "vmatrix", "Vmatrix"};
    bool known = false;
    for (const char* m : kMatrices) known = known || env == m;
    if (!known) return Fail(absl::StrCat("unsupported environment '", env, "'"));
    if (env == "vmatrix" || env == "Vmatrix") return Fail("determinants are not supported");
    std::vector<std::vector<int>> rows(1);
    while (!failed()) {
      if (Peek().tok == Tok::kEndEnv) break;
      if (Peek().tok == Tok::kEnd) return Fail("unterminated matrix");
      if (Peek().tok == Tok::kAmp || Peek().tok == Tok::kRowSep) {
        return Fail("empty matrix entry");
      }
      int cell = ParseItem();
      if (cell < 0) return -1;
      rows.back().push_back(cell);
      if (Accept(Tok::kAmp)) continue;
      if (Accept(Tok::kRowSep)) {
        rows.emplace_back();
        continue;
      }
      if (Peek().tok != Tok::kEndEnv) {
        return Fail(absl::StrCat("unexpected ", Describe(Peek()), " in a matrix"));
      }
    }
    if (failed()) return -1;
    const std::string end = Next().text;
    if (end != env) return Fail(absl::StrCat("\\begin{", env, "} ended by \\end{", end, "}"));
    while (!rows.empty() && rows.back().empty()) rows.pop_back();
    if (rows.empty()) return Fail("empty matrix");
    const size_t cols = rows[0].size();
    std::vector<int> cells;
    for (const auto& r : rows) {
      if (r.size() != cols) return Fail("matrix rows of different lengths");
      cells.insert(cells.end(), r.begin(), r.end());
    }
    int m = Make(Kind::kMatrix, cells);
    if (m < 0) return -1;
    expr_.at(m).rows = static_cast<int>(rows.size());
    expr_.at(m).cols = static_cast<int>(cols);
    return m;
  }

  std::vector<Token> toks_;
  ParseOptions options_;
  size_t pos_ = 0;
  int depth_ = 0;
  int abs_depth_ = 0;
  Expr expr_;
  absl::Status error_;
};

// The content of a balanced {...} opening at s[open], or nullopt.
std::optional<absl::string_view> BraceContent(absl::string_view s, size_t open, size_t* end) {
  int depth = 0;
  for (size_t k = open; k < s.size(); ++k) {
    if (s[k] == '\\' && k + 1 < s.size()) {
      ++k;
      continue;
    }
    if (s[k] == '{') ++depth;
    if (s[k] == '}' && --depth == 0) {
      *end = k + 1;
      return s.substr(open + 1, k - open - 1);
    }
  }
  return std::nullopt;
}

// Removes math delimiters and a \boxed{} around all of `s`, and trailing
// sentence punctuation.
absl::string_view StripWrappers(absl::string_view s) {
  for (int round = 0; round < 8; ++round) {
    s = absl::StripAsciiWhitespace(s);
    const absl::string_view before = s;
    for (auto [open, close] : std::initializer_list<std::pair<const char*, const char*>>{
             {"$$", "$$"}, {"\\[", "\\]"}, {"\\(", "\\)"}, {"$", "$"}}) {
      const size_t lo = std::strlen(open), lc = std::strlen(close);
      if (s.size() >= lo + lc && absl::StartsWith(s, open) && absl::EndsWith(s, close)) {
        s = s.substr(lo, s.size() - lo - lc);
        break;
      }
    }
    for (const char* box : {"\\boxed", "\\fbox"}) {
      if (absl::StartsWith(s, box)) {
        size_t open = std::strlen(box);
        while (open < s.size() && IsSpace(s[open])) ++open;
        size_t end = 0;
        if (open < s.size() && s[open] == '{') {
          auto content = BraceContent(s, open, &end);
          if (content.has_value() && end == s.size()) s = *content;
        }
      }
    }
    // Trailing sentence punctuation (not an ellipsis).
    while (!s.empty() &&
           (s.back() == ',' || s.back() == ';' || (s.back() == '.' && !absl::EndsWith(s, "..")))) {
      s.remove_suffix(1);
      s = absl::StripTrailingAsciiWhitespace(s);
    }
    while (absl::EndsWith(s, "\\text{.}")) s.remove_suffix(8);
    if (s == before) break;
  }
  return s;
}

}  // namespace

absl::StatusOr<Expr> ParseAnswer(absl::string_view text, const ParseOptions& options) {
  if (static_cast<int64_t>(text.size()) > options.max_chars) {
    return absl::ResourceExhaustedError(
        absl::StrCat("answer of ", text.size(), " characters (limit ", options.max_chars, ")"));
  }
  absl::string_view s = StripWrappers(text);
  if (s.empty()) return absl::InvalidArgumentError("empty answer");
  std::vector<Token> tokens;
  Lexer lexer(s, /*text_mode=*/false, 0, &tokens);
  absl::Status lexed = lexer.Run();
  if (!lexed.ok()) return lexed;
  if (tokens.empty()) return absl::InvalidArgumentError("empty answer");
  Parser parser(std::move(tokens), options);
  return parser.Run();
}

std::optional<char> ParseChoice(absl::string_view text, bool lenient) {
  absl::string_view s = StripWrappers(text);
  // Unwrap text commands and bold markers around the letter.
  std::string flat;
  for (size_t i = 0; i < s.size();) {
    bool unwrapped = false;
    for (const char* cmd : {"\\text", "\\textbf", "\\mathrm", "\\mathbf", "\\textit", "\\mbox"}) {
      const size_t n = std::strlen(cmd);
      if (s.substr(i, n) == cmd && i + n < s.size() && (s[i + n] == '{' || s[i + n] == ' ')) {
        size_t open = i + n;
        while (open < s.size() && s[open] == ' ') ++open;
        size_t end = 0;
        auto content =
            open < s.size() && s[open] == '{' ? BraceContent(s, open, &end) : std::nullopt;
        if (content.has_value()) {
          flat += std::string(*content);
          i = end;
          unwrapped = true;
          break;
        }
      }
    }
    if (unwrapped) continue;
    if (s[i] != '*' && s[i] != '$') flat.push_back(s[i]);
    ++i;
  }
  absl::string_view f = absl::StripAsciiWhitespace(flat);
  if (lenient) {
    for (const char* prefix : {"option", "Option", "choice", "Choice", "answer", "Answer"}) {
      if (absl::StartsWith(f, prefix)) {
        f.remove_prefix(std::strlen(prefix));
        f = absl::StripLeadingAsciiWhitespace(f);
        if (absl::StartsWith(f, ":")) f = absl::StripLeadingAsciiWhitespace(f.substr(1));
        break;
      }
    }
  }
  while (!f.empty() && (f.back() == '.' || f.back() == ':')) f.remove_suffix(1);
  f = absl::StripAsciiWhitespace(f);
  auto letter_ok = [&](char c) {
    return (c >= 'A' && c <= 'Z') || (lenient && c >= 'a' && c <= 'z');
  };
  auto upper = [](char c) {
    return static_cast<char>(absl::ascii_toupper(static_cast<unsigned char>(c)));
  };
  if (f.size() == 1 && letter_ok(f[0])) return upper(f[0]);
  if (f.size() == 3 && f[0] == '(' && f[2] == ')' && letter_ok(f[1])) return upper(f[1]);
  if (lenient) {
    // "(C) 12", "C) 12", "C. 12", "C: 12".
    if (f.size() >= 3 && f[0] == '(' && f[2] == ')' && letter_ok(f[1])) return upper(f[1]);
    if (f.size() >= 2 && letter_ok(f[0]) && (f[1] == ')' || f[1] == '.' || f[1] == ':')) {
      return upper(f[0]);
    }
    if (f.size() >= 2 && letter_ok(f[0]) && f[1] == ' ' && !IsLetter(f.size() > 2 ? f[2] : ' ')) {
      return upper(f[0]);
    }
  }
  return std::nullopt;
}

}  // namespace rlvr::math
