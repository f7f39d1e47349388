#include "common/jinja/template.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"
#include "common/jinja/ast.h"
#include "common/jinja/parser.h"

namespace rlvr::jinja {

struct Program {
  Body body;
};

namespace {

// Jinja2's sandbox refuses larger ranges.
constexpr int64_t kMaxRange = 100000;

absl::Status ErrorAt(SourcePos pos, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("line ", pos.line, ", column ", pos.column, ": ", message));
}

// Gives a helper's error the position of the expression that called it.
absl::Status At(SourcePos pos, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("line ", pos.line, ", column ", pos.column, ": ",
                                                  status.message()));
}

absl::Status TypeError(absl::string_view message) { return absl::InvalidArgumentError(message); }

absl::Status UndefinedError(const Value& v) {
  return absl::InvalidArgumentError(v.as_string().empty() ? std::string("undefined value")
                                                          : v.as_string());
}

struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* Find(absl::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
      for (const auto& [k, v] : s->vars) {
        if (k == name) return &v;
      }
    }
    return nullptr;
  }
  void Set(absl::string_view name, Value value) {
    for (auto& [k, v] : vars) {
      if (k == name) {
        v = std::move(value);
        return;
      }
    }
    vars.emplace_back(std::string(name), std::move(value));
  }
};
using ScopePtr = std::shared_ptr<Scope>;

ScopePtr ChildOf(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

class MacroFn final : public Callable {
 public:
  MacroFn(const Node* node, ScopePtr closure) : node(node), closure(std::move(closure)) {}
  std::string Describe() const override { return absl::StrCat("<Macro '", node->name, "'>"); }
  const Node* node;
  // The scope the macro was defined in (it sees that scope's later
  // assignments too). That scope holds the macro: the Renderer breaks the
  // cycle when the render ends.
  ScopePtr closure;
};

class GlobalFn final : public Callable {
 public:
  explicit GlobalFn(std::string name) : name(std::move(name)) {}
  std::string Describe() const override { return absl::StrCat("<function ", name, ">"); }
  std::string name;
};

class BoundMethod final : public Callable {
 public:
  BoundMethod(Value self, std::string name) : self(std::move(self)), name(std::move(name)) {}
  std::string Describe() const override {
    return absl::StrCat("<built-in method ", name, " of ", self.TypeName(), " object>");
  }
  Value self;
  std::string name;
};

constexpr const char* kStringMethods[] = {
    "strip",   "lstrip",  "rstrip",  "split",      "rsplit",  "startswith", "endswith",   "upper",
    "lower",   "replace", "title",   "capitalize", "find",    "rfind",      "count",      "join",
    "isdigit", "isalpha", "isalnum", "isspace",    "islower", "isupper",    "splitlines", "format"};
constexpr const char* kDictMethods[] = {"items", "keys", "values", "get"};
// Methods the immutable sandbox refuses (they would modify the object).
constexpr const char* kMutatingMethods[] = {
    "append",  "extend", "insert",     "pop",     "remove", "clear",   "sort",
    "reverse", "update", "setdefault", "popitem", "add",    "discard", "difference_update"};

bool IsIn(absl::string_view name, const char* const* begin, const char* const* end) {
  for (const char* const* p = begin; p != end; ++p) {
    if (name == *p) return true;
  }
  return false;
}
template <size_t N>
bool IsIn(absl::string_view name, const char* const (&table)[N]) {
  return IsIn(name, table, table + N);
}

std::string AsciiUpper(absl::string_view s) { return absl::AsciiStrToUpper(s); }
std::string AsciiLower(absl::string_view s) { return absl::AsciiStrToLower(s); }

// Python's str.capitalize (ASCII case mapping).
std::string Capitalize(absl::string_view s) {
  std::string out = AsciiLower(s);
  if (!out.empty()) out[0] = absl::ascii_toupper(out[0]);
  return out;
}

// Python's str.title (ASCII case mapping): a letter after a letter is
// lowered, any other letter raised.
std::string PythonTitle(absl::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    if (absl::ascii_isalpha(c)) {
      c = prev_cased ? absl::ascii_tolower(c) : absl::ascii_toupper(c);
      prev_cased = true;
    } else {
      prev_cased = static_cast<unsigned char>(c) >= 0x80 && prev_cased;
    }
  }
  return out;
}

// Jinja2's title filter: words split at whitespace, "-", "(", "{", "[" and
// "<"; each word's first character raised, the rest lowered.
std::string JinjaTitle(absl::string_view s) {
  std::string out;
  bool word_start = true;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = DecodeUtf8(s, &pos);
    const bool sep =
        IsPythonSpace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (sep) {
      word_start = true;
      absl::StrAppend(&out, s.substr(start, pos - start));
      continue;
    }
    if (pos - start == 1) {
      const char c = s[start];
      out.push_back(word_start ? absl::ascii_toupper(c) : absl::ascii_tolower(c));
    } else {
      absl::StrAppend(&out, s.substr(start, pos - start));
    }
    word_start = false;
  }
  return out;
}

// Python's str.splitlines().
std::vector<std::string> SplitLines(absl::string_view s) {
  std::vector<std::string> lines;
  size_t pos = 0, line_start = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = DecodeUtf8(s, &pos);
    const bool is_break = cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || cp == 0x1c ||
                          cp == 0x1d || cp == 0x1e || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!is_break) continue;
    lines.emplace_back(s.substr(line_start, start - line_start));
    if (cp == '\r' && pos < s.size() && s[pos] == '\n') ++pos;
    line_start = pos;
  }
  if (line_start < s.size()) lines.emplace_back(s.substr(line_start));
  return lines;
}

// Python's str.split(sep, maxsplit) (sep == nullptr: runs of whitespace).
absl::StatusOr<std::vector<std::string>> PythonSplit(absl::string_view s, const std::string* sep,
                                                     int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep != nullptr) {
    if (sep->empty()) return TypeError("ValueError: empty separator");
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      const size_t found = s.find(*sep, start);
      if (found == absl::string_view::npos) break;
      parts.emplace_back(s.substr(start, found - start));
      start = found + sep->size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  size_t pos = 0;
  auto skip_space = [&] {
    while (pos < s.size()) {
      size_t next = pos;
      if (!IsPythonSpace(DecodeUtf8(s, &next))) break;
      pos = next;
    }
  };
  skip_space();
  while (pos < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(PythonStrip(s.substr(pos), nullptr, false, true));
      return parts;
    }
    const size_t start = pos;
    while (pos < s.size()) {
      size_t next = pos;
      if (IsPythonSpace(DecodeUtf8(s, &next))) break;
      pos = next;
    }
    parts.emplace_back(s.substr(start, pos - start));
    skip_space();
  }
  return parts;
}

// Python's str.replace(old, new, count).
std::string PythonReplace(absl::string_view s, absl::string_view from, absl::string_view to,
                          int64_t count) {
  std::string out;
  if (from.empty()) {
    const std::vector<size_t> offsets = CodePointOffsets(s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) {
        absl::StrAppend(&out, to);
        ++done;
      }
      absl::StrAppend(&out, s.substr(offsets[i], offsets[i + 1] - offsets[i]));
    }
    if (count < 0 || done < count) absl::StrAppend(&out, to);
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t found = s.find(from, start);
    if (found == absl::string_view::npos) break;
    absl::StrAppend(&out, s.substr(start, found - start));
    absl::StrAppend(&out, to);
    start = found + from.size();
    ++done;
  }
  absl::StrAppend(&out, s.substr(start));
  return out;
}

// Code point index of byte offset `byte` in s.
int64_t CodePointIndex(absl::string_view s, size_t byte) {
  return static_cast<int64_t>(CodePointOffsets(s.substr(0, byte)).size()) - 1;
}

int64_t Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return static_cast<int64_t>(CodePointOffsets(v.as_string()).size()) - 1;
    case Value::Kind::kList:
      return static_cast<int64_t>(v.items().size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(v.dict()->entries.size());
    default:
      return -1;
  }
}

// Python's floor division and modulo on ints.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t FloorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python's float.__round__(ndigits): half to even on the exact binary value,
// which is what printf's correctly rounded %.*f does.
double RoundHalfEven(double x, int64_t ndigits) {
  if (!std::isfinite(x)) return x;
  if (ndigits > 300) return x;
  if (ndigits < -300) return 0.0 * x;
  if (ndigits >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(ndigits), x);
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, static_cast<double>(-ndigits));
  return std::nearbyint(x / scale) * scale;
}

class Renderer {
 public:
  explicit Renderer(const RenderOptions& options) : options_(options) {}
  // A macro holds the scope it was defined in, which holds the macro: the
  // cycles are broken here.
  ~Renderer() {
    for (const ScopePtr& scope : macro_scopes_) scope->vars.clear();
  }

  absl::Status RenderBody(const Body& body, const ScopePtr& scope, std::string* out) {
    for (const NodePtr& node : body) {
      RETURN_IF_ERROR(RenderNode(*node, scope, out));
      if (flow_ != Flow::kNormal) return absl::OkStatus();
    }
    return absl::OkStatus();
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  absl::Status CheckOutput(const std::string& out, SourcePos pos) const {
    if (static_cast<int64_t>(out.size()) > options_.max_output_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("line ", pos.line, ", column ", pos.column, ": output exceeds ",
                       options_.max_output_bytes, " bytes (RenderOptions::max_output_bytes)"));
    }
    return absl::OkStatus();
  }

  absl::Status CountIteration(SourcePos pos) {
    if (++iterations_ > options_.max_loop_iterations) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "line ", pos.line, ", column ", pos.column, ": more than ", options_.max_loop_iterations,
          " loop iterations (RenderOptions::max_loop_iterations)"));
    }
    return absl::OkStatus();
  }

  absl::Status RenderNode(const Node& node, const ScopePtr& scope, std::string* out) {
    switch (node.kind) {
      case Node::Kind::kText:
        out->append(node.text);
        return CheckOutput(*out, node.pos);
      case Node::Kind::kOutput: {
        ASSIGN_OR_RETURN(Value v, Eval(*node.expr, scope));
        out->append(v.Str());
        return CheckOutput(*out, node.pos);
      }
      case Node::Kind::kIf:
        for (size_t i = 0; i < node.conds.size(); ++i) {
          ASSIGN_OR_RETURN(Value cond, Eval(*node.conds[i], scope));
          if (cond.Truthy()) return RenderBody(node.bodies[i], scope, out);
        }
        if (node.bodies.size() > node.conds.size()) {
          return RenderBody(node.bodies.back(), scope, out);
        }
        return absl::OkStatus();
      case Node::Kind::kFor:
        return RenderFor(node, scope, out);
      case Node::Kind::kSet: {
        ASSIGN_OR_RETURN(Value v, Eval(*node.expr, scope));
        if (!node.attr.empty()) {
          const Value* ns = scope->Find(node.targets[0]);
          if (ns == nullptr || !ns->is_dict() || !ns->dict()->is_namespace) {
            return ErrorAt(node.pos, "cannot assign attribute on non-namespace object");
          }
          ns->dict()->Set(node.attr, std::move(v));
          return absl::OkStatus();
        }
        return At(node.pos, Assign(node.targets, v, scope.get()));
      }
      case Node::Kind::kSetBlock: {
        std::string text;
        RETURN_IF_ERROR(RenderBody(node.bodies[0], scope, &text));
        scope->Set(node.targets[0], Value::String(std::move(text)));
        return absl::OkStatus();
      }
      case Node::Kind::kMacro:
        scope->Set(node.name, Value::Function(std::make_shared<MacroFn>(&node, scope)));
        macro_scopes_.push_back(scope);
        return absl::OkStatus();
      case Node::Kind::kBreak:
        flow_ = Flow::kBreak;
        return absl::OkStatus();
      case Node::Kind::kContinue:
        flow_ = Flow::kContinue;
        return absl::OkStatus();
      case Node::Kind::kFilterBlock: {
        std::string text;
        RETURN_IF_ERROR(RenderBody(node.bodies[0], scope, &text));
        const Value operand = Value::String(std::move(text));
        const Value* saved = block_operand_;
        block_operand_ = &operand;
        absl::StatusOr<Value> v = Eval(*node.expr, scope);
        block_operand_ = saved;
        if (!v.ok()) return v.status();
        out->append(v->Str());
        return CheckOutput(*out, node.pos);
      }
      case Node::Kind::kScope:
        return RenderBody(node.bodies[0], scope, out);
    }
    return absl::OkStatus();
  }

  // Binds `targets` (one name, or several unpacked from a sequence).
  absl::Status Assign(const std::vector<std::string>& targets, const Value& v, Scope* scope) {
    if (targets.size() == 1) {
      scope->Set(targets[0], v);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
    if (items.size() != targets.size()) {
      return TypeError(
          absl::StrCat("cannot unpack ", items.size(), " values into ", targets.size(), " names"));
    }
    for (size_t i = 0; i < targets.size(); ++i) scope->Set(targets[i], items[i]);
    return absl::OkStatus();
  }

  absl::Status RenderFor(const Node& node, const ScopePtr& scope, std::string* out) {
    ASSIGN_OR_RETURN(Value iterable, Eval(*node.expr, scope));
    absl::StatusOr<std::vector<Value>> all = Iterate(iterable);
    if (!all.ok()) return At(node.expr->pos, all.status());
    std::vector<Value> items;
    if (node.filter != nullptr) {
      for (Value& item : *all) {
        RETURN_IF_ERROR(CountIteration(node.pos));
        ScopePtr s = ChildOf(scope);
        RETURN_IF_ERROR(At(node.pos, Assign(node.targets, item, s.get())));
        ASSIGN_OR_RETURN(Value keep, Eval(*node.filter, s));
        if (keep.Truthy()) items.push_back(std::move(item));
      }
    } else {
      items = std::move(*all);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      RETURN_IF_ERROR(CountIteration(node.pos));
      ScopePtr s = ChildOf(scope);
      RETURN_IF_ERROR(At(node.pos, Assign(node.targets, items[i], s.get())));
      auto loop = std::make_shared<DictData>();
      loop->entries = {
          {"index", Value::Int(i + 1)},
          {"index0", Value::Int(i)},
          {"revindex", Value::Int(n - i)},
          {"revindex0", Value::Int(n - i - 1)},
          {"first", Value::Bool(i == 0)},
          {"last", Value::Bool(i == n - 1)},
          {"length", Value::Int(n)},
          {"depth", Value::Int(1)},
          {"depth0", Value::Int(0)},
          {"previtem", i > 0 ? items[i - 1] : Value::Undefined("there is no previous item")},
          {"nextitem", i + 1 < n ? items[i + 1] : Value::Undefined("there is no next item")},
      };
      s->Set("loop", Value::Dict(std::move(loop)));
      RETURN_IF_ERROR(RenderBody(node.bodies[0], s, out));
      if (flow_ == Flow::kBreak) {
        flow_ = Flow::kNormal;
        break;
      }
      flow_ = Flow::kNormal;
    }
    if (n == 0 && node.bodies.size() > 1) return RenderBody(node.bodies[1], scope, out);
    return absl::OkStatus();
  }

  // Python iteration: list items, dict keys, string code points; undefined
  // iterates as empty.
  absl::StatusOr<std::vector<Value>> Iterate(const Value& v) {
    switch (v.kind()) {
      case Value::Kind::kUndefined:
        return std::vector<Value>{};
      case Value::Kind::kList:
        return v.items();
      case Value::Kind::kDict: {
        if (v.dict()->is_namespace) break;
        std::vector<Value> keys;
        for (const auto& [k, item] : v.dict()->entries) keys.push_back(Value::String(k));
        return keys;
      }
      case Value::Kind::kString: {
        const std::string& s = v.as_string();
        const std::vector<size_t> offsets = CodePointOffsets(s);
        std::vector<Value> chars;
        for (size_t i = 0; i + 1 < offsets.size(); ++i) {
          chars.push_back(Value::String(s.substr(offsets[i], offsets[i + 1] - offsets[i])));
        }
        return chars;
      }
      default:
        break;
    }
    return TypeError(absl::StrCat("'", v.TypeName(), "' object is not iterable"));
  }

  absl::StatusOr<Value> Eval(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.literal;
      case Expr::Kind::kName: {
        if (const Value* v = scope->Find(e.name)) return *v;
        if (e.name == "namespace" || e.name == "range" || e.name == "dict" ||
            e.name == "raise_exception" || e.name == "strftime_now") {
          return Value::Function(std::make_shared<GlobalFn>(e.name));
        }
        return Value::Undefined(absl::StrCat("'", e.name, "' is undefined"));
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        std::vector<Value> items;
        for (const ExprPtr& c : e.children) {
          ASSIGN_OR_RETURN(Value v, Eval(*c, scope));
          items.push_back(std::move(v));
        }
        return Value::List(std::move(items), e.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict: {
        auto dict = std::make_shared<DictData>();
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          ASSIGN_OR_RETURN(Value key, Eval(*e.children[i], scope));
          ASSIGN_OR_RETURN(Value value, Eval(*e.children[i + 1], scope));
          if (!key.is_string()) {
            return ErrorAt(e.children[i]->pos, "only string keys are supported in dict literals");
          }
          dict->Set(key.as_string(), std::move(value));
        }
        return Value::Dict(std::move(dict));
      }
      case Expr::Kind::kGetAttr: {
        ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0], scope));
        absl::StatusOr<Value> v = GetAttr(obj, e.name);
        if (!v.ok()) return At(e.pos, v.status());
        return v;
      }
      case Expr::Kind::kGetItem: {
        ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0], scope));
        ASSIGN_OR_RETURN(Value key, Eval(*e.children[1], scope));
        absl::StatusOr<Value> v = GetItem(obj, key);
        if (!v.ok()) return At(e.pos, v.status());
        return v;
      }
      case Expr::Kind::kSlice:
        return EvalSlice(e, scope);
      case Expr::Kind::kCall: {
        ASSIGN_OR_RETURN(Value callee, Eval(*e.children[0], scope));
        std::vector<Value> args;
        std::vector<std::pair<std::string, Value>> kwargs;
        RETURN_IF_ERROR(EvalArgs(e, 1, scope, &args, &kwargs));
        return Call(callee, args, kwargs, e.pos);
      }
      case Expr::Kind::kFilter: {
        Value operand;
        if (e.children[0] == nullptr) {
          operand = *block_operand_;
        } else {
          ASSIGN_OR_RETURN(operand, Eval(*e.children[0], scope));
        }
        std::vector<Value> args;
        std::vector<std::pair<std::string, Value>> kwargs;
        RETURN_IF_ERROR(EvalArgs(e, 1, scope, &args, &kwargs));
        absl::StatusOr<Value> v = ApplyFilter(e.name, operand, args, kwargs);
        if (!v.ok()) return At(e.pos, v.status());
        return v;
      }
      case Expr::Kind::kTest: {
        ASSIGN_OR_RETURN(Value operand, Eval(*e.children[0], scope));
        std::vector<Value> args;
        std::vector<std::pair<std::string, Value>> kwargs;
        RETURN_IF_ERROR(EvalArgs(e, 1, scope, &args, &kwargs));
        if (!kwargs.empty()) return ErrorAt(e.pos, "tests take no keyword arguments here");
        absl::StatusOr<bool> result = ApplyTest(e.name, operand, args);
        if (!result.ok()) return At(e.pos, result.status());
        return Value::Bool(*result != e.negated);
      }
      case Expr::Kind::kNeg:
      case Expr::Kind::kPos: {
        ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], scope));
        if (v.is_undefined()) return At(e.pos, UndefinedError(v));
        if (!v.is_number()) {
          return ErrorAt(e.pos, absl::StrCat("bad operand type for unary ",
                                             e.kind == Expr::Kind::kNeg ? "-" : "+", ": '",
                                             v.TypeName(), "'"));
        }
        if (e.kind == Expr::Kind::kPos) {
          return v.kind() == Value::Kind::kBool ? Value::Int(v.as_int()) : v;
        }
        if (v.kind() == Value::Kind::kFloat) return Value::Float(-v.as_float());
        if (v.as_int() == INT64_MIN) return ErrorAt(e.pos, "integer overflow");
        return Value::Int(-v.as_int());
      }
      case Expr::Kind::kNot: {
        ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], scope));
        return Value::Bool(!v.Truthy());
      }
      case Expr::Kind::kAnd: {
        ASSIGN_OR_RETURN(Value left, Eval(*e.children[0], scope));
        if (!left.Truthy()) return left;
        return Eval(*e.children[1], scope);
      }
      case Expr::Kind::kOr: {
        ASSIGN_OR_RETURN(Value left, Eval(*e.children[0], scope));
        if (left.Truthy()) return left;
        return Eval(*e.children[1], scope);
      }
      case Expr::Kind::kBinary: {
        ASSIGN_OR_RETURN(Value left, Eval(*e.children[0], scope));
        ASSIGN_OR_RETURN(Value right, Eval(*e.children[1], scope));
        absl::StatusOr<Value> v = BinaryOp(e.name, left, right);
        if (!v.ok()) return At(e.pos, v.status());
        return v;
      }
      case Expr::Kind::kCompare: {
        ASSIGN_OR_RETURN(Value left, Eval(*e.children[0], scope));
        for (size_t i = 0; i < e.ops.size(); ++i) {
          ASSIGN_OR_RETURN(Value right, Eval(*e.children[i + 1], scope));
          absl::StatusOr<bool> r = CompareOp(e.ops[i], left, right);
          if (!r.ok()) return At(e.children[i + 1]->pos, r.status());
          if (!*r) return Value::Bool(false);
          left = std::move(right);
        }
        return Value::Bool(true);
      }
      case Expr::Kind::kCondExpr: {
        ASSIGN_OR_RETURN(Value cond, Eval(*e.children[0], scope));
        if (cond.Truthy()) return Eval(*e.children[1], scope);
        if (e.children[2] == nullptr) {
          return Value::Undefined(
              "the inline if-expression evaluated to false and no else "
              "section was defined.");
        }
        return Eval(*e.children[2], scope);
      }
    }
    return ErrorAt(e.pos, "unknown expression");
  }

  absl::Status EvalArgs(const Expr& e, size_t first, const ScopePtr& scope,
                        std::vector<Value>* args,
                        std::vector<std::pair<std::string, Value>>* kwargs) {
    for (size_t i = first; i < e.children.size(); ++i) {
      ASSIGN_OR_RETURN(Value v, Eval(*e.children[i], scope));
      args->push_back(std::move(v));
    }
    for (const auto& [key, expr] : e.kwargs) {
      ASSIGN_OR_RETURN(Value v, Eval(*expr, scope));
      kwargs->emplace_back(key, std::move(v));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Value> EvalSlice(const Expr& e, const ScopePtr& scope) {
    ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0], scope));
    if (obj.is_undefined()) return At(e.pos, UndefinedError(obj));
    std::optional<int64_t> bounds[3];
    for (int k = 0; k < 3; ++k) {
      if (e.children[k + 1] == nullptr) continue;
      ASSIGN_OR_RETURN(Value b, Eval(*e.children[k + 1], scope));
      if (b.is_none()) continue;
      if (b.kind() != Value::Kind::kInt && b.kind() != Value::Kind::kBool) {
        return ErrorAt(e.pos, "slice indices must be integers or None");
      }
      bounds[k] = b.as_int();
    }
    const int64_t step = bounds[2].value_or(1);
    if (step == 0) return ErrorAt(e.pos, "slice step cannot be zero");
    std::vector<size_t> offsets;
    int64_t n;
    if (obj.is_string()) {
      offsets = CodePointOffsets(obj.as_string());
      n = static_cast<int64_t>(offsets.size()) - 1;
    } else if (obj.is_list()) {
      n = static_cast<int64_t>(obj.items().size());
    } else {
      return ErrorAt(e.pos, absl::StrCat("'", obj.TypeName(), "' object is not subscriptable"));
    }
    // Python's slice.indices().
    auto clamp = [&](std::optional<int64_t> b, int64_t def, int64_t lo, int64_t hi) {
      if (!b.has_value()) return def;
      int64_t v = *b;
      if (v < 0) v += n;
      return std::clamp(v, lo, hi);
    };
    int64_t start, stop;
    if (step > 0) {
      start = clamp(bounds[0], 0, 0, n);
      stop = clamp(bounds[1], n, 0, n);
    } else {
      start = clamp(bounds[0], n - 1, -1, n - 1);
      stop = clamp(bounds[1], -1, -1, n - 1);
    }
    std::vector<int64_t> picked;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picked.push_back(i);
    if (obj.is_string()) {
      std::string out;
      const std::string& s = obj.as_string();
      for (int64_t i : picked) out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
      return Value::String(std::move(out));
    }
    std::vector<Value> items;
    for (int64_t i : picked) items.push_back(obj.items()[i]);
    return Value::List(std::move(items), obj.is_tuple());
  }

  // obj.name: a dict's key (or one of its read-only methods), a string's
  // method; anything else is undefined. An attribute of undefined is an
  // error.
  absl::StatusOr<Value> GetAttr(const Value& obj, const std::string& name) {
    switch (obj.kind()) {
      case Value::Kind::kUndefined:
        return UndefinedError(obj);
      case Value::Kind::kDict:
        if (!obj.dict()->is_namespace && IsIn(name, kDictMethods)) {
          return Value::Function(std::make_shared<BoundMethod>(obj, name));
        }
        if (const Value* v = obj.dict()->Find(name)) return *v;
        break;
      case Value::Kind::kString:
        if (IsIn(name, kStringMethods)) {
          return Value::Function(std::make_shared<BoundMethod>(obj, name));
        }
        break;
      case Value::Kind::kList:
        if (name == "count" || name == "index") {
          return Value::Function(std::make_shared<BoundMethod>(obj, name));
        }
        break;
      default:
        break;
    }
    if (IsIn(name, kMutatingMethods)) {
      return Value::Undefined(absl::StrCat("access to attribute '", name, "' of '", obj.TypeName(),
                                           "' object is unsafe"));
    }
    return Value::Undefined(
        absl::StrCat("'", obj.TypeName(), " object' has no attribute '", name, "'"));
  }

  // obj[key]: a dict's key, a list's or string's index (negative from the
  // end); a missing one is undefined (a string key then falls back to
  // GetAttr, as in Jinja).
  absl::StatusOr<Value> GetItem(const Value& obj, const Value& key) {
    if (obj.is_undefined()) return UndefinedError(obj);
    if (obj.is_dict() && key.is_string()) {
      if (const Value* v = obj.dict()->Find(key.as_string())) return *v;
    }
    if ((obj.is_list() || obj.is_string()) &&
        (key.kind() == Value::Kind::kInt || key.kind() == Value::Kind::kBool)) {
      int64_t i = key.as_int();
      if (obj.is_list()) {
        const int64_t n = static_cast<int64_t>(obj.items().size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return obj.items()[i];
      } else {
        const std::vector<size_t> offsets = CodePointOffsets(obj.as_string());
        const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
          return Value::String(obj.as_string().substr(offsets[i], offsets[i + 1] - offsets[i]));
        }
      }
      return Value::Undefined(
          absl::StrCat("'", obj.TypeName(), " object' has no element ", key.as_int()));
    }
    if (key.is_string()) return GetAttr(obj, key.as_string());
    return Value::Undefined(
        absl::StrCat("'", obj.TypeName(), " object' has no element ", key.Repr()));
  }

  absl::StatusOr<Value> CheckedString(std::string s) const {
    if (static_cast<int64_t>(s.size()) > options_.max_output_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("a string exceeds ",
                                                       options_.max_output_bytes,
                                                       " bytes (RenderOptions::max_output_bytes)"));
    }
    return Value::String(std::move(s));
  }

  absl::StatusOr<Value> BinaryOp(const std::string& op, const Value& a, const Value& b) {
    if (op == "~") return CheckedString(a.Str() + b.Str());
    if (a.is_undefined()) return UndefinedError(a);
    if (b.is_undefined()) return UndefinedError(b);
    const bool ints = (a.kind() == Value::Kind::kInt || a.kind() == Value::Kind::kBool) &&
                      (b.kind() == Value::Kind::kInt || b.kind() == Value::Kind::kBool);
    const bool numbers = a.is_number() && b.is_number();
    const absl::Status unsupported = TypeError(absl::StrCat(
        "unsupported operand type(s) for ", op, ": '", a.TypeName(), "' and '", b.TypeName(), "'"));
    int64_t r = 0;
    if (op == "+") {
      if (ints) {
        if (__builtin_add_overflow(a.as_int(), b.as_int(), &r))
          return TypeError("integer overflow");
        return Value::Int(r);
      }
      if (numbers) return Value::Float(a.as_float() + b.as_float());
      if (a.is_string() && b.is_string()) return CheckedString(a.as_string() + b.as_string());
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        std::vector<Value> items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        return Value::List(std::move(items), a.is_tuple());
      }
      return unsupported;
    }
    if (op == "-") {
      if (ints) {
        if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r))
          return TypeError("integer overflow");
        return Value::Int(r);
      }
      if (numbers) return Value::Float(a.as_float() - b.as_float());
      return unsupported;
    }
    if (op == "*") {
      if (ints) {
        if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r))
          return TypeError("integer overflow");
        return Value::Int(r);
      }
      if (numbers) return Value::Float(a.as_float() * b.as_float());
      const Value* seq = (a.is_string() || a.is_list())   ? &a
                         : (b.is_string() || b.is_list()) ? &b
                                                          : nullptr;
      const Value* times = seq == &a ? &b : &a;
      if (seq != nullptr &&
          (times->kind() == Value::Kind::kInt || times->kind() == Value::Kind::kBool)) {
        const int64_t n = std::max<int64_t>(0, times->as_int());
        if (seq->is_string()) {
          if (n > 0 &&
              static_cast<int64_t>(seq->as_string().size()) > options_.max_output_bytes / n) {
            return CheckedString(std::string(options_.max_output_bytes + 1, ' '));
          }
          std::string out;
          for (int64_t i = 0; i < n; ++i) out += seq->as_string();
          return Value::String(std::move(out));
        }
        const int64_t size = static_cast<int64_t>(seq->items().size());
        if (n > 0 && size > options_.max_loop_iterations / n) {
          return absl::ResourceExhaustedError("list repetition too large");
        }
        std::vector<Value> items;
        for (int64_t i = 0; i < n; ++i)
          items.insert(items.end(), seq->items().begin(), seq->items().end());
        return Value::List(std::move(items), seq->is_tuple());
      }
      return unsupported;
    }
    if (op == "/") {
      if (!numbers) return unsupported;
      if (b.as_float() == 0) return TypeError("ZeroDivisionError: division by zero");
      return Value::Float(a.as_float() / b.as_float());
    }
    if (op == "//" || op == "%") {
      if (op == "%" && a.is_string()) {
        return TypeError("string formatting with % is not supported");
      }
      if (!numbers) return unsupported;
      if (b.as_float() == 0)
        return TypeError("ZeroDivisionError: integer division or modulo by zero");
      if (ints) {
        if (a.as_int() == INT64_MIN && b.as_int() == -1) return TypeError("integer overflow");
        return Value::Int(op == "//" ? FloorDiv(a.as_int(), b.as_int())
                                     : FloorMod(a.as_int(), b.as_int()));
      }
      const double x = a.as_float(), y = b.as_float();
      if (op == "//") return Value::Float(std::floor(x / y));
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value::Float(m);
    }
    if (op == "**") {
      if (!numbers) return unsupported;
      if (ints && b.as_int() >= 0) {
        int64_t result = 1, base = a.as_int(), exp = b.as_int();
        while (exp > 0) {
          if (exp & 1) {
            if (__builtin_mul_overflow(result, base, &result)) return TypeError("integer overflow");
          }
          exp >>= 1;
          if (exp > 0 && __builtin_mul_overflow(base, base, &base))
            return TypeError("integer overflow");
        }
        return Value::Int(result);
      }
      if (a.as_float() == 0 && b.as_float() < 0) {
        return TypeError("ZeroDivisionError: 0.0 cannot be raised to a negative power");
      }
      return Value::Float(std::pow(a.as_float(), b.as_float()));
    }
    return TypeError(absl::StrCat("unknown operator ", op));
  }

  absl::StatusOr<bool> Contains(const Value& container, const Value& item) {
    switch (container.kind()) {
      case Value::Kind::kUndefined:
        return false;
      case Value::Kind::kString:
        if (!item.is_string()) {
          return TypeError(
              absl::StrCat("'in <string>' requires string as left operand, not ", item.TypeName()));
        }
        return absl::StrContains(container.as_string(), item.as_string());
      case Value::Kind::kList:
        for (const Value& v : container.items()) {
          if (v.Equals(item)) return true;
        }
        return false;
      case Value::Kind::kDict:
        if (container.dict()->is_namespace) break;
        if ((item.is_list() && !item.is_tuple()) || item.is_dict()) {
          return TypeError(absl::StrCat("unhashable type: '", item.TypeName(), "'"));
        }
        return item.is_string() && container.dict()->Find(item.as_string()) != nullptr;
      default:
        break;
    }
    return TypeError(absl::StrCat("argument of type '", container.TypeName(), "' is not iterable"));
  }

  absl::StatusOr<bool> CompareOp(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return a.Equals(b);
    if (op == "!=") return !a.Equals(b);
    if (op == "in") return Contains(b, a);
    if (op == "notin") {
      ASSIGN_OR_RETURN(bool in, Contains(b, a));
      return !in;
    }
    if (a.is_undefined()) return UndefinedError(a);
    if (b.is_undefined()) return UndefinedError(b);
    if (op == "<") return a.Less(b);
    if (op == ">") return b.Less(a);
    if (op == "<=") {
      ASSIGN_OR_RETURN(bool greater, b.Less(a));
      return !greater;
    }
    if (op == ">=") {
      ASSIGN_OR_RETURN(bool less, a.Less(b));
      return !less;
    }
    return TypeError(absl::StrCat("unknown comparison ", op));
  }

  // Arguments of a filter, test, method or global: positional `args` then
  // keyword ones, matched against parameter names.
  class Args {
   public:
    Args(absl::string_view what, const std::vector<Value>& args,
         const std::vector<std::pair<std::string, Value>>& kwargs, std::vector<std::string> names)
        : what_(what), args_(args), kwargs_(kwargs), names_(std::move(names)) {}

    absl::Status Check() const {
      if (args_.size() > names_.size()) {
        return TypeError(absl::StrCat(what_, " takes at most ", names_.size(), " arguments (",
                                      args_.size(), " given)"));
      }
      for (const auto& [key, v] : kwargs_) {
        auto it = std::find(names_.begin(), names_.end(), key);
        if (it == names_.end()) {
          return TypeError(absl::StrCat(what_, " got an unexpected keyword argument '", key, "'"));
        }
        if (static_cast<size_t>(it - names_.begin()) < args_.size()) {
          return TypeError(absl::StrCat(what_, " got multiple values for argument '", key, "'"));
        }
      }
      return absl::OkStatus();
    }
    // The argument, or nullptr when not given.
    const Value* Get(size_t i) const {
      if (i < args_.size()) return &args_[i];
      for (const auto& [key, v] : kwargs_) {
        if (key == names_[i]) return &v;
      }
      return nullptr;
    }
    Value GetOr(size_t i, Value def) const {
      const Value* v = Get(i);
      return v != nullptr ? *v : def;
    }

   private:
    std::string what_;
    const std::vector<Value>& args_;
    const std::vector<std::pair<std::string, Value>>& kwargs_;
    std::vector<std::string> names_;
  };

  absl::StatusOr<int64_t> IntArg(const Value& v, absl::string_view what) {
    if (v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kBool) return v.as_int();
    return TypeError(absl::StrCat(what, " must be an integer, not ", v.TypeName()));
  }

  absl::StatusOr<Value> Call(const Value& callee, const std::vector<Value>& args,
                             const std::vector<std::pair<std::string, Value>>& kwargs,
                             SourcePos pos) {
    if (callee.is_undefined()) return At(pos, UndefinedError(callee));
    if (callee.kind() != Value::Kind::kCallable) {
      return ErrorAt(pos, absl::StrCat("'", callee.TypeName(), "' object is not callable"));
    }
    const Callable* c = callee.callable().get();
    if (auto* macro = dynamic_cast<const MacroFn*>(c)) return CallMacro(*macro, args, kwargs, pos);
    absl::StatusOr<Value> v;
    if (auto* global = dynamic_cast<const GlobalFn*>(c)) {
      v = CallGlobal(global->name, args, kwargs);
    } else if (auto* method = dynamic_cast<const BoundMethod*>(c)) {
      v = CallMethod(method->self, method->name, args, kwargs);
    } else {
      v = TypeError("not callable");
    }
    if (!v.ok()) return At(pos, v.status());
    return v;
  }

  absl::StatusOr<Value> CallMacro(const MacroFn& macro, const std::vector<Value>& args,
                                  const std::vector<std::pair<std::string, Value>>& kwargs,
                                  SourcePos pos) {
    const Node& node = *macro.node;
    if (args.size() > node.params.size()) {
      return ErrorAt(pos, absl::StrCat("macro '", node.name, "' takes not more than ",
                                       node.params.size(), " argument(s)"));
    }
    if (call_depth_ >= options_.max_call_depth) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "line ", pos.line, ", column ", pos.column, ": macro calls nested deeper than ",
          options_.max_call_depth, " (RenderOptions::max_call_depth)"));
    }
    ScopePtr s = ChildOf(macro.closure);
    for (const auto& [key, v] : kwargs) {
      auto it = std::find(node.params.begin(), node.params.end(), key);
      if (it == node.params.end()) {
        return ErrorAt(pos,
                       absl::StrCat("macro '", node.name,
                                    "' was invoked with an unknown keyword argument '", key, "'"));
      }
    }
    for (size_t i = 0; i < node.params.size(); ++i) {
      if (i < args.size()) {
        s->Set(node.params[i], args[i]);
        continue;
      }
      bool given = false;
      for (const auto& [key, v] : kwargs) {
        if (key == node.params[i]) {
          s->Set(key, v);
          given = true;
        }
      }
      if (given) continue;
      if (node.defaults[i] != nullptr) {
        ASSIGN_OR_RETURN(Value def, Eval(*node.defaults[i], s));
        s->Set(node.params[i], std::move(def));
      } else {
        s->Set(node.params[i],
               Value::Undefined(absl::StrCat("parameter '", node.params[i], "' was not provided")));
      }
    }
    ++call_depth_;
    std::string text;
    const Flow saved_flow = flow_;
    flow_ = Flow::kNormal;
    absl::Status status = RenderBody(node.bodies[0], s, &text);
    flow_ = saved_flow;
    --call_depth_;
    RETURN_IF_ERROR(status);
    return Value::String(std::move(text));
  }

  absl::StatusOr<Value> CallGlobal(const std::string& name, const std::vector<Value>& args,
                                   const std::vector<std::pair<std::string, Value>>& kwargs) {
    if (name == "raise_exception") {
      if (args.size() != 1 || !kwargs.empty()) {
        return TypeError("raise_exception takes one argument (the message)");
      }
      return absl::InvalidArgumentError(absl::StrCat("raise_exception: ", args[0].Str()));
    }
    if (name == "strftime_now") {
      if (args.size() != 1 || !kwargs.empty() || !args[0].is_string()) {
        return TypeError("strftime_now takes one string argument (the format)");
      }
      return Value::String(
          absl::FormatTime(args[0].as_string(), options_.now(), options_.time_zone));
    }
    if (name == "namespace" || name == "dict") {
      auto dict = std::make_shared<DictData>();
      dict->is_namespace = name == "namespace";
      if (args.size() > 1)
        return TypeError(absl::StrCat(name, " takes at most one positional argument"));
      if (args.size() == 1) {
        if (!args[0].is_dict()) return TypeError(absl::StrCat(name, "() argument must be a dict"));
        for (const auto& [k, v] : args[0].dict()->entries) dict->Set(k, v);
      }
      for (const auto& [k, v] : kwargs) dict->Set(k, v);
      return Value::Dict(std::move(dict));
    }
    if (name == "range") {
      if (!kwargs.empty() || args.empty() || args.size() > 3) {
        return TypeError("range takes 1 to 3 positional arguments");
      }
      int64_t start = 0, stop = 0, step = 1;
      if (args.size() == 1) {
        ASSIGN_OR_RETURN(stop, IntArg(args[0], "range()"));
      } else {
        ASSIGN_OR_RETURN(start, IntArg(args[0], "range()"));
        ASSIGN_OR_RETURN(stop, IntArg(args[1], "range()"));
        if (args.size() == 3) {
          ASSIGN_OR_RETURN(step, IntArg(args[2], "range()"));
        }
      }
      if (step == 0) return TypeError("range() arg 3 must not be zero");
      std::vector<Value> items;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (static_cast<int64_t>(items.size()) >= kMaxRange) {
          return absl::ResourceExhaustedError(
              absl::StrCat("range too big: the sandbox refuses more than ", kMaxRange, " items"));
        }
        items.push_back(Value::Int(i));
      }
      return Value::List(std::move(items));
    }
    return TypeError(absl::StrCat("unknown function ", name));
  }

  absl::StatusOr<Value> CallMethod(const Value& self, const std::string& name,
                                   const std::vector<Value>& args,
                                   const std::vector<std::pair<std::string, Value>>& kwargs) {
    const std::string what = absl::StrCat(self.TypeName(), ".", name, "()");
    if (self.is_dict()) {
      if (name == "items" || name == "keys" || name == "values") {
        if (!args.empty() || !kwargs.empty())
          return TypeError(absl::StrCat(what, " takes no arguments"));
        std::vector<Value> out;
        for (const auto& [k, v] : self.dict()->entries) {
          if (name == "items") {
            out.push_back(Value::List({Value::String(k), v}, /*tuple=*/true));
          } else {
            out.push_back(name == "keys" ? Value::String(k) : v);
          }
        }
        return Value::List(std::move(out));
      }
      // get(key, default=None)
      Args a(what, args, kwargs, {"key", "default"});
      RETURN_IF_ERROR(a.Check());
      if (a.Get(0) == nullptr) return TypeError(absl::StrCat(what, " needs a key"));
      if (a.Get(0)->is_string()) {
        if (const Value* v = self.dict()->Find(a.Get(0)->as_string())) return *v;
      }
      return a.GetOr(1, Value::None());
    }
    if (self.is_list()) {
      // count(x) and index(x), by ==.
      if (args.size() != 1 || !kwargs.empty()) {
        return TypeError(absl::StrCat(what, " takes one argument here"));
      }
      int64_t count = 0;
      for (size_t i = 0; i < self.items().size(); ++i) {
        if (!self.items()[i].Equals(args[0])) continue;
        if (name == "index") return Value::Int(static_cast<int64_t>(i));
        ++count;
      }
      if (name == "index") return TypeError("ValueError: list.index(x): x not in list");
      return Value::Int(count);
    }
    const std::string& s = self.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      Args a(what, args, kwargs, {"chars"});
      RETURN_IF_ERROR(a.Check());
      const Value* chars = a.Get(0);
      if (chars != nullptr && !chars->is_none() && !chars->is_string()) {
        return TypeError(absl::StrCat(what, " arg must be None or str"));
      }
      const std::string* set =
          chars != nullptr && chars->is_string() ? &chars->as_string() : nullptr;
      return Value::String(PythonStrip(s, set, name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
      Args a(what, args, kwargs, {"sep", "maxsplit"});
      RETURN_IF_ERROR(a.Check());
      const Value sep = a.GetOr(0, Value::None());
      ASSIGN_OR_RETURN(int64_t maxsplit, IntArg(a.GetOr(1, Value::Int(-1)), "maxsplit"));
      if (!sep.is_none() && !sep.is_string()) return TypeError("must be str or None");
      if (name == "rsplit" && maxsplit >= 0) {
        return TypeError("rsplit with maxsplit is not supported");
      }
      ASSIGN_OR_RETURN(std::vector<std::string> parts,
                       PythonSplit(s, sep.is_string() ? &sep.as_string() : nullptr, maxsplit));
      std::vector<Value> out;
      for (std::string& p : parts) out.push_back(Value::String(std::move(p)));
      return Value::List(std::move(out));
    }
    if (name == "startswith" || name == "endswith") {
      if (args.size() != 1 || !kwargs.empty()) {
        return TypeError(absl::StrCat(what, " takes one argument here (a string or a tuple)"));
      }
      std::vector<Value> options;
      if (args[0].is_list() && args[0].is_tuple()) {
        options = args[0].items();
      } else {
        options.push_back(args[0]);
      }
      for (const Value& o : options) {
        if (!o.is_string()) {
          return TypeError(absl::StrCat(what, " first arg must be str or a tuple of str"));
        }
        if (name == "startswith" ? absl::StartsWith(s, o.as_string())
                                 : absl::EndsWith(s, o.as_string())) {
          return Value::Bool(true);
        }
      }
      return Value::Bool(false);
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" ||
        name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
        name == "islower" || name == "isupper" || name == "splitlines") {
      if (!args.empty() || !kwargs.empty()) {
        return TypeError(absl::StrCat(what, " takes no arguments here"));
      }
      if (name == "upper") return Value::String(AsciiUpper(s));
      if (name == "lower") return Value::String(AsciiLower(s));
      if (name == "title") return Value::String(PythonTitle(s));
      if (name == "capitalize") return Value::String(Capitalize(s));
      if (name == "splitlines") {
        std::vector<Value> out;
        for (std::string& line : SplitLines(s)) out.push_back(Value::String(std::move(line)));
        return Value::List(std::move(out));
      }
      return Value::Bool(StringPredicate(name, s));
    }
    if (name == "replace") {
      Args a(what, args, kwargs, {"old", "new", "count"});
      RETURN_IF_ERROR(a.Check());
      if (a.Get(0) == nullptr || a.Get(1) == nullptr || !a.Get(0)->is_string() ||
          !a.Get(1)->is_string()) {
        return TypeError(absl::StrCat(what, " takes two strings"));
      }
      ASSIGN_OR_RETURN(int64_t count, IntArg(a.GetOr(2, Value::Int(-1)), "count"));
      return CheckedString(PythonReplace(s, a.Get(0)->as_string(), a.Get(1)->as_string(), count));
    }
    if (name == "find" || name == "rfind" || name == "count") {
      if (args.size() != 1 || !kwargs.empty() || !args[0].is_string()) {
        return TypeError(absl::StrCat(what, " takes one string argument here"));
      }
      const std::string& sub = args[0].as_string();
      if (name == "count") {
        if (sub.empty()) return Value::Int(Length(self) + 1);
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value::Int(n);
      }
      const size_t p = name == "find" ? s.find(sub) : s.rfind(sub);
      return Value::Int(p == std::string::npos ? -1 : CodePointIndex(s, p));
    }
    if (name == "join") {
      if (args.size() != 1 || !kwargs.empty())
        return TypeError(absl::StrCat(what, " takes one argument"));
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(args[0]));
      std::string out;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string()) {
          return TypeError(absl::StrCat("sequence item ", i, ": expected str instance, ",
                                        items[i].TypeName(), " found"));
        }
        if (i > 0) out += s;
        out += items[i].as_string();
      }
      return CheckedString(std::move(out));
    }
    return TypeError(absl::StrCat(what, " is not supported"));
  }

  static bool StringPredicate(const std::string& name, const std::string& s) {
    if (s.empty()) return false;
    if (name == "isspace") {
      size_t pos = 0;
      while (pos < s.size()) {
        if (!IsPythonSpace(DecodeUtf8(s, &pos))) return false;
      }
      return true;
    }
    bool cased = false;
    for (char c : s) {
      const bool upper = absl::ascii_isupper(c), lower = absl::ascii_islower(c);
      if (name == "isdigit" && !absl::ascii_isdigit(c)) return false;
      if (name == "isalpha" && !absl::ascii_isalpha(c)) return false;
      if (name == "isalnum" && !absl::ascii_isalnum(c)) return false;
      if (name == "islower" && upper) return false;
      if (name == "isupper" && lower) return false;
      cased = cased || upper || lower;
    }
    return (name == "islower" || name == "isupper") ? cased : true;
  }

  // The attribute path "a.b" of a value, as filters' attribute= reads it.
  absl::StatusOr<Value> AttributePath(const Value& v, const std::string& path) {
    Value cur = v;
    for (absl::string_view part : absl::StrSplit(path, '.')) {
      int64_t index;
      if (absl::SimpleAtoi(part, &index)) {
        ASSIGN_OR_RETURN(cur, GetItem(cur, Value::Int(index)));
      } else {
        ASSIGN_OR_RETURN(cur, GetItem(cur, Value::String(std::string(part))));
      }
    }
    return cur;
  }

  absl::StatusOr<Value> ApplyFilter(const std::string& name, const Value& v,
                                    const std::vector<Value>& args,
                                    const std::vector<std::pair<std::string, Value>>& kwargs) {
    const std::string what = absl::StrCat("filter '", name, "'");
    auto no_args = [&]() -> absl::Status {
      if (!args.empty() || !kwargs.empty())
        return TypeError(absl::StrCat(what, " takes no arguments"));
      return absl::OkStatus();
    };
    if (name == "trim") {
      Args a(what, args, kwargs, {"chars"});
      RETURN_IF_ERROR(a.Check());
      const Value* chars = a.Get(0);
      const std::string* set =
          chars != nullptr && chars->is_string() ? &chars->as_string() : nullptr;
      return Value::String(PythonStrip(v.Str(), set, true, true));
    }
    if (name == "length" || name == "count") {
      RETURN_IF_ERROR(no_args());
      if (v.is_undefined()) return Value::Int(0);
      const int64_t n = Length(v);
      if (n < 0) return TypeError(absl::StrCat("object of type '", v.TypeName(), "' has no len()"));
      return Value::Int(n);
    }
    if (name == "tojson") {
      Args a(what, args, kwargs, {"ensure_ascii", "indent", "separators", "sort_keys"});
      // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None,
      // sort_keys=False); only indent is supported, the others at their defaults.
      RETURN_IF_ERROR(a.Check());
      const Value* ensure_ascii = a.Get(0);
      const Value* separators = a.Get(2);
      const Value* sort_keys = a.Get(3);
      if ((ensure_ascii != nullptr && ensure_ascii->Truthy()) ||
          (separators != nullptr && !separators->is_none()) ||
          (sort_keys != nullptr && sort_keys->Truthy())) {
        return TypeError("tojson supports only the indent argument");
      }
      int indent = -1;
      if (const Value* i = a.Get(1); i != nullptr && !i->is_none()) {
        ASSIGN_OR_RETURN(int64_t n, IntArg(*i, "tojson indent"));
        indent = static_cast<int>(std::clamp<int64_t>(n, 0, 64));
      }
      ASSIGN_OR_RETURN(std::string json, ToJson(v, indent));
      return CheckedString(std::move(json));
    }
    if (name == "string" || name == "safe") {
      RETURN_IF_ERROR(no_args());
      return Value::String(v.Str());
    }
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
      RETURN_IF_ERROR(no_args());
      const std::string s = v.Str();
      if (name == "upper") return Value::String(AsciiUpper(s));
      if (name == "lower") return Value::String(AsciiLower(s));
      if (name == "capitalize") return Value::String(Capitalize(s));
      return Value::String(JinjaTitle(s));
    }
    if (name == "escape" || name == "e") {
      RETURN_IF_ERROR(no_args());
      std::string out;
      for (char c : v.Str()) {
        switch (c) {
          case '&':
            out += "&amp;";
            break;
          case '<':
            out += "&lt;";
            break;
          case '>':
            out += "&gt;";
            break;
          case '"':
            out += "&#34;";
            break;
          case '\'':
            out += "&#39;";
            break;
          default:
            out.push_back(c);
        }
      }
      return CheckedString(std::move(out));
    }
    if (name == "first" || name == "last") {
      RETURN_IF_ERROR(no_args());
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
      if (items.empty())
        return Value::Undefined(absl::StrCat("No ", name, " item, sequence was empty."));
      return name == "first" ? items.front() : items.back();
    }
    if (name == "join") {
      Args a(what, args, kwargs, {"d", "attribute"});
      RETURN_IF_ERROR(a.Check());
      const std::string sep = a.GetOr(0, Value::String("")).Str();
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
      std::string out;
      for (size_t i = 0; i < items.size(); ++i) {
        Value item = items[i];
        if (const Value* attr = a.Get(1); attr != nullptr && !attr->is_none()) {
          ASSIGN_OR_RETURN(item, AttributePath(item, attr->Str()));
        }
        if (i > 0) out += sep;
        out += item.Str();
        if (static_cast<int64_t>(out.size()) > options_.max_output_bytes) break;
      }
      return CheckedString(std::move(out));
    }
    if (name == "default" || name == "d") {
      Args a(what, args, kwargs, {"default_value", "boolean"});
      RETURN_IF_ERROR(a.Check());
      const bool boolean = a.GetOr(1, Value::Bool(false)).Truthy();
      if (v.is_undefined() || (boolean && !v.Truthy())) return a.GetOr(0, Value::String(""));
      return v;
    }
    if (name == "items") {
      RETURN_IF_ERROR(no_args());
      if (v.is_undefined()) return Value::List({});
      if (!v.is_dict() || v.dict()->is_namespace) {
        return TypeError("Can only get item pairs from a mapping.");
      }
      return CallMethod(v, "items", {}, {});
    }
    if (name == "list") {
      RETURN_IF_ERROR(no_args());
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
      return Value::List(std::move(items));
    }
    if (name == "replace") {
      Args a(what, args, kwargs, {"old", "new", "count"});
      RETURN_IF_ERROR(a.Check());
      if (a.Get(0) == nullptr || a.Get(1) == nullptr) {
        return TypeError("filter 'replace' needs old and new");
      }
      const Value count = a.GetOr(2, Value::None());
      int64_t n = -1;
      if (!count.is_none()) {
        ASSIGN_OR_RETURN(n, IntArg(count, "count"));
      }
      return CheckedString(PythonReplace(v.Str(), a.Get(0)->Str(), a.Get(1)->Str(), n));
    }
    if (name == "int") {
      Args a(what, args, kwargs, {"default", "base"});
      RETURN_IF_ERROR(a.Check());
      const Value def = a.GetOr(0, Value::Int(0));
      if (v.is_undefined()) return UndefinedError(v);
      ASSIGN_OR_RETURN(int64_t base, IntArg(a.GetOr(1, Value::Int(10)), "base"));
      if (v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kBool)
        return Value::Int(v.as_int());
      if (v.kind() == Value::Kind::kFloat) {
        const double f = v.as_float();
        if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) return def;
        return Value::Int(static_cast<int64_t>(f));
      }
      if (v.is_string()) {
        std::string s = PythonStrip(v.as_string(), nullptr, true, true);
        s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
        if (base != 10) {
          char* end = nullptr;
          errno = 0;
          const long long n = std::strtoll(s.c_str(), &end, static_cast<int>(base));
          if (!s.empty() && end != nullptr && *end == '\0' && errno == 0) return Value::Int(n);
          return def;
        }
        int64_t n;
        if (absl::SimpleAtoi(s, &n)) return Value::Int(n);
        double f;
        if (absl::SimpleAtod(s, &f) && std::isfinite(f) && std::fabs(f) < 9.2e18) {
          return Value::Int(static_cast<int64_t>(f));
        }
      }
      return def;
    }
    if (name == "float") {
      Args a(what, args, kwargs, {"default"});
      RETURN_IF_ERROR(a.Check());
      const Value def = a.GetOr(0, Value::Float(0.0));
      if (v.is_undefined()) return UndefinedError(v);
      if (v.is_number()) return Value::Float(v.as_float());
      if (v.is_string()) {
        const std::string s = PythonStrip(v.as_string(), nullptr, true, true);
        double f;
        if (!s.empty() && absl::SimpleAtod(s, &f)) return Value::Float(f);
      }
      return def;
    }
    if (name == "abs") {
      RETURN_IF_ERROR(no_args());
      if (v.kind() == Value::Kind::kFloat) return Value::Float(std::fabs(v.as_float()));
      if (v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kBool) {
        if (v.as_int() == INT64_MIN) return TypeError("integer overflow");
        return Value::Int(std::abs(v.as_int()));
      }
      return TypeError(absl::StrCat("bad operand type for abs(): '", v.TypeName(), "'"));
    }
    if (name == "round") {
      Args a(what, args, kwargs, {"precision", "method"});
      RETURN_IF_ERROR(a.Check());
      ASSIGN_OR_RETURN(int64_t precision, IntArg(a.GetOr(0, Value::Int(0)), "precision"));
      const std::string method = a.GetOr(1, Value::String("common")).Str();
      if (!v.is_number()) return TypeError("filter 'round' needs a number");
      const double x = v.as_float();
      const double scale = std::pow(10.0, static_cast<double>(precision));
      if (method == "common") return Value::Float(RoundHalfEven(x, precision));
      if (method == "ceil") return Value::Float(std::ceil(x * scale) / scale);
      if (method == "floor") return Value::Float(std::floor(x * scale) / scale);
      return TypeError("method must be 'common', 'ceil' or 'floor'");
    }
    if (name == "reverse") {
      RETURN_IF_ERROR(no_args());
      if (v.is_string()) {
        const std::vector<size_t> offsets = CodePointOffsets(v.as_string());
        std::string out;
        for (size_t i = offsets.size() - 1; i > 0; --i) {
          out.append(v.as_string(), offsets[i - 1], offsets[i] - offsets[i - 1]);
        }
        return Value::String(std::move(out));
      }
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
      std::reverse(items.begin(), items.end());
      return Value::List(std::move(items));
    }
    if (name == "unique") {
      Args a(what, args, kwargs, {"case_sensitive", "attribute"});
      RETURN_IF_ERROR(a.Check());
      const bool case_sensitive = a.GetOr(0, Value::Bool(false)).Truthy();
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
      std::vector<Value> out, seen;
      for (const Value& item : items) {
        Value key = item;
        if (const Value* attr = a.Get(1); attr != nullptr && !attr->is_none()) {
          ASSIGN_OR_RETURN(key, AttributePath(item, attr->Str()));
        }
        if (!case_sensitive && key.is_string()) key = Value::String(AsciiLower(key.as_string()));
        bool dup = false;
        for (const Value& s : seen) dup = dup || s.Equals(key);
        if (dup) continue;
        seen.push_back(key);
        out.push_back(item);
      }
      return Value::List(std::move(out));
    }
    if (name == "sort") {
      Args a(what, args, kwargs, {"reverse", "case_sensitive", "attribute"});
      RETURN_IF_ERROR(a.Check());
      const bool reverse = a.GetOr(0, Value::Bool(false)).Truthy();
      const bool case_sensitive = a.GetOr(1, Value::Bool(false)).Truthy();
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
      std::vector<std::pair<Value, Value>> keyed;
      for (const Value& item : items) {
        Value key = item;
        if (const Value* attr = a.Get(2); attr != nullptr && !attr->is_none()) {
          ASSIGN_OR_RETURN(key, AttributePath(item, attr->Str()));
        }
        if (!case_sensitive && key.is_string()) key = Value::String(AsciiLower(key.as_string()));
        keyed.emplace_back(std::move(key), item);
      }
      absl::Status error;
      std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        absl::StatusOr<bool> less = reverse ? y.first.Less(x.first) : x.first.Less(y.first);
        if (!less.ok()) {
          error = less.status();
          return false;
        }
        return *less;
      });
      RETURN_IF_ERROR(error);
      std::vector<Value> out;
      for (auto& [key, item] : keyed) out.push_back(std::move(item));
      return Value::List(std::move(out));
    }
    if (name == "min" || name == "max" || name == "sum") {
      const bool is_sum = name == "sum";
      Args a(what, args, kwargs,
             is_sum ? std::vector<std::string>{"attribute", "start"}
                    : std::vector<std::string>{"case_sensitive", "attribute"});
      RETURN_IF_ERROR(a.Check());
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
      const Value* attr = a.Get(is_sum ? 0 : 1);
      if (is_sum) {
        Value total = a.GetOr(1, Value::Int(0));
        for (const Value& item : items) {
          Value x = item;
          if (attr != nullptr && !attr->is_none()) {
            ASSIGN_OR_RETURN(x, AttributePath(item, attr->Str()));
          }
          ASSIGN_OR_RETURN(total, BinaryOp("+", total, x));
        }
        return total;
      }
      const bool case_sensitive = a.GetOr(0, Value::Bool(false)).Truthy();
      if (items.empty())
        return Value::Undefined(absl::StrCat("No aggregated item, sequence was empty."));
      Value best = items[0], best_key;
      for (size_t i = 0; i < items.size(); ++i) {
        Value key = items[i];
        if (attr != nullptr && !attr->is_none()) {
          ASSIGN_OR_RETURN(key, AttributePath(items[i], attr->Str()));
        }
        if (!case_sensitive && key.is_string()) key = Value::String(AsciiLower(key.as_string()));
        if (i == 0) {
          best_key = key;
          continue;
        }
        ASSIGN_OR_RETURN(bool better, name == "min" ? key.Less(best_key) : best_key.Less(key));
        if (better) {
          best = items[i];
          best_key = key;
        }
      }
      return best;
    }
    if (name == "map") {
      // Jinja2 maps nothing over a false value (None, "", []).
      std::vector<Value> items;
      if (v.Truthy()) {
        ASSIGN_OR_RETURN(items, Iterate(v));
      }
      std::vector<Value> out;
      const Value* attribute = nullptr;
      const Value* def = nullptr;
      for (const auto& [key, value] : kwargs) {
        if (key == "attribute") attribute = &value;
        if (key == "default") def = &value;
      }
      if (attribute != nullptr) {
        if (!args.empty()) return TypeError("map: attribute= takes no positional arguments");
        for (const Value& item : items) {
          ASSIGN_OR_RETURN(Value x, AttributePath(item, attribute->Str()));
          if (x.is_undefined() && def != nullptr) x = *def;
          out.push_back(std::move(x));
        }
        return Value::List(std::move(out));
      }
      if (args.empty() || !args[0].is_string())
        return TypeError("map needs a filter name or attribute=");
      const std::vector<Value> rest(args.begin() + 1, args.end());
      for (const Value& item : items) {
        ASSIGN_OR_RETURN(Value x, ApplyFilter(args[0].as_string(), item, rest, kwargs));
        out.push_back(std::move(x));
      }
      return Value::List(std::move(out));
    }
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
      if (!kwargs.empty()) return TypeError(absl::StrCat(what, " takes no keyword arguments"));
      const bool by_attr = name == "selectattr" || name == "rejectattr";
      const bool keep_if = name == "select" || name == "selectattr";
      size_t next = 0;
      std::string attr;
      if (by_attr) {
        if (args.empty()) return TypeError(absl::StrCat(what, " needs an attribute name"));
        attr = args[0].Str();
        next = 1;
      }
      std::string test;
      if (next < args.size()) test = args[next++].Str();
      const std::vector<Value> test_args(args.begin() + static_cast<long>(next), args.end());
      // Jinja2 selects nothing from a false value (None, "", []).
      std::vector<Value> items;
      if (v.Truthy()) {
        ASSIGN_OR_RETURN(items, Iterate(v));
      }
      std::vector<Value> out;
      for (const Value& item : items) {
        Value x = item;
        if (by_attr) {
          ASSIGN_OR_RETURN(x, AttributePath(item, attr));
        }
        bool pass;
        if (test.empty()) {
          pass = x.Truthy();
        } else {
          ASSIGN_OR_RETURN(pass, ApplyTest(test, x, test_args));
        }
        if (pass == keep_if) out.push_back(item);
      }
      return Value::List(std::move(out));
    }
    if (name == "indent") {
      Args a(what, args, kwargs, {"width", "first", "blank"});
      RETURN_IF_ERROR(a.Check());
      const Value width = a.GetOr(0, Value::Int(4));
      std::string pad;
      if (width.is_string()) {
        pad = width.as_string();
      } else {
        ASSIGN_OR_RETURN(int64_t n, IntArg(width, "width"));
        pad = std::string(static_cast<size_t>(std::clamp<int64_t>(n, 0, 1024)), ' ');
      }
      const bool first = a.GetOr(1, Value::Bool(false)).Truthy();
      const bool blank = a.GetOr(2, Value::Bool(false)).Truthy();
      std::vector<std::string> lines = SplitLines(v.Str() + "\n");
      std::string out;
      if (blank) {
        out = absl::StrJoin(lines, "\n" + pad);
      } else {
        out = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) {
          out += "\n";
          if (!lines[i].empty()) out += pad;
          out += lines[i];
        }
      }
      if (first) out = pad + out;
      return CheckedString(std::move(out));
    }
    if (OneOf(name, {"wordcount", "batch", "slice", "center", "format", "truncate", "urlencode",
                     "xmlattr", "pprint", "filesizeformat", "striptags", "wordwrap", "dictsort",
                     "groupby", "attr", "forceescape", "urlize", "random"})) {
      return TypeError(absl::StrCat(what, " is not supported"));
    }
    return TypeError(absl::StrCat("no filter named '", name, "'"));
  }

  static bool OneOf(absl::string_view name, std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (name == n) return true;
    }
    return false;
  }

  absl::StatusOr<bool> ApplyTest(const std::string& name, const Value& v,
                                 const std::vector<Value>& args) {
    auto arity = [&](size_t n) -> absl::Status {
      if (args.size() != n) {
        return TypeError(absl::StrCat("test '", name, "' takes ", n, " argument(s)"));
      }
      return absl::OkStatus();
    };
    const Value::Kind k = v.kind();
    if (name == "defined" || name == "undefined") {
      RETURN_IF_ERROR(arity(0));
      return v.is_undefined() == (name == "undefined");
    }
    if (name == "none") {
      RETURN_IF_ERROR(arity(0));
      return v.is_none();
    }
    if (name == "string") {
      RETURN_IF_ERROR(arity(0));
      return v.is_string();
    }
    if (name == "number") {
      RETURN_IF_ERROR(arity(0));
      return v.is_number();
    }
    if (name == "integer") {
      RETURN_IF_ERROR(arity(0));
      return k == Value::Kind::kInt;
    }
    if (name == "float") {
      RETURN_IF_ERROR(arity(0));
      return k == Value::Kind::kFloat;
    }
    if (name == "boolean") {
      RETURN_IF_ERROR(arity(0));
      return k == Value::Kind::kBool;
    }
    if (name == "true" || name == "false") {
      RETURN_IF_ERROR(arity(0));
      return k == Value::Kind::kBool && v.as_bool() == (name == "true");
    }
    if (name == "mapping") {
      RETURN_IF_ERROR(arity(0));
      return v.is_dict() && !v.dict()->is_namespace;
    }
    if (name == "sequence") {
      RETURN_IF_ERROR(arity(0));
      // Jinja2's Undefined has __len__ and __getitem__, so it passes too.
      return v.is_undefined() || v.is_string() || v.is_list() ||
             (v.is_dict() && !v.dict()->is_namespace);
    }
    if (name == "iterable") {
      RETURN_IF_ERROR(arity(0));
      return v.is_undefined() || v.is_string() || v.is_list() ||
             (v.is_dict() && !v.dict()->is_namespace);
    }
    if (name == "callable") {
      RETURN_IF_ERROR(arity(0));
      // Jinja2's Undefined has __call__ (which raises), so it passes.
      return k == Value::Kind::kCallable || k == Value::Kind::kUndefined;
    }
    if (name == "odd" || name == "even") {
      RETURN_IF_ERROR(arity(0));
      // value % 2 == 1 (odd) or == 0 (even), floats included.
      ASSIGN_OR_RETURN(Value m, BinaryOp("%", v, Value::Int(2)));
      return m.Equals(Value::Int(name == "odd" ? 1 : 0));
    }
    if (name == "lower" || name == "upper") {
      RETURN_IF_ERROR(arity(0));
      return StringPredicate(name == "lower" ? "islower" : "isupper", v.Str());
    }
    if (name == "divisibleby") {
      RETURN_IF_ERROR(arity(1));
      if (!v.is_number() || !args[0].is_number()) return TypeError("divisibleby needs numbers");
      if (args[0].as_float() == 0) return TypeError("ZeroDivisionError: modulo by zero");
      ASSIGN_OR_RETURN(Value m, BinaryOp("%", v, args[0]));
      return !m.Truthy();
    }
    if (name == "eq" || name == "equalto" || name == "==") {
      RETURN_IF_ERROR(arity(1));
      return v.Equals(args[0]);
    }
    if (name == "ne" || name == "!=") {
      RETURN_IF_ERROR(arity(1));
      return !v.Equals(args[0]);
    }
    if (name == "lt" || name == "lessthan" || name == "<") {
      RETURN_IF_ERROR(arity(1));
      return CompareOp("<", v, args[0]);
    }
    if (name == "le" || name == "<=") {
      RETURN_IF_ERROR(arity(1));
      return CompareOp("<=", v, args[0]);
    }
    if (name == "gt" || name == "greaterthan" || name == ">") {
      RETURN_IF_ERROR(arity(1));
      return CompareOp(">", v, args[0]);
    }
    if (name == "ge" || name == ">=") {
      RETURN_IF_ERROR(arity(1));
      return CompareOp(">=", v, args[0]);
    }
    if (name == "in") {
      RETURN_IF_ERROR(arity(1));
      return Contains(args[0], v);
    }
    if (name == "sameas") {
      RETURN_IF_ERROR(arity(1));
      const Value& o = args[0];
      if (k != o.kind()) return false;
      switch (k) {
        case Value::Kind::kNone:
        case Value::Kind::kUndefined:
          return true;
        case Value::Kind::kBool:
          return v.as_bool() == o.as_bool();
        case Value::Kind::kList:
          return &v.items() == &o.items();
        case Value::Kind::kDict:
          return v.dict() == o.dict();
        default:
          return v.Equals(o);
      }
    }
    if (name == "escaped") {
      RETURN_IF_ERROR(arity(0));
      return false;
    }
    return TypeError(absl::StrCat("no test named '", name, "'"));
  }

  const RenderOptions& options_;
  Flow flow_ = Flow::kNormal;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  const Value* block_operand_ = nullptr;
  std::vector<ScopePtr> macro_scopes_;
};

}  // namespace

Template::Template(std::unique_ptr<Program> program) : program_(std::move(program)) {}
Template::~Template() = default;

absl::StatusOr<std::unique_ptr<Template>> Template::Parse(absl::string_view source) {
  auto program = std::make_unique<Program>();
  ASSIGN_OR_RETURN(program->body, ParseTemplate(source));
  return std::unique_ptr<Template>(new Template(std::move(program)));
}

absl::StatusOr<std::string> Template::Render(const nlohmann::ordered_json& context,
                                             const RenderOptions& options) const {
  if (!context.is_object()) {
    return absl::InvalidArgumentError("the template context must be a JSON object");
  }
  auto root = std::make_shared<Scope>();
  for (const auto& [key, value] : context.items()) root->Set(key, FromJson(value));
  std::string out;
  Renderer renderer(options);
  absl::Status status = renderer.RenderBody(program_->body, root, &out);
  RETURN_IF_ERROR(status);
  return out;
}

}  // namespace rlvr::jinja
