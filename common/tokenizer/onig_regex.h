// Translation of the Oniguruma patterns in Hugging Face `tokenizer.json`
// Split pre-tokenizers into PCRE2 patterns with the same matches.
//
// Hugging Face's Rust `tokenizers` compiles these patterns with the `onig`
// crate (Oniguruma, UTF-8, default syntax). PCRE2 with PCRE2_UTF | PCRE2_UCP
// agrees on `\p{..}`, `\d`, `(?i:..)`, lookahead and counted repeats, but not
// on these escapes, which are rewritten to explicit classes:
//   \s  Oniguruma (Unicode): U+0009..U+000D, U+0085, and the Z categories
//       (Zs, Zl, Zp) -- the White_Space property. PCRE2/UCP's \s lacks U+0085.
//   \S  the complement of the above.
//   \w  Oniguruma: Letter | Mark | Number | Connector_Punctuation (PCRE2 10.42:
//       L, N and '_' only); \W its complement.
//   \h  Oniguruma: hex digit (PCRE2: horizontal space); \H its complement.
//   \v  Oniguruma: U+000B only (PCRE2: vertical space class).
// Constructs whose meaning differs and that no supported model uses are
// rejected (InvalidArgument naming the construct): ^ and $ outside a class,
// \b \B \G \z \Z, inline option groups other than (?i...), class
// intersection (&&), and \S \W \H inside a bracketed class.
// Thread safety: pure function.
#ifndef RLVR_COMMON_TOKENIZER_ONIG_REGEX_H_
#define RLVR_COMMON_TOKENIZER_ONIG_REGEX_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvr {

// The members of Oniguruma's Unicode `\s`, as the body of a PCRE2 class
// (no brackets).
extern const char kOnigSpaceClassBody[];

absl::StatusOr<std::string> OnigToPcre2(absl::string_view pattern);

}  // namespace rlvr

#endif  // RLVR_COMMON_TOKENIZER_ONIG_REGEX_H_
