// Lexer and parser of the Jinja engine (internal to common/jinja): template
// text to statements, with Jinja2's whitespace rules as Hugging Face
// configures them (trim_blocks, lstrip_blocks, no trailing newline kept,
// "\r\n" and "\r" read as "\n").
//
// Errors: InvalidArgument "line L, column C: <what>" for any syntax error,
// an unknown tag, or a tag Hugging Face templates cannot use (extends,
// include, import, ...). Nesting deeper than kMaxNesting is an error too, so
// that no input overflows the stack.
#ifndef RLVR_COMMON_JINJA_PARSER_H_
#define RLVR_COMMON_JINJA_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/jinja/ast.h"

namespace rlvr::jinja {

inline constexpr int kMaxNesting = 200;

absl::StatusOr<Body> ParseTemplate(absl::string_view source);

}  // namespace rlvr::jinja

#endif  // RLVR_COMMON_JINJA_PARSER_H_
