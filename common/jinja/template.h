// A Jinja2 template engine for Hugging Face chat templates.
//
// Renders what Hugging Face transformers renders for
// tokenizer.apply_chat_template(...): Jinja2 in an ImmutableSandboxedEnvironment
// with trim_blocks and lstrip_blocks, the loopcontrols extension (break,
// continue), the globals raise_exception(msg) and strftime_now(fmt), and
// transformers' `tojson` filter (json.dumps with ensure_ascii=False, an
// optional indent, no key sorting). The supported language:
//  - text, {{ expr }}, {% tag %}, {# comment #}, whitespace control with "-"
//    and "+", {% raw %};
//  - if/elif/else; for (tuple targets, `for x in xs if cond`, else, loop.index,
//    index0, revindex, revindex0, first, last, length, previtem, nextitem),
//    break, continue; set (names, tuples, `ns.attr` on a namespace(), block
//    set); macro and macro calls (positional, keyword, defaults); filter
//    blocks; transformers' {% generation %} (rendered as is);
//  - literals (strings with Python escapes, ints, floats, true/True/...,
//    lists, tuples, dicts), attribute and item access (`d.key` falls back to
//    the key, as in Jinja), slices, + - * / // % ** ~, comparisons (chained),
//    in / not in, and/or/not, conditional expressions, calls;
//  - the filters, tests, globals and str/dict methods listed in template.cc
//    (kFilters, kTests, the method tables), with Python's semantics:
//    truthiness, str() ("None", "True", "1.0"), code-point string indexing.
// Jinja2's default Undefined: an unknown name or missing key/attribute is
// undefined; it prints as "", is false, iterates as empty and `is defined`
// is false, but an attribute or item of it, arithmetic on it or calling it
// is an error.
//
// Not supported (a parse error or a render error that names them):
// extends/include/import/block/call/with tags, recursive loops, loop.cycle,
// *args/**kwargs, macro varargs/kwargs/caller, string % formatting and
// str.format, mutation of lists and dicts (as the immutable sandbox refuses
// it). Case mapping (upper, lower, title, capitalize) is ASCII-only; other
// characters pass through unchanged. Integers are 64-bit (overflow is an
// error). range() makes a list (it prints as one).
//
// Errors: absl::Status with "line L, column C: <message>" (the template's
// line and column): InvalidArgument for syntax errors, unknown filters or
// tests, use of an undefined value, type errors and raise_exception(msg)
// (its message is kept); ResourceExhausted when a render exceeds a limit of
// RenderOptions. Rendering reads only the context given and the options'
// clock; it never touches files, the environment or the process.
//
// Thread safety: a Template is immutable after Parse; Render may be called
// from several threads at once.
#ifndef RLVR_COMMON_JINJA_TEMPLATE_H_
#define RLVR_COMMON_JINJA_TEMPLATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace rlvr::jinja {

struct RenderOptions {
  // strftime_now(fmt)'s clock and time zone (transformers calls
  // datetime.now(), the local time). Tests pin both.
  std::function<absl::Time()> now = [] { return absl::Now(); };
  absl::TimeZone time_zone = absl::LocalTimeZone();
  // Bytes of output, and of any one string made while rendering.
  int64_t max_output_bytes = 16 << 20;
  // Loop iterations of one render, all loops together (and list sizes made
  // by repetition).
  int64_t max_loop_iterations = 1'000'000;
  // Nested macro calls.
  int max_call_depth = 64;
};

struct Program;

class Template {
 public:
  // Parses `source` (the chat_template text). InvalidArgument with the line
  // and column of the first syntax error.
  static absl::StatusOr<std::unique_ptr<Template>> Parse(absl::string_view source);

  ~Template();
  Template(const Template&) = delete;
  Template& operator=(const Template&) = delete;

  // Renders with the variables of `context` (a JSON object: messages,
  // add_generation_prompt, bos_token, ...; object keys keep their order).
  // A context that is not an object is an InvalidArgument.
  absl::StatusOr<std::string> Render(const nlohmann::ordered_json& context,
                                     const RenderOptions& options = {}) const;

 private:
  explicit Template(std::unique_ptr<Program> program);
  std::unique_ptr<Program> program_;
};

}  // namespace rlvr::jinja

#endif  // RLVR_COMMON_JINJA_TEMPLATE_H_
