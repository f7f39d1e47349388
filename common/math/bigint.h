// Bounded exact arithmetic for the math verifier: integers of at most
// kMaxBits bits and rationals made of them. Every operation that could grow a
// value past the bound, or that would cost more than the caller's work budget,
// fails (returns nullopt) instead of allocating or looping: the verifier then
// falls back to floating point or reports "not comparable".
//
// Thread safety: values are plain copyable data; a WorkBudget belongs to one
// comparison (one thread).
#ifndef RLVR_COMMON_MATH_BIGINT_H_
#define RLVR_COMMON_MATH_BIGINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace rlvr::math {

// The largest magnitude a BigInt may hold, in bits (~1233 decimal digits).
inline constexpr int kMaxBits = 4096;

// Work units (about one 32x32-bit limb product each) a comparison may spend.
// Charged by BigInt arithmetic and by every expression node evaluated.
class WorkBudget {
 public:
  explicit WorkBudget(int64_t units) : left_(units) {}
  // Spends `units`; false (and exhausted() from then on) when none are left.
  bool Spend(int64_t units) {
    left_ -= units;
    if (left_ < 0) exhausted_ = true;
    return !exhausted_;
  }
  bool exhausted() const { return exhausted_; }
  int64_t left() const { return left_; }

 private:
  int64_t left_;
  bool exhausted_ = false;
};

// A signed integer with |value| < 2^kMaxBits. Magnitude in 32-bit limbs,
// least significant first, no leading zero limbs; zero is never negative.
class BigInt {
 public:
  BigInt() = default;
  explicit BigInt(int64_t v);

  // Decimal digits only ("0042"); nullopt for anything else or past kMaxBits.
  static std::optional<BigInt> FromDecimal(absl::string_view digits);

  bool is_zero() const { return mag_.empty(); }
  bool negative() const { return negative_; }
  bool is_one() const { return !negative_ && mag_.size() == 1 && mag_[0] == 1; }
  int bits() const;  // 0 for zero.
  // The value if it fits in int64_t.
  std::optional<int64_t> ToInt64() const;
  // Nearest long double (inf past its range).
  long double ToLongDouble() const;
  // Decimal text, "-" for negatives.
  std::string ToString() const;

  BigInt Negated() const;
  BigInt Abs() const;
  // -1, 0, 1.
  static int Compare(const BigInt& a, const BigInt& b);
  static int CompareMagnitude(const BigInt& a, const BigInt& b);
  friend bool operator==(const BigInt& a, const BigInt& b) {
    return a.negative_ == b.negative_ && a.mag_ == b.mag_;
  }

  // Each returns nullopt when the result would exceed kMaxBits or the budget
  // runs out (budget may be null: unbounded work, bounded size).
  static std::optional<BigInt> Add(const BigInt& a, const BigInt& b, WorkBudget* budget);
  static std::optional<BigInt> Sub(const BigInt& a, const BigInt& b, WorkBudget* budget);
  static std::optional<BigInt> Mul(const BigInt& a, const BigInt& b, WorkBudget* budget);
  // Truncating division (quotient rounds toward zero, remainder has the sign
  // of a), as C++ does. nullopt for b == 0.
  static std::optional<std::pair<BigInt, BigInt>> DivMod(const BigInt& a, const BigInt& b,
                                                         WorkBudget* budget);
  // Greatest common divisor of |a| and |b| (gcd(0, 0) = 0).
  static std::optional<BigInt> Gcd(const BigInt& a, const BigInt& b, WorkBudget* budget);
  // a^e for e >= 0.
  static std::optional<BigInt> Pow(const BigInt& a, uint64_t e, WorkBudget* budget);
  // floor(sqrt(a)) of a >= 0 exactly when a is a perfect `n`-th power (n >= 2;
  // a < 0 and odd n allowed), else nullopt.
  static std::optional<BigInt> ExactRoot(const BigInt& a, int n, WorkBudget* budget);

 private:
  void Trim();
  bool negative_ = false;
  std::vector<uint32_t> mag_;
};

// num/den in lowest terms, den > 0.
class Rational {
 public:
  Rational() : den_(1) {}
  explicit Rational(int64_t v) : num_(v), den_(1) {}
  // num/den reduced; nullopt for den == 0 or when out of budget.
  static std::optional<Rational> Make(const BigInt& num, const BigInt& den, WorkBudget* budget);
  // "12", "1.25", ".5", "3." and an exponent e (value * 10^exponent);
  // nullopt for anything else or values past kMaxBits.
  static std::optional<Rational> FromDecimal(absl::string_view int_digits,
                                             absl::string_view frac_digits, int exponent,
                                             WorkBudget* budget);

  const BigInt& num() const { return num_; }
  const BigInt& den() const { return den_; }
  bool is_zero() const { return num_.is_zero(); }
  bool is_integer() const { return den_.is_one(); }
  bool negative() const { return num_.negative(); }
  long double ToLongDouble() const;
  // "3", "-1/2".
  std::string ToString() const;
  friend bool operator==(const Rational& a, const Rational& b) {
    return a.num_ == b.num_ && a.den_ == b.den_;
  }
  static int Compare(const Rational& a, const Rational& b, WorkBudget* budget);

  static std::optional<Rational> Add(const Rational& a, const Rational& b, WorkBudget* budget);
  static std::optional<Rational> Sub(const Rational& a, const Rational& b, WorkBudget* budget);
  static std::optional<Rational> Mul(const Rational& a, const Rational& b, WorkBudget* budget);
  // nullopt for b == 0.
  static std::optional<Rational> Div(const Rational& a, const Rational& b, WorkBudget* budget);
  // a^e for any integer e (a != 0 when e < 0).
  static std::optional<Rational> Pow(const Rational& a, int64_t e, WorkBudget* budget);
  Rational Negated() const;

 private:
  BigInt num_;
  BigInt den_;
};

}  // namespace rlvr::math

#endif  // RLVR_COMMON_MATH_BIGINT_H_
