#include "common/tokenizer/onig_regex.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rlvr {

// White_Space: Cc 0009..000D, Zs 0020, Cc 0085, Zs 00A0, 1680, 2000..200A,
// Zl 2028, Zp 2029, Zs 202F, 205F, 3000.
const char kOnigSpaceClassBody[] =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}"
    "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

namespace {

constexpr char kWordBody[] = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
constexpr char kHexBody[] = "0-9A-Fa-f";

absl::Status Unsupported(absl::string_view what, size_t at) {
  return absl::InvalidArgumentError(
      absl::StrCat("regex: unsupported Oniguruma construct ", what, " at offset ", at));
}

}  // namespace

absl::StatusOr<std::string> OnigToPcre2(absl::string_view p) {
  std::string out;
  out.reserve(p.size() * 2);
  int class_depth = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) return Unsupported("trailing backslash", i);
      const char e = p[++i];
      const bool in_class = class_depth > 0;
      const char* body = nullptr;
      bool negated = false;
      switch (e) {
        case 's':
        case 'S':
          body = kOnigSpaceClassBody;
          negated = e == 'S';
          break;
        case 'w':
        case 'W':
          body = kWordBody;
          negated = e == 'W';
          break;
        case 'h':
        case 'H':
          body = kHexBody;
          negated = e == 'H';
          break;
        case 'v':
          out += "\\x{B}";
          continue;
        case 'b':
        case 'B':
        case 'G':
        case 'z':
        case 'Z':
          if (!in_class) return Unsupported(absl::StrCat("\\", std::string(1, e)), i - 1);
          break;
        default:
          break;
      }
      if (body != nullptr) {
        if (in_class && negated) {
          return Unsupported(absl::StrCat("\\", std::string(1, e), " inside a class"), i - 1);
        }
        if (in_class) {
          out += body;
        } else {
          absl::StrAppend(&out, negated ? "[^" : "[", body, "]");
        }
        continue;
      }
      out.push_back('\\');
      out.push_back(e);
      continue;
    }
    if (class_depth > 0) {
      if (c == '[') {
        // A nested class (Oniguruma set syntax); PCRE2 only knows POSIX
        // [:name:] here.
        if (i + 1 < p.size() && p[i + 1] == ':') {
          out.push_back(c);
          continue;
        }
        return Unsupported("nested class", i);
      }
      if (c == '&' && i + 1 < p.size() && p[i + 1] == '&') return Unsupported("&&", i);
      if (c == ']') --class_depth;
      out.push_back(c);
      continue;
    }
    switch (c) {
      case '[': {
        ++class_depth;
        out.push_back(c);
        // A leading '^' and a ']' right after the opening (or after '^') are
        // literal members, not the end of the class.
        if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
        if (i + 1 < p.size() && p[i + 1] == ']') {
          out += "\\]";
          ++i;
        }
        break;
      }
      case '^':
      case '$':
        return Unsupported(std::string(1, c), i);
      case '(':
        if (i + 1 < p.size() && p[i + 1] == '?') {
          const char k = i + 2 < p.size() ? p[i + 2] : '\0';
          const bool plain = k == ':' || k == '=' || k == '!' || k == '>' || k == 'i' ||
                             (k == '<' && i + 3 < p.size() && (p[i + 3] == '=' || p[i + 3] == '!'));
          if (!plain) return Unsupported("(? group", i);
          if (k == 'i') {
            // (?i:...) or (?i) only; (?im...) and friends are rejected.
            const char after = i + 3 < p.size() ? p[i + 3] : '\0';
            if (after != ':' && after != ')') return Unsupported("inline options", i);
          }
        }
        out.push_back(c);
        break;
      default:
        out.push_back(c);
    }
  }
  if (class_depth != 0) return Unsupported("unterminated class", p.size());
  return out;
}

}  // namespace rlvr
