#include "common/base/utf8.h"

namespace rlvr::utf8 {
namespace {

// Valid range of the second byte of a sequence led by `lead`, per the
// well-formed table of the Unicode standard (Table 3-7). Returns the sequence
// length, or 0 when `lead` cannot start a sequence.
int LeadInfo(unsigned char lead, unsigned char* lo, unsigned char* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) {
    if (lead == 0xE0) *lo = 0xA0;
    if (lead == 0xED) *hi = 0x9F;
    return 3;
  }
  if (lead < 0xF5) {
    if (lead == 0xF0) *lo = 0x90;
    if (lead == 0xF4) *hi = 0x8F;
    return 4;
  }
  return 0;
}

// Number of bytes at s[i] that form a valid sequence (returned as positive) or
// the length of the maximal invalid subpart (returned as negative, >= 1 byte).
int Scan(absl::string_view s, size_t i, char32_t* cp) {
  const unsigned char lead = static_cast<unsigned char>(s[i]);
  unsigned char lo, hi;
  const int n = LeadInfo(lead, &lo, &hi);
  if (n == 0) return -1;
  if (n == 1) {
    *cp = lead;
    return 1;
  }
  char32_t v = lead & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    if (i + k >= s.size()) return -k;
    const unsigned char c = static_cast<unsigned char>(s[i + k]);
    const unsigned char l = k == 1 ? lo : 0x80;
    const unsigned char h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) return -k;
    v = (v << 6) | (c & 0x3F);
  }
  *cp = v;
  return n;
}

}  // namespace

int DecodeOne(absl::string_view s, size_t i, char32_t* cp) {
  if (i >= s.size()) return 0;
  const int n = Scan(s, i, cp);
  return n > 0 ? n : 0;
}

size_t FirstInvalid(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    const int n = Scan(s, i, &cp);
    if (n <= 0) return i;
    i += n;
  }
  return absl::string_view::npos;
}

void Append(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Lossy(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    char32_t cp;
    const int n = Scan(bytes, i, &cp);
    if (n > 0) {
      out.append(bytes.data() + i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      i += -n;
    }
  }
  return out;
}

}  // namespace rlvr::utf8
