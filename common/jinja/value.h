// Values of the Jinja engine (common/jinja/template.h), with the Python
// semantics Jinja2 gives them: truthiness, str() and repr(), equality and
// ordering, and json.dumps as Hugging Face's `tojson` filter calls it.
//
// A Value is undefined, None, a bool, an int (64-bit; overflow is an error
// where it is computed), a float, a UTF-8 string, a list or tuple, a dict
// (string keys, insertion order; a namespace() is a dict whose attributes
// `set` may assign), or a callable (a macro, a global function or a bound
// method; see template.cc). Lists and dicts are shared by reference, as in
// Python; nothing but namespace assignment mutates them.
//
// Thread safety: a Value is not synchronized; the values of one Render stay
// in that call.
#ifndef RLVR_COMMON_JINJA_VALUE_H_
#define RLVR_COMMON_JINJA_VALUE_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvr::jinja {

class Value;

struct ListData {
  std::vector<Value> items;
  bool tuple = false;  // Printed "(a, b)" rather than "[a, b]".
};

struct DictData {
  std::vector<std::pair<std::string, Value>> entries;  // Insertion order.
  bool is_namespace = false;

  const Value* Find(absl::string_view key) const;
  void Set(absl::string_view key, Value value);
};

// What a callable value calls; the interpreter downcasts it.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual std::string Describe() const = 0;  // For str() and error messages.
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  // An undefined value; `hint` names what was looked up ("'x'", "'dict object' has no
  // attribute 'y'") for the error raised when it is used where Jinja2 fails.
  Value() = default;
  static Value Undefined(std::string hint);
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value List(std::vector<Value> items, bool tuple = false);
  static Value Dict(std::shared_ptr<DictData> dict);
  static Value NewDict();
  static Value Function(std::shared_ptr<const Callable> callable);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  // int, float or bool (bool is a number in Python).
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }

  bool as_bool() const { return bool_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? int64_t{bool_} : int_; }
  double as_float() const;                               // Of any number.
  const std::string& as_string() const { return str_; }  // Also an undefined's hint.
  const std::vector<Value>& items() const { return list_->items; }
  bool is_tuple() const { return list_->tuple; }
  const std::shared_ptr<DictData>& dict() const { return dict_; }
  const std::shared_ptr<const Callable>& callable() const { return callable_; }

  // Python truthiness (undefined is false).
  bool Truthy() const;
  // Python str(); undefined is "".
  std::string Str() const;
  // Python repr() (an undefined value inside a list prints "Undefined").
  std::string Repr() const;
  // Python ==: numbers compare by value (True == 1), lists and dicts deeply;
  // undefined equals only undefined.
  bool Equals(const Value& other) const;
  // Python's ordering (<): numbers, strings (by code point), lists
  // lexicographically. Anything else is an InvalidArgument.
  absl::StatusOr<bool> Less(const Value& other) const;

  // The type name Python would print ("str", "int", "dict", ...).
  std::string TypeName() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::shared_ptr<ListData> list_;
  std::shared_ptr<DictData> dict_;
  std::shared_ptr<const Callable> callable_;
};

// A JSON document as values (objects keep their key order).
Value FromJson(const nlohmann::ordered_json& json);

// json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=False) with
// json's default separators: indent < 0 is None (", " and ": "), otherwise
// newlines and `indent` spaces per level ("," and ": "). Undefined and
// callables are an InvalidArgument, as json.dumps raises TypeError.
absl::StatusOr<std::string> ToJson(const Value& value, int indent);

// Python's repr() of a float: the shortest text that reads back the same,
// "1.0", "1e-05", "1e+20", "inf", "nan".
std::string FormatFloat(double f);

// Python's repr() of a string: single quotes unless it holds ' and no ".
std::string ReprString(absl::string_view s);

// UTF-8 helpers (Python strings index code points). An invalid byte counts
// as one code point.
// Decodes the code point at s[*pos] and advances *pos; an invalid byte
// decodes as itself (0x80..0xff) and advances one byte.
uint32_t DecodeUtf8(absl::string_view s, size_t* pos);
std::vector<size_t> CodePointOffsets(absl::string_view s);  // Start of each, then s.size().
// Python's str.isspace() for one code point.
bool IsPythonSpace(uint32_t code_point);
// Python's str.strip/lstrip/rstrip: without `chars` Unicode whitespace,
// otherwise any code point of `chars`.
std::string PythonStrip(absl::string_view s, const std::string* chars, bool left, bool right);

}  // namespace rlvr::jinja

#endif  // RLVR_COMMON_JINJA_VALUE_H_
