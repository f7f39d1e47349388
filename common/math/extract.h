// Finding the final answer in a completion, and the answer in a reference,
// for the math verifier (docs/math-verifier.md).
//
// Completion: only the text after the last "</think>" when there is one;
// fenced code blocks (``` ... ```, except ```latex / ```tex / ```math) and
// inline `code` are ignored. Then, in order:
//  1. the last complete \boxed{...} or \fbox{...}; boxes right before it,
//     separated only by commas, "and", "or", spaces or math delimiters, join
//     it as a list (\boxed{-2} and \boxed{1} -> "-2, 1"). An unterminated box
//     after it (a completion cut off inside \boxed{) means no answer;
//  2. the text after the last "final answer is", "answer is", "answer:" or
//     "####" (case-insensitive), to the end of its line or sentence: its
//     first math span ($...$, \(...\)), else all of it when it parses, else
//     its last number;
//  3. the last math span or plain number of the text, whichever ends later.
//
// Thread safety: pure functions.
#ifndef RLVR_COMMON_MATH_EXTRACT_H_
#define RLVR_COMMON_MATH_EXTRACT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace rlvr::math {

enum class AnswerSource {
  kNone,    // nothing found
  kBox,     // \boxed{...} / \fbox{...}
  kPhrase,  // after "final answer is" / "answer:" / "####"
  kSpan,    // the last math span or number
};

struct Extracted {
  AnswerSource source = AnswerSource::kNone;
  std::string text;            // The answer as written (not normalised).
  bool truncated_box = false;  // kNone because the last box never closes.
};

Extracted ExtractAnswer(absl::string_view completion);

// The answer part of a reference: the content of its last complete box, else
// the text after its last "####" (GSM8K solutions), else all of it.
std::string ReferenceAnswer(absl::string_view reference);

// "box", "phrase", "span", "none".
const char* SourceName(AnswerSource source);

}  // namespace rlvr::math

#endif  // RLVR_COMMON_MATH_EXTRACT_H_
