#include "common/math/bigint.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace rlvr::math {
namespace {

// Intermediate products (a cross multiplication before reduction) may reach
// twice the bound of a stored value.
constexpr int kMaxIntermediateBits = 2 * kMaxBits + 64;

bool Charge(WorkBudget* budget, int64_t units) {
  return budget == nullptr || budget->Spend(std::max<int64_t>(units, 1));
}

using Limbs = std::vector<uint32_t>;

void TrimLimbs(Limbs* v) {
  while (!v->empty() && v->back() == 0) v->pop_back();
}

int CompareLimbs(const Limbs& a, const Limbs& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

Limbs AddLimbs(const Limbs& a, const Limbs& b) {
  const Limbs& x = a.size() >= b.size() ? a : b;
  const Limbs& y = a.size() >= b.size() ? b : a;
  Limbs out(x.size() + 1);
  uint64_t carry = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    uint64_t s = uint64_t{x[i]} + (i < y.size() ? y[i] : 0) + carry;
    out[i] = static_cast<uint32_t>(s);
    carry = s >> 32;
  }
  out[x.size()] = static_cast<uint32_t>(carry);
  TrimLimbs(&out);
  return out;
}

// a - b for |a| >= |b|.
Limbs SubLimbs(const Limbs& a, const Limbs& b) {
  Limbs out(a.size());
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t d = int64_t{a[i]} - (i < b.size() ? b[i] : 0) - borrow;
    borrow = d < 0 ? 1 : 0;
    out[i] = static_cast<uint32_t>(d + (borrow << 32));
  }
  TrimLimbs(&out);
  return out;
}

Limbs MulLimbs(const Limbs& a, const Limbs& b) {
  if (a.empty() || b.empty()) return {};
  Limbs out(a.size() + b.size(), 0);
  for (size_t i = 0; i < a.size(); ++i) {
    uint64_t carry = 0;
    for (size_t j = 0; j < b.size(); ++j) {
      uint64_t t = uint64_t{a[i]} * b[j] + out[i + j] + carry;
      out[i + j] = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    out[i + b.size()] = static_cast<uint32_t>(carry);
  }
  TrimLimbs(&out);
  return out;
}

int BitsOf(const Limbs& v) {
  if (v.empty()) return 0;
  int top = 32 - __builtin_clz(v.back());
  return static_cast<int>(32 * (v.size() - 1)) + top;
}

// Quotient and remainder of u / v (v non-empty): Knuth, TAOCP vol. 2, 4.3.1,
// Algorithm D, on 32-bit limbs.
std::pair<Limbs, Limbs> DivModLimbs(const Limbs& u, const Limbs& v) {
  if (CompareLimbs(u, v) < 0) return {{}, u};
  if (v.size() == 1) {
    Limbs q(u.size());
    uint64_t r = 0;
    for (size_t i = u.size(); i-- > 0;) {
      uint64_t cur = (r << 32) | u[i];
      q[i] = static_cast<uint32_t>(cur / v[0]);
      r = cur % v[0];
    }
    TrimLimbs(&q);
    Limbs rem;
    if (r != 0) rem.push_back(static_cast<uint32_t>(r));
    return {q, rem};
  }
  const int s = __builtin_clz(v.back());
  const size_t n = v.size();
  const size_t m = u.size() - n;
  // Normalise so that the divisor's top bit is set.
  Limbs vn(n), un(u.size() + 1);
  for (size_t i = n - 1; i > 0; --i) {
    vn[i] = (v[i] << s) | (s == 0 ? 0 : static_cast<uint32_t>(uint64_t{v[i - 1]} >> (32 - s)));
  }
  vn[0] = v[0] << s;
  un[u.size()] = s == 0 ? 0 : static_cast<uint32_t>(uint64_t{u.back()} >> (32 - s));
  for (size_t i = u.size() - 1; i > 0; --i) {
    un[i] = (u[i] << s) | (s == 0 ? 0 : static_cast<uint32_t>(uint64_t{u[i - 1]} >> (32 - s)));
  }
  un[0] = u[0] << s;
  Limbs q(m + 1);
  constexpr uint64_t kBase = uint64_t{1} << 32;
  for (size_t j = m + 1; j-- > 0;) {
    const uint64_t top = (uint64_t{un[j + n]} << 32) | un[j + n - 1];
    uint64_t qhat = top / vn[n - 1];
    uint64_t rhat = top % vn[n - 1];
    while (qhat >= kBase || qhat * vn[n - 2] > ((rhat << 32) | un[j + n - 2])) {
      --qhat;
      rhat += vn[n - 1];
      if (rhat >= kBase) break;
    }
    // Multiply and subtract.
    int64_t borrow = 0;
    uint64_t carry = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t p = qhat * vn[i] + carry;
      carry = p >> 32;
      int64_t t = int64_t{un[i + j]} - borrow - static_cast<int64_t>(p & 0xffffffffULL);
      un[i + j] = static_cast<uint32_t>(t);
      borrow = t < 0 ? 1 : 0;
    }
    int64_t t = int64_t{un[j + n]} - borrow - static_cast<int64_t>(carry);
    un[j + n] = static_cast<uint32_t>(t);
    if (t < 0) {
      // qhat was one too large: add the divisor back.
      --qhat;
      uint64_t c = 0;
      for (size_t i = 0; i < n; ++i) {
        uint64_t sum = uint64_t{un[i + j]} + vn[i] + c;
        un[i + j] = static_cast<uint32_t>(sum);
        c = sum >> 32;
      }
      un[j + n] = static_cast<uint32_t>(uint64_t{un[j + n]} + c);
    }
    q[j] = static_cast<uint32_t>(qhat);
  }
  Limbs r(n);
  for (size_t i = 0; i < n; ++i) {
    r[i] = (un[i] >> s) | (s == 0 ? 0 : static_cast<uint32_t>(uint64_t{un[i + 1]} << (32 - s)));
  }
  TrimLimbs(&q);
  TrimLimbs(&r);
  return {q, r};
}

}  // namespace

BigInt::BigInt(int64_t v) {
  negative_ = v < 0;
  uint64_t m = negative_ ? ~static_cast<uint64_t>(v) + 1 : static_cast<uint64_t>(v);
  while (m != 0) {
    mag_.push_back(static_cast<uint32_t>(m));
    m >>= 32;
  }
}

void BigInt::Trim() {
  TrimLimbs(&mag_);
  if (mag_.empty()) negative_ = false;
}

std::optional<BigInt> BigInt::FromDecimal(absl::string_view digits) {
  if (digits.empty()) return std::nullopt;
  // 4096 bits hold 1233 decimal digits; leading zeros are free.
  size_t first = digits.find_first_not_of('0');
  if (first == absl::string_view::npos) return BigInt();
  digits.remove_prefix(first);
  if (digits.size() > 1240) return std::nullopt;
  BigInt out;
  for (size_t i = 0; i < digits.size(); i += 9) {
    const size_t len = std::min<size_t>(9, digits.size() - i);
    uint32_t chunk = 0;
    uint32_t scale = 1;
    for (size_t k = 0; k < len; ++k) {
      const char c = digits[i + k];
      if (c < '0' || c > '9') return std::nullopt;
      chunk = chunk * 10 + static_cast<uint32_t>(c - '0');
      scale *= 10;
    }
    // out = out * scale + chunk.
    uint64_t carry = chunk;
    for (uint32_t& limb : out.mag_) {
      uint64_t t = uint64_t{limb} * scale + carry;
      limb = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    if (carry != 0) out.mag_.push_back(static_cast<uint32_t>(carry));
  }
  out.Trim();
  if (out.bits() > kMaxBits) return std::nullopt;
  return out;
}

int BigInt::bits() const { return BitsOf(mag_); }

std::optional<int64_t> BigInt::ToInt64() const {
  if (mag_.size() > 2) return std::nullopt;
  uint64_t m = 0;
  for (size_t i = mag_.size(); i-- > 0;) m = (m << 32) | mag_[i];
  if (negative_) {
    if (m > (uint64_t{1} << 63)) return std::nullopt;
    return static_cast<int64_t>(~m + 1);
  }
  if (m >= (uint64_t{1} << 63)) return std::nullopt;
  return static_cast<int64_t>(m);
}

long double BigInt::ToLongDouble() const {
  long double v = 0;
  // The top three limbs carry more than a long double's 64-bit mantissa.
  const size_t n = mag_.size();
  const size_t low = n > 3 ? n - 3 : 0;
  for (size_t i = n; i-- > low;) v = v * 4294967296.0L + mag_[i];
  if (low > 0) v = std::ldexp(v, static_cast<int>(32 * low));
  return negative_ ? -v : v;
}

std::string BigInt::ToString() const {
  if (mag_.empty()) return "0";
  Limbs cur = mag_;
  std::vector<uint32_t> chunks;  // base 10^9, least significant first
  while (!cur.empty()) {
    uint64_t r = 0;
    for (size_t i = cur.size(); i-- > 0;) {
      uint64_t t = (r << 32) | cur[i];
      cur[i] = static_cast<uint32_t>(t / 1000000000u);
      r = t % 1000000000u;
    }
    TrimLimbs(&cur);
    chunks.push_back(static_cast<uint32_t>(r));
  }
  std::string out = negative_ ? "-" : "";
  out += std::to_string(chunks.back());
  for (size_t i = chunks.size() - 1; i-- > 0;) {
    std::string part = std::to_string(chunks[i]);
    out += std::string(9 - part.size(), '0') + part;
  }
  return out;
}

BigInt BigInt::Negated() const {
  BigInt out = *this;
  if (!out.mag_.empty()) out.negative_ = !out.negative_;
  return out;
}

BigInt BigInt::Abs() const {
  BigInt out = *this;
  out.negative_ = false;
  return out;
}

int BigInt::CompareMagnitude(const BigInt& a, const BigInt& b) {
  return CompareLimbs(a.mag_, b.mag_);
}

int BigInt::Compare(const BigInt& a, const BigInt& b) {
  if (a.negative_ != b.negative_) return a.negative_ ? -1 : 1;
  const int m = CompareLimbs(a.mag_, b.mag_);
  return a.negative_ ? -m : m;
}

std::optional<BigInt> BigInt::Add(const BigInt& a, const BigInt& b, WorkBudget* budget) {
  if (!Charge(budget, static_cast<int64_t>(std::max(a.mag_.size(), b.mag_.size())))) {
    return std::nullopt;
  }
  BigInt out;
  if (a.negative_ == b.negative_) {
    out.mag_ = AddLimbs(a.mag_, b.mag_);
    out.negative_ = a.negative_;
  } else if (CompareLimbs(a.mag_, b.mag_) >= 0) {
    out.mag_ = SubLimbs(a.mag_, b.mag_);
    out.negative_ = a.negative_;
  } else {
    out.mag_ = SubLimbs(b.mag_, a.mag_);
    out.negative_ = b.negative_;
  }
  out.Trim();
  if (out.bits() > kMaxIntermediateBits) return std::nullopt;
  return out;
}

std::optional<BigInt> BigInt::Sub(const BigInt& a, const BigInt& b, WorkBudget* budget) {
  return Add(a, b.Negated(), budget);
}

std::optional<BigInt> BigInt::Mul(const BigInt& a, const BigInt& b, WorkBudget* budget) {
  if (a.bits() + b.bits() > kMaxIntermediateBits + 1) return std::nullopt;
  if (!Charge(budget, static_cast<int64_t>(a.mag_.size() * b.mag_.size()))) return std::nullopt;
  BigInt out;
  out.mag_ = MulLimbs(a.mag_, b.mag_);
  out.negative_ = a.negative_ != b.negative_;
  out.Trim();
  if (out.bits() > kMaxIntermediateBits) return std::nullopt;
  return out;
}

std::optional<std::pair<BigInt, BigInt>> BigInt::DivMod(const BigInt& a, const BigInt& b,
                                                        WorkBudget* budget) {
  if (b.is_zero()) return std::nullopt;
  const int64_t cost = static_cast<int64_t>(
      std::max<size_t>(1, a.mag_.size() >= b.mag_.size() ? a.mag_.size() - b.mag_.size() + 1 : 1) *
      b.mag_.size());
  if (!Charge(budget, cost)) return std::nullopt;
  auto [q, r] = DivModLimbs(a.mag_, b.mag_);
  BigInt quotient, remainder;
  quotient.mag_ = std::move(q);
  quotient.negative_ = a.negative_ != b.negative_;
  quotient.Trim();
  remainder.mag_ = std::move(r);
  remainder.negative_ = a.negative_;
  remainder.Trim();
  return std::make_pair(std::move(quotient), std::move(remainder));
}

std::optional<BigInt> BigInt::Gcd(const BigInt& a, const BigInt& b, WorkBudget* budget) {
  BigInt x = a.Abs(), y = b.Abs();
  while (!y.is_zero()) {
    auto qr = DivMod(x, y, budget);
    if (!qr.has_value()) return std::nullopt;
    x = std::move(y);
    y = std::move(qr->second);
    y.negative_ = false;
  }
  return x;
}

std::optional<BigInt> BigInt::Pow(const BigInt& a, uint64_t e, WorkBudget* budget) {
  if (e == 0) return BigInt(1);
  if (a.is_zero()) return BigInt();
  if (a.mag_.size() == 1 && a.mag_[0] == 1) {
    return (a.negative_ && (e & 1)) ? BigInt(-1) : BigInt(1);
  }
  // |a| >= 2: the result has at least (bits-1)*e + 1 bits.
  if (static_cast<uint64_t>(a.bits() - 1) * e >= static_cast<uint64_t>(kMaxBits)) {
    return std::nullopt;
  }
  BigInt result(1), base = a;
  while (true) {
    if (e & 1) {
      auto r = Mul(result, base, budget);
      if (!r.has_value()) return std::nullopt;
      result = std::move(*r);
    }
    e >>= 1;
    if (e == 0) break;
    auto sq = Mul(base, base, budget);
    if (!sq.has_value()) return std::nullopt;
    base = std::move(*sq);
  }
  if (result.bits() > kMaxBits) return std::nullopt;
  return result;
}

std::optional<BigInt> BigInt::ExactRoot(const BigInt& a, int n, WorkBudget* budget) {
  if (n < 2 || n > 64) return std::nullopt;
  if (a.negative_ && n % 2 == 0) return std::nullopt;
  if (a.is_zero()) return BigInt();
  const BigInt m = a.Abs();
  // Newton's iteration from above: x' = ((n-1) x + m / x^(n-1)) / n.
  BigInt x;
  {
    const int bits = (m.bits() + n - 1) / n + 1;
    x.mag_.assign(static_cast<size_t>(bits / 32 + 1), 0);
    x.mag_[static_cast<size_t>(bits / 32)] = uint32_t{1} << (bits % 32);
    x.Trim();
  }
  const BigInt big_n(n), big_n1(n - 1);
  for (int iter = 0; iter < 10000; ++iter) {
    auto xp = Pow(x, static_cast<uint64_t>(n - 1), budget);
    if (!xp.has_value()) return std::nullopt;
    auto q = DivMod(m, *xp, budget);
    if (!q.has_value()) return std::nullopt;
    auto t = Mul(x, big_n1, budget);
    if (!t.has_value()) return std::nullopt;
    auto s = Add(*t, q->first, budget);
    if (!s.has_value()) return std::nullopt;
    auto next = DivMod(*s, big_n, budget);
    if (!next.has_value()) return std::nullopt;
    if (CompareLimbs(next->first.mag_, x.mag_) >= 0) break;
    x = std::move(next->first);
  }
  auto check = Pow(x, static_cast<uint64_t>(n), budget);
  if (!check.has_value() || CompareLimbs(check->mag_, m.mag_) != 0) return std::nullopt;
  return a.negative_ ? x.Negated() : x;
}

// ------------------------------------------------------------------ Rational

std::optional<Rational> Rational::Make(const BigInt& num, const BigInt& den, WorkBudget* budget) {
  if (den.is_zero()) return std::nullopt;
  auto g = BigInt::Gcd(num, den, budget);
  if (!g.has_value()) return std::nullopt;
  Rational r;
  if (g->is_one() || g->is_zero()) {
    r.num_ = num;
    r.den_ = den;
  } else {
    auto n = BigInt::DivMod(num, *g, budget);
    auto d = BigInt::DivMod(den, *g, budget);
    if (!n.has_value() || !d.has_value()) return std::nullopt;
    r.num_ = std::move(n->first);
    r.den_ = std::move(d->first);
  }
  if (r.den_.negative()) {
    r.num_ = r.num_.Negated();
    r.den_ = r.den_.Negated();
  }
  if (r.num_.is_zero()) r.den_ = BigInt(1);
  if (r.num_.bits() > kMaxBits || r.den_.bits() > kMaxBits) return std::nullopt;
  return r;
}

std::optional<Rational> Rational::FromDecimal(absl::string_view int_digits,
                                              absl::string_view frac_digits, int exponent,
                                              WorkBudget* budget) {
  if (int_digits.empty() && frac_digits.empty()) return std::nullopt;
  if (int_digits.size() + frac_digits.size() > 1240) return std::nullopt;
  std::string digits = std::string(int_digits) + std::string(frac_digits);
  auto num = BigInt::FromDecimal(digits);
  if (!num.has_value()) return std::nullopt;
  int64_t scale = exponent - static_cast<int64_t>(frac_digits.size());
  if (scale > kMaxBits || scale < -kMaxBits) return std::nullopt;
  auto ten = BigInt::Pow(BigInt(10), static_cast<uint64_t>(scale < 0 ? -scale : scale), budget);
  if (!ten.has_value()) return std::nullopt;
  if (scale >= 0) {
    auto n = BigInt::Mul(*num, *ten, budget);
    if (!n.has_value()) return std::nullopt;
    return Make(*n, BigInt(1), budget);
  }
  return Make(*num, *ten, budget);
}

long double Rational::ToLongDouble() const {
  const int nb = num_.bits(), db = den_.bits();
  if (nb < 16000 && db < 16000 && nb - db < 16000) {
    long double n = num_.ToLongDouble(), d = den_.ToLongDouble();
    if (std::isfinite(n) && std::isfinite(d) && d != 0) return n / d;
  }
  return num_.negative() ? -HUGE_VALL : HUGE_VALL;
}

std::string Rational::ToString() const {
  if (is_integer()) return num_.ToString();
  return num_.ToString() + "/" + den_.ToString();
}

int Rational::Compare(const Rational& a, const Rational& b, WorkBudget* budget) {
  auto l = BigInt::Mul(a.num_, b.den_, budget);
  auto r = BigInt::Mul(b.num_, a.den_, budget);
  if (!l.has_value() || !r.has_value()) {
    const long double x = a.ToLongDouble(), y = b.ToLongDouble();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  return BigInt::Compare(*l, *r);
}

std::optional<Rational> Rational::Add(const Rational& a, const Rational& b, WorkBudget* budget) {
  if (a.is_integer() && b.is_integer()) {
    auto n = BigInt::Add(a.num_, b.num_, budget);
    if (!n.has_value() || n->bits() > kMaxBits) return std::nullopt;
    Rational r;
    r.num_ = std::move(*n);
    return r;
  }
  auto ad = BigInt::Mul(a.num_, b.den_, budget);
  auto cb = BigInt::Mul(b.num_, a.den_, budget);
  auto bd = BigInt::Mul(a.den_, b.den_, budget);
  if (!ad.has_value() || !cb.has_value() || !bd.has_value()) return std::nullopt;
  auto n = BigInt::Add(*ad, *cb, budget);
  if (!n.has_value()) return std::nullopt;
  return Make(*n, *bd, budget);
}

std::optional<Rational> Rational::Sub(const Rational& a, const Rational& b, WorkBudget* budget) {
  return Add(a, b.Negated(), budget);
}

std::optional<Rational> Rational::Mul(const Rational& a, const Rational& b, WorkBudget* budget) {
  auto n = BigInt::Mul(a.num_, b.num_, budget);
  auto d = BigInt::Mul(a.den_, b.den_, budget);
  if (!n.has_value() || !d.has_value()) return std::nullopt;
  if (a.is_integer() && b.is_integer()) {
    if (n->bits() > kMaxBits) return std::nullopt;
    Rational r;
    r.num_ = std::move(*n);
    return r;
  }
  return Make(*n, *d, budget);
}

std::optional<Rational> Rational::Div(const Rational& a, const Rational& b, WorkBudget* budget) {
  if (b.is_zero()) return std::nullopt;
  auto n = BigInt::Mul(a.num_, b.den_, budget);
  auto d = BigInt::Mul(a.den_, b.num_, budget);
  if (!n.has_value() || !d.has_value()) return std::nullopt;
  return Make(*n, *d, budget);
}

std::optional<Rational> Rational::Pow(const Rational& a, int64_t e, WorkBudget* budget) {
  if (e < 0 && a.is_zero()) return std::nullopt;
  const uint64_t m = e < 0 ? static_cast<uint64_t>(-(e + 1)) + 1 : static_cast<uint64_t>(e);
  auto n = BigInt::Pow(a.num_, m, budget);
  auto d = BigInt::Pow(a.den_, m, budget);
  if (!n.has_value() || !d.has_value()) return std::nullopt;
  Rational r;
  // Powers of a reduced fraction stay reduced.
  if (e >= 0) {
    r.num_ = std::move(*n);
    r.den_ = std::move(*d);
  } else {
    r.num_ = std::move(*d);
    r.den_ = std::move(*n);
    if (r.den_.negative()) {
      r.num_ = r.num_.Negated();
      r.den_ = r.den_.Negated();
    }
  }
  return r;
}

Rational Rational::Negated() const {
  Rational r = *this;
  r.num_ = r.num_.Negated();
  return r;
}

}  // namespace rlvr::math
