#include "common/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rlvr::jinja {
namespace {

bool ContainsCodePoint(absl::string_view chars, uint32_t cp) {
  size_t pos = 0;
  while (pos < chars.size()) {
    if (DecodeUtf8(chars, &pos) == cp) return true;
  }
  return false;
}

void AppendJsonString(absl::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

absl::Status AppendJson(const Value& v, int indent, int depth, std::string* out) {
  if (depth > 512) return absl::InvalidArgumentError("tojson: nesting too deep");
  const std::string newline =
      indent >= 0 ? "\n" + std::string(static_cast<size_t>(indent) * (depth + 1), ' ') : "";
  const std::string close_newline =
      indent >= 0 ? "\n" + std::string(static_cast<size_t>(indent) * depth, ' ') : "";
  const char* item_sep = indent >= 0 ? "," : ", ";
  switch (v.kind()) {
    case Value::Kind::kNone:
      *out += "null";
      return absl::OkStatus();
    case Value::Kind::kBool:
      *out += v.as_bool() ? "true" : "false";
      return absl::OkStatus();
    case Value::Kind::kInt:
      absl::StrAppend(out, v.as_int());
      return absl::OkStatus();
    case Value::Kind::kFloat: {
      const double f = v.as_float();
      // json.dumps writes Python's float repr, and NaN/Infinity for the rest.
      if (std::isnan(f)) {
        *out += "NaN";
      } else if (std::isinf(f)) {
        *out += f > 0 ? "Infinity" : "-Infinity";
      } else {
        *out += FormatFloat(f);
      }
      return absl::OkStatus();
    }
    case Value::Kind::kString:
      AppendJsonString(v.as_string(), out);
      return absl::OkStatus();
    case Value::Kind::kList: {
      if (v.items().empty()) {
        *out += "[]";
        return absl::OkStatus();
      }
      out->push_back('[');
      bool first = true;
      for (const Value& item : v.items()) {
        if (!first) *out += item_sep;
        first = false;
        *out += newline;
        absl::Status s = AppendJson(item, indent, depth + 1, out);
        if (!s.ok()) return s;
      }
      *out += close_newline;
      out->push_back(']');
      return absl::OkStatus();
    }
    case Value::Kind::kDict: {
      if (v.dict()->is_namespace) break;
      if (v.dict()->entries.empty()) {
        *out += "{}";
        return absl::OkStatus();
      }
      out->push_back('{');
      bool first = true;
      for (const auto& [key, item] : v.dict()->entries) {
        if (!first) *out += item_sep;
        first = false;
        *out += newline;
        AppendJsonString(key, out);
        *out += ": ";
        absl::Status s = AppendJson(item, indent, depth + 1, out);
        if (!s.ok()) return s;
      }
      *out += close_newline;
      out->push_back('}');
      return absl::OkStatus();
    }
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("tojson: Object of type ", v.TypeName(), " is not JSON serializable"));
}

}  // namespace

uint32_t DecodeUtf8(absl::string_view s, size_t* pos) {
  const auto b0 = static_cast<unsigned char>(s[*pos]);
  int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xe ? 3 : (b0 >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || *pos + len > s.size()) {
    ++*pos;
    return b0;
  }
  uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1f) : len == 3 ? (b0 & 0x0f) : (b0 & 0x07);
  for (int i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[*pos + i]);
    if ((b & 0xc0) != 0x80) {
      ++*pos;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3f);
  }
  *pos += len;
  return cp;
}

const Value* DictData::Find(absl::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void DictData::Set(absl::string_view key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::string(key), std::move(value));
}

Value Value::Undefined(std::string hint) {
  Value v;
  v.str_ = std::move(hint);
  return v;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.int_ = i;
  return v;
}

Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.float_ = f;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.str_ = std::move(s);
  return v;
}

Value Value::List(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<ListData>();
  v.list_->items = std::move(items);
  v.list_->tuple = tuple;
  return v;
}

Value Value::Dict(std::shared_ptr<DictData> dict) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::move(dict);
  return v;
}

Value Value::NewDict() { return Dict(std::make_shared<DictData>()); }

Value Value::Function(std::shared_ptr<const Callable> callable) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.callable_ = std::move(callable);
  return v;
}

double Value::as_float() const {
  switch (kind_) {
    case Kind::kFloat:
      return float_;
    case Kind::kInt:
      return static_cast<double>(int_);
    case Kind::kBool:
      return bool_ ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return bool_;
    case Kind::kInt:
      return int_ != 0;
    case Kind::kFloat:
      return float_ != 0.0;
    case Kind::kString:
      return !str_.empty();
    case Kind::kList:
      return !list_->items.empty();
    case Kind::kDict:
      return dict_->is_namespace || !dict_->entries.empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

std::string Value::Str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return str_;
    default:
      return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return bool_ ? "True" : "False";
    case Kind::kInt:
      return absl::StrCat(int_);
    case Kind::kFloat:
      return FormatFloat(float_);
    case Kind::kString:
      return ReprString(str_);
    case Kind::kList: {
      std::string out = list_->tuple ? "(" : "[";
      for (size_t i = 0; i < list_->items.size(); ++i) {
        if (i > 0) out += ", ";
        out += list_->items[i].Repr();
      }
      if (list_->tuple && list_->items.size() == 1) out += ",";
      out += list_->tuple ? ")" : "]";
      return out;
    }
    case Kind::kDict: {
      std::string out = dict_->is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : dict_->entries) {
        if (!first) out += ", ";
        first = false;
        absl::StrAppend(&out, ReprString(k), ": ", v.Repr());
      }
      out += dict_->is_namespace ? "}>" : "}";
      return out;
    }
    case Kind::kCallable:
      return callable_->Describe();
  }
  return "";
}

bool Value::Equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::kFloat || other.kind_ == Kind::kFloat) return as_float() == other.as_float();
    return as_int() == other.as_int();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return str_ == other.str_;
    case Kind::kList: {
      if (list_ == other.list_) return true;
      if (list_->tuple != other.list_->tuple) return false;
      if (list_->items.size() != other.list_->items.size()) return false;
      for (size_t i = 0; i < list_->items.size(); ++i) {
        if (!list_->items[i].Equals(other.list_->items[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_ == other.dict_) return true;
      if (dict_->is_namespace || other.dict_->is_namespace) return false;
      if (dict_->entries.size() != other.dict_->entries.size()) return false;
      for (const auto& [k, v] : dict_->entries) {
        const Value* o = other.dict_->Find(k);
        if (o == nullptr || !v.Equals(*o)) return false;
      }
      return true;
    }
    case Kind::kCallable:
      return callable_ == other.callable_;
    default:
      return false;
  }
}

absl::StatusOr<bool> Value::Less(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::kFloat || other.kind_ == Kind::kFloat) return as_float() < other.as_float();
    return as_int() < other.as_int();
  }
  if (kind_ == Kind::kString && other.kind_ == Kind::kString) {
    // UTF-8 byte order is code point order.
    return str_ < other.str_;
  }
  if (kind_ == Kind::kList && other.kind_ == Kind::kList && list_->tuple == other.list_->tuple) {
    const auto& a = list_->items;
    const auto& b = other.list_->items;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (a[i].Equals(b[i])) continue;
      return a[i].Less(b[i]);
    }
    return a.size() < b.size();
  }
  return absl::InvalidArgumentError(absl::StrCat("'<' not supported between instances of '",
                                                 TypeName(), "' and '", other.TypeName(), "'"));
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return list_->tuple ? "tuple" : "list";
    case Kind::kDict:
      return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
  }
  return "?";
}

Value FromJson(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
      return Value::Int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::Float(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::String(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(FromJson(item));
      return Value::List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto dict = std::make_shared<DictData>();
      for (const auto& [key, item] : json.items()) dict->entries.emplace_back(key, FromJson(item));
      return Value::Dict(std::move(dict));
    }
    default:
      return Value::None();
  }
}

absl::StatusOr<std::string> ToJson(const Value& value, int indent) {
  std::string out;
  absl::Status s = AppendJson(value, indent, 0, &out);
  if (!s.ok()) return s;
  return out;
}

std::string FormatFloat(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0) return std::signbit(f) ? "-0.0" : "0.0";
  // The shortest round-trip digits, then Python's layout: positional for
  // decimal exponents in [-4, 16), scientific otherwise.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, end);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::atoi(sci.c_str() + e + 1);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  absl::StrAppendFormat(&out, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out;
}

std::string ReprString(absl::string_view s) {
  const bool has_single = s.find('\'') != absl::string_view::npos;
  const bool has_double = s.find('"') != absl::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = DecodeUtf8(s, &pos);
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0xa0) || cp == 0xad) {
      absl::StrAppendFormat(&out, "\\x%02x", cp);
    } else {
      absl::StrAppend(&out, s.substr(start, pos - start));
    }
  }
  out.push_back(quote);
  return out;
}

std::vector<size_t> CodePointOffsets(absl::string_view s) {
  std::vector<size_t> offsets;
  size_t pos = 0;
  while (pos < s.size()) {
    offsets.push_back(pos);
    DecodeUtf8(s, &pos);
  }
  offsets.push_back(s.size());
  return offsets;
}

bool IsPythonSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

std::string PythonStrip(absl::string_view s, const std::string* chars, bool left, bool right) {
  const std::vector<size_t> offsets = CodePointOffsets(s);
  const size_t n = offsets.size() - 1;
  auto strip_at = [&](size_t i) {
    size_t pos = offsets[i];
    const uint32_t cp = DecodeUtf8(s, &pos);
    return chars == nullptr ? IsPythonSpace(cp) : ContainsCodePoint(*chars, cp);
  };
  size_t begin = 0, end = n;
  if (left) {
    while (begin < end && strip_at(begin)) ++begin;
  }
  if (right) {
    while (end > begin && strip_at(end - 1)) --end;
  }
  return std::string(s.substr(offsets[begin], offsets[end] - offsets[begin]));
}

}  // namespace rlvr::jinja
