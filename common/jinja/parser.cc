#include "common/jinja/parser.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/base/utf8.h"

namespace rlvr::jinja {
namespace {

enum class Tok {
  kData,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof
};

struct Token {
  Tok type;
  std::string text;  // Data, name, operator, or a string literal's value.
  SourcePos pos;
  int64_t int_value = 0;
  double float_value = 0;
};

absl::Status ErrorAt(SourcePos pos, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("line ", pos.line, ", column ", pos.column, ": ", message));
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// The escapes of Python's "unicode-escape" that stand for one character
// (\n -> newline); the others (\x, \u, \U, octal, \N, a line
// continuation) are decoded by Unescape itself.
struct SimpleEscape {
  char escape;   // The character after the backslash.
  char decoded;  // What the two characters stand for.
};
constexpr SimpleEscape kSimpleEscapes[] = {
    {'\\', '\\'}, {'\'', '\''}, {'"', '"'},  {'a', '\a'}, {'b', '\b'},
    {'f', '\f'},  {'n', '\n'},  {'r', '\r'}, {'t', '\t'}, {'v', '\v'},
};

// What `\escape` stands for, or null when it is no one-character escape.
const char* DecodeSimpleEscape(char escape) {
  for (const SimpleEscape& e : kSimpleEscapes) {
    if (e.escape == escape) return &e.decoded;
  }
  return nullptr;
}

// Python's "unicode-escape" decoding of a string literal's body, as Jinja2
// reads literals: known escapes are decoded, unknown ones kept as written.
absl::StatusOr<std::string> Unescape(absl::string_view body, SourcePos pos) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out.push_back(body[i]);
      continue;
    }
    const char c = body[++i];
    if (c == '\n') continue;  // A backslash-newline continues the line.
    if (const char* decoded = DecodeSimpleEscape(c)) {
      out.push_back(*decoded);
    } else if (c == 'x' || c == 'u' || c == 'U') {
      const size_t len = c == 'x' ? 2 : c == 'u' ? 4 : 8;
      if (i + len >= body.size()) {
        return ErrorAt(pos, absl::StrCat("truncated \\", std::string(1, c), " escape"));
      }
      uint32_t cp = 0;
      for (size_t k = 1; k <= len; ++k) {
        const char h = body[i + k];
        if (!absl::ascii_isxdigit(h)) {
          return ErrorAt(pos, absl::StrCat("truncated \\", std::string(1, c), " escape"));
        }
        cp = cp * 16 + static_cast<uint32_t>(
                           absl::ascii_isdigit(h) ? h - '0' : absl::ascii_tolower(h) - 'a' + 10);
      }
      if (cp > 0x10ffff) return ErrorAt(pos, "illegal Unicode character in a string literal");
      utf8::Append(static_cast<char32_t>(cp), &out);
      i += len;
    } else if (c == 'N') {
      return ErrorAt(pos, "\\N{...} escapes are not supported");
    } else if (c >= '0' && c <= '7') {
      uint32_t cp = 0;
      size_t k = 0;
      while (k < 3 && i + k < body.size() && body[i + k] >= '0' && body[i + k] <= '7') {
        cp = cp * 8 + static_cast<uint32_t>(body[i + k] - '0');
        ++k;
      }
      utf8::Append(static_cast<char32_t>(cp), &out);
      i += k - 1;
    } else {
      out.push_back('\\');
      out.push_back(c);
    }
  }
  return out;
}

// Strips Python whitespace (str.rstrip()) from the end of `text`.
std::string RightStrip(absl::string_view text) {
  return PythonStrip(text, nullptr, /*left=*/false, /*right=*/true);
}

// Length of the run of whitespace (Python's \s) at s[pos...].
size_t WhitespaceRun(absl::string_view s, size_t pos) {
  const size_t begin = pos;
  while (pos < s.size()) {
    size_t next = pos;
    if (!IsPythonSpace(DecodeUtf8(s, &next))) break;
    pos = next;
  }
  return pos - begin;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  absl::StatusOr<std::vector<Token>> Run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t start = FindTagStart(pos_);
      if (start == std::string::npos) {
        Emit(Tok::kData, src_.substr(pos_), PosAt(pos_));
        pos_ = src_.size();
        break;
      }
      const char kind = src_[start + 1];  // '{', '%' or '#'.
      char sign = 0;
      if (start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+')) {
        sign = src_[start + 2];
      }
      std::string text = src_.substr(pos_, start - pos_);
      if (sign == '-') {
        text = RightStrip(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: spaces and tabs between a line start and the tag go.
        const size_t line_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (line_pos > 0 || line_starting) {
          const size_t ws = WhitespaceRun(text, line_pos);
          if (ws > 0 && line_pos + ws == text.size()) text.resize(line_pos);
        }
      }
      if (!text.empty()) Emit(Tok::kData, text, PosAt(pos_));
      const size_t after = start + 2 + (sign != 0 ? 1 : 0);
      if (kind == '#') {
        RETURN_IF_ERROR(LexComment(start, after, &line_starting));
      } else if (kind == '%' && IsRawBegin(after)) {
        RETURN_IF_ERROR(LexRaw(start, &line_starting));
      } else {
        RETURN_IF_ERROR(LexTag(kind == '{', start, after, &line_starting));
      }
    }
    Emit(Tok::kEof, "", PosAt(src_.size()));
    return std::move(tokens_);
  }

 private:
  size_t FindTagStart(size_t from) const {
    size_t p = from;
    while ((p = src_.find('{', p)) != std::string::npos) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) {
        return p;
      }
      ++p;
    }
    return std::string::npos;
  }

  SourcePos PosAt(size_t offset) {
    // Incremental: offsets are requested in increasing order almost always.
    if (offset < line_pos_offset_) {
      line_pos_offset_ = 0;
      line_pos_ = {1, 1};
    }
    for (size_t i = line_pos_offset_; i < offset && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line_pos_.line;
        line_pos_.column = 1;
      } else if ((static_cast<unsigned char>(src_[i]) & 0xc0) != 0x80) {
        ++line_pos_.column;
      }
    }
    line_pos_offset_ = offset;
    return line_pos_;
  }

  void Emit(Tok type, std::string text, SourcePos pos) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.pos = pos;
    tokens_.push_back(std::move(t));
  }

  // After a tag's closing delimiter at pos_: "-" strips all whitespace that
  // follows, "+" nothing, otherwise (blocks and comments) one newline.
  void AfterEnd(char sign, bool trim_newline, bool* line_starting) {
    if (sign == '-') {
      pos_ += WhitespaceRun(src_, pos_);
    } else if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    *line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  absl::Status LexComment(size_t start, size_t after, bool* line_starting) {
    const size_t end = src_.find("#}", after);
    if (end == std::string::npos) return ErrorAt(PosAt(start), "missing end of comment tag");
    char sign = 0;
    if (end > after && (src_[end - 1] == '-' || src_[end - 1] == '+')) sign = src_[end - 1];
    pos_ = end + 2;
    AfterEnd(sign, /*trim_newline=*/true, line_starting);
    return absl::OkStatus();
  }

  bool IsRawBegin(size_t after) const {
    size_t p = after;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    if (p < src_.size() && IsNameChar(src_[p])) return false;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    return src_.compare(p, 2, "%}") == 0 || src_.compare(p, 3, "-%}") == 0;
  }

  // {% raw %}...{% endraw %}: the text between is data, as written.
  absl::Status LexRaw(size_t start, bool* line_starting) {
    size_t p = src_.find("%}", start) + 2;
    if (src_[p - 3] == '-') p += WhitespaceRun(src_, p);
    size_t search = p;
    while (true) {
      const size_t tag = src_.find("{%", search);
      if (tag == std::string::npos) return ErrorAt(PosAt(start), "missing end of raw directive");
      size_t q = tag + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      while (q < src_.size() && IsSpace(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) {
        search = tag + 2;
        continue;
      }
      q += 6;
      while (q < src_.size() && IsSpace(src_[q])) ++q;
      char end_sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) end_sign = src_[q++];
      if (src_.compare(q, 2, "%}") != 0) {
        search = tag + 2;
        continue;
      }
      std::string text = src_.substr(p, tag - p);
      if (sign == '-') {
        text = RightStrip(text);
      } else if (sign != '+') {
        const size_t line_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (line_pos > 0) {
          const size_t ws = WhitespaceRun(text, line_pos);
          if (ws > 0 && line_pos + ws == text.size()) text.resize(line_pos);
        }
      }
      if (!text.empty()) Emit(Tok::kData, text, PosAt(p));
      pos_ = q + 2;
      AfterEnd(end_sign, /*trim_newline=*/true, line_starting);
      return absl::OkStatus();
    }
  }

  absl::Status LexTag(bool variable, size_t start, size_t after, bool* line_starting) {
    Emit(variable ? Tok::kVarBegin : Tok::kBlockBegin, "", PosAt(start));
    pos_ = after;
    int balance = 0;
    const char close = variable ? '}' : '%';
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) {
        return ErrorAt(PosAt(start), variable ? "unexpected end of template, expected '}}'"
                                              : "unexpected end of template, expected '%}'");
      }
      if (balance == 0) {
        char sign = 0;
        size_t p = pos_;
        if (src_[p] == '-' || src_[p] == '+') sign = src_[p++];
        if (!(variable && sign == '+') && p + 1 < src_.size() && src_[p] == close &&
            src_[p + 1] == '}') {
          Emit(variable ? Tok::kVarEnd : Tok::kBlockEnd, "", PosAt(pos_));
          pos_ = p + 2;
          AfterEnd(sign, /*trim_newline=*/!variable, line_starting);
          return absl::OkStatus();
        }
      }
      const SourcePos pos = PosAt(pos_);
      const char c = src_[pos_];
      if (IsNameStart(c)) {
        size_t e = pos_;
        while (e < src_.size() && IsNameChar(src_[e])) ++e;
        Emit(Tok::kName, src_.substr(pos_, e - pos_), pos);
        pos_ = e;
      } else if (absl::ascii_isdigit(c)) {
        RETURN_IF_ERROR(LexNumber(pos));
      } else if (c == '\'' || c == '"') {
        size_t e = pos_ + 1;
        while (e < src_.size() && src_[e] != c) e += src_[e] == '\\' ? 2 : 1;
        if (e >= src_.size()) return ErrorAt(pos, "unterminated string");
        ASSIGN_OR_RETURN(std::string value,
                         Unescape(absl::string_view(src_).substr(pos_ + 1, e - pos_ - 1), pos));
        Emit(Tok::kString, std::move(value), pos);
        pos_ = e + 1;
      } else {
        static constexpr const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/",
                                               "*",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                               "]",  "{",  "}",  ",",  ".",  ":",  "|"};
        const char* op = nullptr;
        for (const char* candidate : kOps) {
          if (src_.compare(pos_, std::char_traits<char>::length(candidate), candidate) == 0) {
            op = candidate;
            break;
          }
        }
        if (op == nullptr)
          return ErrorAt(pos, absl::StrCat("unexpected char '", std::string(1, c), "'"));
        if (op[0] == '(' || op[0] == '[' || op[0] == '{') ++balance;
        if (op[0] == ')' || op[0] == ']' || op[0] == '}') {
          if (balance == 0) return ErrorAt(pos, absl::StrCat("unexpected '", op, "'"));
          --balance;
        }
        Emit(Tok::kOp, op, pos);
        pos_ += std::char_traits<char>::length(op);
      }
    }
  }

  absl::Status LexNumber(SourcePos pos) {
    auto digits = [&](size_t p) {
      // \d+(_\d+)*
      if (p >= src_.size() || !absl::ascii_isdigit(src_[p])) return p;
      while (p < src_.size()) {
        if (absl::ascii_isdigit(src_[p])) {
          ++p;
        } else if (src_[p] == '_' && p + 1 < src_.size() && absl::ascii_isdigit(src_[p + 1])) {
          ++p;
        } else {
          break;
        }
      }
      return p;
    };
    size_t e = digits(pos_);
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && absl::ascii_isdigit(src_[e + 1])) {
      e = digits(e + 1);
      is_float = true;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t p = e + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      const size_t q = digits(p);
      if (q > p) {
        e = q;
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    Token t;
    t.pos = pos;
    t.text = text;
    if (is_float) {
      t.type = Tok::kFloat;
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      t.type = Tok::kInt;
      if (!absl::SimpleAtoi(text, &t.int_value)) return ErrorAt(pos, "integer literal too large");
    }
    tokens_.push_back(std::move(t));
    pos_ = e;
    return absl::OkStatus();
  }

  std::string src_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  size_t line_pos_offset_ = 0;
  SourcePos line_pos_;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<Body> ParseAll() {
    Body body;
    std::string end_tag;
    RETURN_IF_ERROR(ParseBody({}, &body, &end_tag));
    return body;
  }

 private:
  const Token& Cur() const { return tokens_[i_]; }
  const Token& Peek(size_t k = 1) const { return tokens_[std::min(i_ + k, tokens_.size() - 1)]; }
  void Next() {
    if (i_ + 1 < tokens_.size()) ++i_;
  }
  bool IsOp(absl::string_view op) const { return Cur().type == Tok::kOp && Cur().text == op; }
  bool IsName(absl::string_view name) const {
    return Cur().type == Tok::kName && Cur().text == name;
  }
  absl::Status Unexpected(absl::string_view expected) const {
    std::string got;
    switch (Cur().type) {
      case Tok::kEof:
        got = "end of template";
        break;
      case Tok::kBlockEnd:
        got = "end of statement block";
        break;
      case Tok::kVarEnd:
        got = "end of print statement";
        break;
      case Tok::kString:
        got = "string";
        break;
      case Tok::kInt:
      case Tok::kFloat:
        got = "number";
        break;
      default:
        got = absl::StrCat("'", Cur().text, "'");
    }
    return ErrorAt(Cur().pos, absl::StrCat("expected ", expected, ", got ", got));
  }
  absl::Status ExpectOp(absl::string_view op) {
    if (!IsOp(op)) return Unexpected(absl::StrCat("'", op, "'"));
    Next();
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ExpectName() {
    if (Cur().type != Tok::kName) return Unexpected("a name");
    std::string name = Cur().text;
    Next();
    return name;
  }
  absl::Status ExpectBlockEnd() {
    if (Cur().type != Tok::kBlockEnd) return Unexpected("end of statement block");
    Next();
    return absl::OkStatus();
  }

  // Nesting guard for recursive descent.
  struct DepthGuard {
    explicit DepthGuard(int* depth) : depth(depth) { ++*depth; }
    ~DepthGuard() { --*depth; }
    int* depth;
  };
  absl::Status CheckDepth() const {
    if (depth_ > kMaxNesting) return ErrorAt(Cur().pos, "template nested too deeply");
    return absl::OkStatus();
  }

  // Parses statements until a block tag named in `ends` (left unconsumed
  // after its name: *end_tag names it) or the end of the template (only when
  // `ends` is empty).
  absl::Status ParseBody(const std::vector<std::string>& ends, Body* body, std::string* end_tag) {
    DepthGuard guard(&depth_);
    RETURN_IF_ERROR(CheckDepth());
    while (true) {
      const Token& t = Cur();
      if (t.type == Tok::kEof) {
        if (!ends.empty()) {
          return ErrorAt(t.pos, absl::StrCat("unexpected end of template; expected '",
                                             absl::StrJoin(ends, "' or '"), "'"));
        }
        return absl::OkStatus();
      }
      if (t.type == Tok::kData) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kText;
        node->pos = t.pos;
        node->text = t.text;
        body->push_back(std::move(node));
        Next();
        continue;
      }
      if (t.type == Tok::kVarBegin) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kOutput;
        node->pos = t.pos;
        Next();
        ASSIGN_OR_RETURN(node->expr, ParseTupleOrExpr());
        if (Cur().type != Tok::kVarEnd) return Unexpected("end of print statement");
        Next();
        body->push_back(std::move(node));
        continue;
      }
      if (t.type != Tok::kBlockBegin) return Unexpected("template data or a tag");
      Next();
      if (Cur().type != Tok::kName) return Unexpected("a tag name");
      const std::string tag = Cur().text;
      for (const std::string& end : ends) {
        if (tag == end) {
          *end_tag = tag;
          Next();
          return absl::OkStatus();
        }
      }
      ASSIGN_OR_RETURN(NodePtr node, ParseStatement(ends));
      body->push_back(std::move(node));
    }
  }

  absl::StatusOr<NodePtr> ParseStatement(const std::vector<std::string>& ends) {
    const Token tag = Cur();
    auto node = std::make_unique<Node>();
    node->pos = tag.pos;
    Next();
    const std::string& name = tag.text;
    if (name == "if") {
      node->kind = Node::Kind::kIf;
      while (true) {
        ASSIGN_OR_RETURN(ExprPtr cond, ParseTupleOrExpr(/*with_condexpr=*/false));
        node->conds.push_back(std::move(cond));
        RETURN_IF_ERROR(ExpectBlockEnd());
        Body body;
        std::string end;
        RETURN_IF_ERROR(ParseBody({"elif", "else", "endif"}, &body, &end));
        node->bodies.push_back(std::move(body));
        if (end == "elif") continue;
        if (end == "else") {
          RETURN_IF_ERROR(ExpectBlockEnd());
          Body else_body;
          RETURN_IF_ERROR(ParseBody({"endif"}, &else_body, &end));
          node->bodies.push_back(std::move(else_body));
        }
        break;
      }
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "for") {
      node->kind = Node::Kind::kFor;
      RETURN_IF_ERROR(ParseTargets(&node->targets));
      if (!IsName("in")) return Unexpected("'in'");
      Next();
      ASSIGN_OR_RETURN(node->expr, ParseTupleOrExpr(/*with_condexpr=*/false));
      if (IsName("if")) {
        Next();
        ASSIGN_OR_RETURN(node->filter, ParseExpression());
      }
      if (IsName("recursive")) return ErrorAt(Cur().pos, "recursive loops are not supported");
      RETURN_IF_ERROR(ExpectBlockEnd());
      Body body;
      std::string end;
      ++loop_depth_;
      absl::Status loop_body = ParseBody({"endfor", "else"}, &body, &end);
      --loop_depth_;
      RETURN_IF_ERROR(loop_body);
      node->bodies.push_back(std::move(body));
      if (end == "else") {
        RETURN_IF_ERROR(ExpectBlockEnd());
        Body else_body;
        RETURN_IF_ERROR(ParseBody({"endfor"}, &else_body, &end));
        node->bodies.push_back(std::move(else_body));
      }
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "set") {
      // set a = ..., set a, b = ..., set ns.attr = ..., or a block set.
      if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == ".") {
        node->targets.push_back(Cur().text);
        Next();
        Next();
        ASSIGN_OR_RETURN(node->attr, ExpectName());
      } else {
        RETURN_IF_ERROR(ParseTargets(&node->targets));
      }
      if (IsOp("=")) {
        Next();
        node->kind = Node::Kind::kSet;
        ASSIGN_OR_RETURN(node->expr, ParseTupleOrExpr());
        RETURN_IF_ERROR(ExpectBlockEnd());
        return node;
      }
      if (node->targets.size() != 1 || !node->attr.empty()) return Unexpected("'='");
      node->kind = Node::Kind::kSetBlock;
      if (IsOp("|")) return ErrorAt(Cur().pos, "filters on a block set are not supported");
      RETURN_IF_ERROR(ExpectBlockEnd());
      Body body;
      std::string end;
      RETURN_IF_ERROR(ParseBody({"endset"}, &body, &end));
      node->bodies.push_back(std::move(body));
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "macro") {
      node->kind = Node::Kind::kMacro;
      ASSIGN_OR_RETURN(node->name, ExpectName());
      RETURN_IF_ERROR(ExpectOp("("));
      while (!IsOp(")")) {
        if (!node->params.empty()) RETURN_IF_ERROR(ExpectOp(","));
        if (IsOp(")")) break;
        ASSIGN_OR_RETURN(std::string param, ExpectName());
        node->params.push_back(param);
        ExprPtr def;
        if (IsOp("=")) {
          Next();
          ASSIGN_OR_RETURN(def, ParseExpression());
        } else if (!node->defaults.empty() && node->defaults.back() != nullptr) {
          return ErrorAt(Cur().pos, "non-default argument follows default argument");
        }
        node->defaults.push_back(std::move(def));
      }
      Next();
      RETURN_IF_ERROR(ExpectBlockEnd());
      Body body;
      std::string end;
      const int outer_loops = loop_depth_;
      loop_depth_ = 0;  // A macro's body is not inside the caller's loop.
      absl::Status macro_body = ParseBody({"endmacro"}, &body, &end);
      loop_depth_ = outer_loops;
      RETURN_IF_ERROR(macro_body);
      node->bodies.push_back(std::move(body));
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "break" || name == "continue") {
      node->kind = name == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      if (loop_depth_ == 0) {
        return ErrorAt(tag.pos, absl::StrCat("'", name, "' outside of a loop"));
      }
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "filter") {
      node->kind = Node::Kind::kFilterBlock;
      ExprPtr operand;
      ASSIGN_OR_RETURN(node->expr, ParseFilterChain(std::move(operand), /*first=*/true));
      RETURN_IF_ERROR(ExpectBlockEnd());
      Body body;
      std::string end;
      RETURN_IF_ERROR(ParseBody({"endfilter"}, &body, &end));
      node->bodies.push_back(std::move(body));
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "generation") {
      // transformers' AssistantTracker tag: marks assistant text, renders as is.
      node->kind = Node::Kind::kScope;
      RETURN_IF_ERROR(ExpectBlockEnd());
      Body body;
      std::string end;
      RETURN_IF_ERROR(ParseBody({"endgeneration"}, &body, &end));
      node->bodies.push_back(std::move(body));
      RETURN_IF_ERROR(ExpectBlockEnd());
      return node;
    }
    if (name == "extends" || name == "include" || name == "import" || name == "from" ||
        name == "block" || name == "call" || name == "with" || name == "autoescape" ||
        name == "do") {
      return ErrorAt(tag.pos, absl::StrCat("the '", name, "' tag is not supported"));
    }
    (void)ends;
    return ErrorAt(tag.pos, absl::StrCat("unknown tag '", name, "'"));
  }

  // for/set targets: a name, or names separated by commas (optionally in
  // parentheses).
  absl::Status ParseTargets(std::vector<std::string>* targets) {
    const bool paren = IsOp("(");
    if (paren) Next();
    while (true) {
      ASSIGN_OR_RETURN(std::string name, ExpectName());
      if (name == "true" || name == "false" || name == "none" || name == "True" ||
          name == "False" || name == "None") {
        return ErrorAt(Cur().pos, absl::StrCat("cannot assign to '", name, "'"));
      }
      targets->push_back(name);
      if (!IsOp(",")) break;
      Next();
      if (paren && IsOp(")")) break;
    }
    if (paren) RETURN_IF_ERROR(ExpectOp(")"));
    return absl::OkStatus();
  }

  // Sets e's height from its operands. The renderer and the destructor
  // recurse on expressions, so their height is bounded (left-associative
  // chains such as a+b+c grow in height without nesting the parser).
  absl::StatusOr<ExprPtr> Seal(ExprPtr e) {
    int h = 0;
    for (const ExprPtr& c : e->children) {
      if (c != nullptr) h = std::max(h, c->height);
    }
    for (const auto& [key, value] : e->kwargs) h = std::max(h, value->height);
    e->height = h + 1;
    if (e->height > kMaxNesting * 2) return ErrorAt(e->pos, "expression nested too deeply");
    return e;
  }

  ExprPtr MakeExpr(Expr::Kind kind, SourcePos pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
  }

  // An expression, or a tuple of them written without parentheses
  // ("{{ a, b }}", "for x in a, b").
  absl::StatusOr<ExprPtr> ParseTupleOrExpr(bool with_condexpr = true) {
    const SourcePos pos = Cur().pos;
    ASSIGN_OR_RETURN(ExprPtr first, with_condexpr ? ParseExpression() : ParseOr());
    if (!IsOp(",")) return first;
    ExprPtr tuple = MakeExpr(Expr::Kind::kTuple, pos);
    tuple->children.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      if (Cur().type == Tok::kBlockEnd || Cur().type == Tok::kVarEnd || IsName("if") || IsOp(")")) {
        break;
      }
      ASSIGN_OR_RETURN(ExprPtr item, with_condexpr ? ParseExpression() : ParseOr());
      tuple->children.push_back(std::move(item));
    }
    return Seal(std::move(tuple));
  }

  absl::StatusOr<ExprPtr> ParseExpression() {
    DepthGuard guard(&depth_);
    RETURN_IF_ERROR(CheckDepth());
    ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
    while (IsName("if")) {
      const SourcePos pos = Cur().pos;
      Next();
      ExprPtr cond_expr = MakeExpr(Expr::Kind::kCondExpr, pos);
      ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
      ExprPtr otherwise;
      if (IsName("else")) {
        Next();
        ASSIGN_OR_RETURN(otherwise, ParseExpression());
      }
      cond_expr->children.push_back(std::move(cond));
      cond_expr->children.push_back(std::move(expr));
      cond_expr->children.push_back(std::move(otherwise));
      ASSIGN_OR_RETURN(expr, Seal(std::move(cond_expr)));
    }
    return expr;
  }

  absl::StatusOr<ExprPtr> ParseOr() {
    ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (IsName("or")) {
      ExprPtr e = MakeExpr(Expr::Kind::kOr, Cur().pos);
      Next();
      ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      e->children.push_back(std::move(left));
      e->children.push_back(std::move(right));
      ASSIGN_OR_RETURN(left, Seal(std::move(e)));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseAnd() {
    ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (IsName("and")) {
      ExprPtr e = MakeExpr(Expr::Kind::kAnd, Cur().pos);
      Next();
      ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      e->children.push_back(std::move(left));
      e->children.push_back(std::move(right));
      ASSIGN_OR_RETURN(left, Seal(std::move(e)));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(&depth_);
      RETURN_IF_ERROR(CheckDepth());
      ExprPtr e = MakeExpr(Expr::Kind::kNot, Cur().pos);
      Next();
      ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
      e->children.push_back(std::move(operand));
      return Seal(std::move(e));
    }
    return ParseCompare();
  }

  absl::StatusOr<ExprPtr> ParseCompare() {
    const SourcePos pos = Cur().pos;
    ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (Cur().type == Tok::kOp &&
          (Cur().text == "==" || Cur().text == "!=" || Cur().text == "<" || Cur().text == "<=" ||
           Cur().text == ">" || Cur().text == ">=")) {
        op = Cur().text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && Peek().type == Tok::kName && Peek().text == "in") {
        op = "notin";
        Next();
        Next();
      } else {
        break;
      }
      if (cmp == nullptr) {
        cmp = MakeExpr(Expr::Kind::kCompare, pos);
        cmp->children.push_back(std::move(first));
      }
      ASSIGN_OR_RETURN(ExprPtr right, ParseMath1());
      cmp->ops.push_back(op);
      cmp->children.push_back(std::move(right));
    }
    if (cmp == nullptr) return first;
    return Seal(std::move(cmp));
  }

  absl::StatusOr<ExprPtr> Binary(ExprPtr left, ExprPtr right, const std::string& op,
                                 SourcePos pos) {
    ExprPtr e = MakeExpr(Expr::Kind::kBinary, pos);
    e->name = op;
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return Seal(std::move(e));
  }

  absl::StatusOr<ExprPtr> ParseMath1() {
    ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      const std::string op = Cur().text;
      const SourcePos pos = Cur().pos;
      Next();
      ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
      ASSIGN_OR_RETURN(left, Binary(std::move(left), std::move(right), op, pos));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseConcat() {
    ASSIGN_OR_RETURN(ExprPtr left, ParseMath2());
    while (IsOp("~")) {
      const SourcePos pos = Cur().pos;
      Next();
      ASSIGN_OR_RETURN(ExprPtr right, ParseMath2());
      ASSIGN_OR_RETURN(left, Binary(std::move(left), std::move(right), "~", pos));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseMath2() {
    ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const std::string op = Cur().text;
      const SourcePos pos = Cur().pos;
      Next();
      ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
      ASSIGN_OR_RETURN(left, Binary(std::move(left), std::move(right), op, pos));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParsePow() {
    ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
    while (IsOp("**")) {
      const SourcePos pos = Cur().pos;
      Next();
      ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
      ASSIGN_OR_RETURN(left, Binary(std::move(left), std::move(right), "**", pos));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter) {
    DepthGuard guard(&depth_);
    RETURN_IF_ERROR(CheckDepth());
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      node = MakeExpr(IsOp("-") ? Expr::Kind::kNeg : Expr::Kind::kPos, Cur().pos);
      Next();
      ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      node->children.push_back(std::move(operand));
      ASSIGN_OR_RETURN(node, Seal(std::move(node)));
    } else {
      ASSIGN_OR_RETURN(node, ParsePrimary());
    }
    ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    if (with_filter) {
      ASSIGN_OR_RETURN(node, ParseFilterChain(std::move(node), /*first=*/false));
    }
    return node;
  }

  absl::StatusOr<ExprPtr> ParsePrimary() {
    const Token& t = Cur();
    switch (t.type) {
      case Tok::kName: {
        ExprPtr e;
        if (t.text == "true" || t.text == "True") {
          e = MakeExpr(Expr::Kind::kLiteral, t.pos);
          e->literal = Value::Bool(true);
        } else if (t.text == "false" || t.text == "False") {
          e = MakeExpr(Expr::Kind::kLiteral, t.pos);
          e->literal = Value::Bool(false);
        } else if (t.text == "none" || t.text == "None") {
          e = MakeExpr(Expr::Kind::kLiteral, t.pos);
          e->literal = Value::None();
        } else {
          e = MakeExpr(Expr::Kind::kName, t.pos);
          e->name = t.text;
        }
        Next();
        return e;
      }
      case Tok::kString: {
        ExprPtr e = MakeExpr(Expr::Kind::kLiteral, t.pos);
        std::string s;
        // Adjacent literals concatenate, as in Python.
        while (Cur().type == Tok::kString) {
          s += Cur().text;
          Next();
        }
        e->literal = Value::String(std::move(s));
        return e;
      }
      case Tok::kInt: {
        ExprPtr e = MakeExpr(Expr::Kind::kLiteral, t.pos);
        e->literal = Value::Int(t.int_value);
        Next();
        return e;
      }
      case Tok::kFloat: {
        ExprPtr e = MakeExpr(Expr::Kind::kLiteral, t.pos);
        e->literal = Value::Float(t.float_value);
        Next();
        return e;
      }
      case Tok::kOp:
        if (t.text == "(") {
          const SourcePos pos = t.pos;
          Next();
          if (IsOp(")")) {
            Next();
            return MakeExpr(Expr::Kind::kTuple, pos);
          }
          ASSIGN_OR_RETURN(ExprPtr inner, ParseTupleOrExpr());
          RETURN_IF_ERROR(ExpectOp(")"));
          return inner;
        }
        if (t.text == "[") {
          ExprPtr e = MakeExpr(Expr::Kind::kList, t.pos);
          Next();
          while (!IsOp("]")) {
            if (!e->children.empty()) {
              RETURN_IF_ERROR(ExpectOp(","));
              if (IsOp("]")) break;
            }
            ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
            e->children.push_back(std::move(item));
          }
          Next();
          return Seal(std::move(e));
        }
        if (t.text == "{") {
          ExprPtr e = MakeExpr(Expr::Kind::kDict, t.pos);
          Next();
          while (!IsOp("}")) {
            if (!e->children.empty()) {
              RETURN_IF_ERROR(ExpectOp(","));
              if (IsOp("}")) break;
            }
            ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
            RETURN_IF_ERROR(ExpectOp(":"));
            ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
            e->children.push_back(std::move(key));
            e->children.push_back(std::move(value));
          }
          Next();
          return Seal(std::move(e));
        }
        break;
      default:
        break;
    }
    return Unexpected("an expression");
  }

  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOp(".")) {
        const SourcePos pos = Cur().pos;
        Next();
        if (Cur().type == Tok::kName) {
          ExprPtr e = MakeExpr(Expr::Kind::kGetAttr, pos);
          e->name = Cur().text;
          e->children.push_back(std::move(node));
          ASSIGN_OR_RETURN(node, Seal(std::move(e)));
          Next();
        } else if (Cur().type == Tok::kInt) {
          // foo.0 is foo[0].
          ExprPtr e = MakeExpr(Expr::Kind::kGetItem, pos);
          ExprPtr index = MakeExpr(Expr::Kind::kLiteral, Cur().pos);
          index->literal = Value::Int(Cur().int_value);
          e->children.push_back(std::move(node));
          e->children.push_back(std::move(index));
          ASSIGN_OR_RETURN(node, Seal(std::move(e)));
          Next();
        } else {
          return Unexpected("a name after '.'");
        }
      } else if (IsOp("[")) {
        ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
      } else if (IsOp("(")) {
        ASSIGN_OR_RETURN(node, ParseCall(std::move(node), Expr::Kind::kCall, ""));
      } else {
        return node;
      }
    }
  }

  absl::StatusOr<ExprPtr> ParseSubscript(ExprPtr node) {
    const SourcePos pos = Cur().pos;
    Next();  // '['
    ExprPtr parts[3];
    int part = 0;
    bool slice = false;
    while (!IsOp("]")) {
      if (IsOp(":")) {
        slice = true;
        if (++part > 2) return Unexpected("']'");
        Next();
        continue;
      }
      if (parts[part] != nullptr) return Unexpected("']'");
      ASSIGN_OR_RETURN(parts[part], ParseExpression());
    }
    Next();
    if (!slice) {
      if (parts[0] == nullptr) return ErrorAt(pos, "expected an index");
      ExprPtr e = MakeExpr(Expr::Kind::kGetItem, pos);
      e->children.push_back(std::move(node));
      e->children.push_back(std::move(parts[0]));
      return Seal(std::move(e));
    }
    ExprPtr e = MakeExpr(Expr::Kind::kSlice, pos);
    e->children.push_back(std::move(node));
    for (ExprPtr& p : parts) e->children.push_back(std::move(p));
    return Seal(std::move(e));
  }

  // Arguments "(a, b, key=c)" after a callee, filter or test name.
  absl::StatusOr<ExprPtr> ParseCall(ExprPtr callee, Expr::Kind kind, const std::string& name) {
    ExprPtr e = MakeExpr(kind, Cur().pos);
    if (callee != nullptr) e->pos = callee->pos;
    e->name = name;
    e->children.push_back(std::move(callee));
    RETURN_IF_ERROR(ExpectOp("("));
    bool first = true;
    while (!IsOp(")")) {
      if (!first) {
        RETURN_IF_ERROR(ExpectOp(","));
        if (IsOp(")")) break;
      }
      first = false;
      if (IsOp("*") || IsOp("**"))
        return ErrorAt(Cur().pos, "*args and **kwargs are not supported");
      if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == "=") {
        std::string key = Cur().text;
        Next();
        Next();
        ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        e->kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!e->kwargs.empty()) {
          return ErrorAt(Cur().pos, "positional argument follows keyword argument");
        }
        ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        e->children.push_back(std::move(value));
      }
    }
    Next();
    return Seal(std::move(e));
  }

  // "| filter(args)" and "is [not] test args" after `node` (null for a
  // filter block, which starts with the filter name).
  absl::StatusOr<ExprPtr> ParseFilterChain(ExprPtr node, bool first) {
    while (true) {
      if (first || IsOp("|")) {
        if (!first) Next();
        first = false;
        const SourcePos pos = Cur().pos;
        ASSIGN_OR_RETURN(std::string name, ExpectName());
        while (IsOp(".")) {
          Next();
          ASSIGN_OR_RETURN(std::string part, ExpectName());
          absl::StrAppend(&name, ".", part);
        }
        if (IsOp("(")) {
          ASSIGN_OR_RETURN(node, ParseCall(std::move(node), Expr::Kind::kFilter, name));
        } else {
          ExprPtr e = MakeExpr(Expr::Kind::kFilter, pos);
          e->name = name;
          e->children.push_back(std::move(node));
          ASSIGN_OR_RETURN(node, Seal(std::move(e)));
        }
        node->pos = pos;
      } else if (IsName("is")) {
        const SourcePos pos = Cur().pos;
        Next();
        bool negated = false;
        if (IsName("not")) {
          negated = true;
          Next();
        }
        ASSIGN_OR_RETURN(std::string name, ExpectName());
        while (IsOp(".")) {
          Next();
          ASSIGN_OR_RETURN(std::string part, ExpectName());
          absl::StrAppend(&name, ".", part);
        }
        ExprPtr e;
        if (IsOp("(")) {
          ASSIGN_OR_RETURN(e, ParseCall(std::move(node), Expr::Kind::kTest, name));
        } else {
          e = MakeExpr(Expr::Kind::kTest, pos);
          e->name = name;
          e->children.push_back(std::move(node));
          const Tok type = Cur().type;
          const bool arg_start = type == Tok::kName || type == Tok::kString || type == Tok::kInt ||
                                 type == Tok::kFloat || IsOp("(") || IsOp("[") || IsOp("{");
          if (arg_start && !IsName("else") && !IsName("or") && !IsName("and")) {
            if (IsName("is")) return ErrorAt(Cur().pos, "you cannot chain multiple tests with is");
            ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
            ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
            e->children.push_back(std::move(arg));
          }
          ASSIGN_OR_RETURN(e, Seal(std::move(e)));
        }
        e->pos = pos;
        e->negated = negated;
        node = std::move(e);
      } else if (IsOp("(")) {
        ASSIGN_OR_RETURN(node, ParseCall(std::move(node), Expr::Kind::kCall, ""));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

absl::StatusOr<Body> ParseTemplate(absl::string_view source) {
  // Newlines as Jinja2 reads them, and no trailing newline.
  std::string text;
  text.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      text.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      text.push_back(source[i]);
    }
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(std::move(text)).Run());
  return Parser(std::move(tokens)).ParseAll();
}

}  // namespace rlvr::jinja
