// UTF-8 helpers (the Hugging Face tokenizer, the Jinja engine): validation,
// encoding one code point, and the lossy decoding Hugging Face applies to
// decoded bytes.
// All functions are pure and thread-safe.
#ifndef RLVR_COMMON_BASE_UTF8_H_
#define RLVR_COMMON_BASE_UTF8_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace rlvr::utf8 {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when the
// bytes there are not a valid sequence (bad lead byte, missing or bad
// continuation, overlong form, surrogate, > U+10FFFF). Decoded value in *cp.
int DecodeOne(absl::string_view s, size_t i, char32_t* cp);

// Offset of the first byte that does not start a valid sequence, or npos.
size_t FirstInvalid(absl::string_view s);

// Appends the UTF-8 encoding of `cp` (<= 0x10FFFF). A surrogate (not a scalar
// value) is written in its 3-byte form, which is not valid UTF-8.
void Append(char32_t cp, std::string* out);

// `bytes` with every maximal invalid subsequence replaced by U+FFFD, the way
// Rust's String::from_utf8_lossy does (Unicode's "substitution of maximal
// subparts"): a truncated but otherwise valid prefix of a sequence is one
// U+FFFD, a byte that cannot start or continue a sequence is one U+FFFD.
std::string Lossy(absl::string_view bytes);

}  // namespace rlvr::utf8

#endif  // RLVR_COMMON_BASE_UTF8_H_
