#include "common/math/bigint.h"

#include <gtest/gtest.h>

#include <string>

#include "common/base/splitmix.h"

namespace rlvr::math {
namespace {

BigInt Big(const std::string& s) {
  const bool neg = !s.empty() && s[0] == '-';
  auto v = BigInt::FromDecimal(neg ? s.substr(1) : s);
  EXPECT_TRUE(v.has_value()) << s;
  return neg ? v->Negated() : *v;
}

// Values below from Python 3's integers.
TEST(BigIntTest, DecimalRoundTripAndArithmetic) {
  EXPECT_EQ(Big("0").ToString(), "0");
  EXPECT_EQ(Big("000123").ToString(), "123");
  EXPECT_EQ(Big("-1000000000000000000000").ToString(), "-1000000000000000000000");
  EXPECT_EQ(BigInt::Pow(BigInt(2), 200, nullptr)->ToString(),
            "1606938044258990275541962092341162602522202993782792835301376");
  BigInt f(1);
  for (int k = 2; k <= 100; ++k) f = *BigInt::Mul(f, BigInt(k), nullptr);
  EXPECT_EQ(f.ToString(),
            "93326215443944152681699238856266700490715968264381621468592963895217599993229915608"
            "941463976156518286253697920827223758251185210916864000000000000000000000000");
  const BigInt a = Big("123456789012345678901234567890123456789");
  const BigInt b = Big("987654321098765432109876543");
  EXPECT_EQ(BigInt::Mul(a, b, nullptr)->ToString(),
            "121932631137021795226185032707818930270769699763964487123185200427");
  auto qr = BigInt::DivMod(a, b, nullptr);
  ASSERT_TRUE(qr.has_value());
  EXPECT_EQ(qr->first.ToString(), "124999998860");
  EXPECT_EQ(qr->second.ToString(), "925925940092592620382715809");
  // Truncating division, as C++.
  qr = BigInt::DivMod(a.Negated(), b, nullptr);
  EXPECT_EQ(qr->first.ToString(), "-124999998860");
  EXPECT_EQ(qr->second.ToString(), "-925925940092592620382715809");
  EXPECT_FALSE(BigInt::DivMod(a, BigInt(), nullptr).has_value());
  EXPECT_EQ(BigInt::Gcd(Big("1071"), Big("-462"), nullptr)->ToString(), "21");
  EXPECT_EQ(*BigInt(-5).ToInt64(), -5);
  EXPECT_FALSE(Big("99999999999999999999").ToInt64().has_value());
  EXPECT_NEAR(static_cast<double>(a.ToLongDouble()), 1.2345678901234568e38, 1e24);
}

TEST(BigIntTest, DivModIdentityOnRandomValues) {
  uint64_t state = 7;
  auto next = [&] { return state = SplitMix64(state); };
  auto random_big = [&](int limbs) {
    std::string digits;
    for (int k = 0; k < limbs; ++k) digits += std::to_string(next() % 1000000000ULL + 1);
    BigInt v = *BigInt::FromDecimal(digits);
    return next() % 2 ? v.Negated() : v;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const BigInt a = random_big(1 + static_cast<int>(next() % 12));
    const BigInt b = random_big(1 + static_cast<int>(next() % 6));
    auto qr = BigInt::DivMod(a, b, nullptr);
    ASSERT_TRUE(qr.has_value());
    // a == q*b + r, |r| < |b|, r has a's sign (or is 0).
    const BigInt back = *BigInt::Add(*BigInt::Mul(qr->first, b, nullptr), qr->second, nullptr);
    ASSERT_EQ(back, a) << a.ToString() << " / " << b.ToString();
    EXPECT_LT(BigInt::CompareMagnitude(qr->second, b), 0);
    EXPECT_TRUE(qr->second.is_zero() || qr->second.negative() == a.negative());
    // Decimal round trip.
    EXPECT_EQ(Big(a.ToString()), a);
    // gcd divides both.
    const BigInt g = *BigInt::Gcd(a, b, nullptr);
    EXPECT_TRUE(BigInt::DivMod(a, g, nullptr)->second.is_zero());
    EXPECT_TRUE(BigInt::DivMod(b, g, nullptr)->second.is_zero());
  }
}

TEST(BigIntTest, ExactRoots) {
  const BigInt x = Big("12345678901234567890");
  const BigInt cube = *BigInt::Pow(x, 3, nullptr);
  EXPECT_EQ(*BigInt::ExactRoot(cube, 3, nullptr), x);
  EXPECT_EQ(*BigInt::ExactRoot(cube.Negated(), 3, nullptr), x.Negated());
  EXPECT_FALSE(BigInt::ExactRoot(*BigInt::Add(cube, BigInt(1), nullptr), 3, nullptr).has_value());
  EXPECT_FALSE(BigInt::ExactRoot(BigInt(-4), 2, nullptr).has_value());
  EXPECT_EQ(BigInt::ExactRoot(BigInt(144), 2, nullptr)->ToString(), "12");
  EXPECT_EQ(BigInt::ExactRoot(BigInt(1), 7, nullptr)->ToString(), "1");
  EXPECT_FALSE(BigInt::ExactRoot(BigInt(2), 2, nullptr).has_value());
}

TEST(BigIntTest, SizeAndWorkAreBounded) {
  EXPECT_TRUE(BigInt::Pow(BigInt(2), kMaxBits - 1, nullptr).has_value());
  EXPECT_FALSE(BigInt::Pow(BigInt(2), kMaxBits, nullptr).has_value());
  EXPECT_FALSE(BigInt::Pow(BigInt(3), 1000000000ULL, nullptr).has_value());
  EXPECT_FALSE(BigInt::FromDecimal(std::string(2000, '7')).has_value());
  EXPECT_TRUE(BigInt::FromDecimal(std::string(1200, '7')).has_value());
  const BigInt big = *BigInt::Pow(BigInt(3), 2000, nullptr);
  WorkBudget budget(10);
  EXPECT_FALSE(BigInt::Mul(big, big, &budget).has_value());
  EXPECT_TRUE(budget.exhausted());
}

TEST(RationalTest, NormalFormAndArithmetic) {
  auto r = Rational::Make(BigInt(6), BigInt(-4), nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->ToString(), "-3/2");
  EXPECT_FALSE(Rational::Make(BigInt(1), BigInt(0), nullptr).has_value());
  EXPECT_EQ(Rational::FromDecimal("1", "25", 0, nullptr)->ToString(), "5/4");
  EXPECT_EQ(Rational::FromDecimal("", "5", 0, nullptr)->ToString(), "1/2");
  EXPECT_EQ(Rational::FromDecimal("1", "5", 3, nullptr)->ToString(), "1500");
  EXPECT_EQ(Rational::FromDecimal("2", "", -4, nullptr)->ToString(), "1/5000");
  const Rational third = *Rational::Make(BigInt(1), BigInt(3), nullptr);
  const Rational sixth = *Rational::Make(BigInt(1), BigInt(6), nullptr);
  EXPECT_EQ(Rational::Add(third, sixth, nullptr)->ToString(), "1/2");
  EXPECT_EQ(Rational::Sub(sixth, third, nullptr)->ToString(), "-1/6");
  EXPECT_EQ(Rational::Mul(third, sixth, nullptr)->ToString(), "1/18");
  EXPECT_EQ(Rational::Div(third, sixth, nullptr)->ToString(), "2");
  EXPECT_FALSE(Rational::Div(third, Rational(), nullptr).has_value());
  EXPECT_EQ(Rational::Pow(*Rational::Make(BigInt(-2), BigInt(3), nullptr), -3, nullptr)->ToString(),
            "-27/8");
  EXPECT_EQ(Rational::Compare(third, sixth, nullptr), 1);
  EXPECT_EQ(Rational::Compare(sixth.Negated(), sixth, nullptr), -1);
  EXPECT_NEAR(static_cast<double>(third.ToLongDouble()), 1.0 / 3, 1e-15);
}

}  // namespace
}  // namespace rlvr::math
