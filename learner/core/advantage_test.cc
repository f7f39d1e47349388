#include "learner/core/advantage.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rlvr::learner {
namespace {

TEST(AdvantageTest, CentredAndSumsToZero) {
  std::vector<double> a = GroupAdvantages({1, 1, 0, 0}, false);
  EXPECT_EQ(a, (std::vector<double>{0.5, 0.5, -0.5, -0.5}));
  std::vector<double> b = GroupAdvantages({0.2, 0.9, 0.4}, false);
  EXPECT_NEAR(b[0] + b[1] + b[2], 0.0, 1e-15);
  EXPECT_NEAR(b[1], 0.9 - 0.5, 1e-15);
}

TEST(AdvantageTest, StdNormalizedUsesPopulationStd) {
  std::vector<double> a = GroupAdvantages({1, 1, 0, 0}, true);
  // std = 0.5 (population), so A = 0.5 / (0.5 + 1e-6).
  EXPECT_NEAR(a[0], 0.5 / (0.5 + 1e-6), 1e-15);
  EXPECT_NEAR(a[0] + a[1] + a[2] + a[3], 0.0, 1e-15);
}

TEST(AdvantageTest, ZeroVariance) {
  EXPECT_TRUE(IsZeroVariance({1, 1, 1}));
  EXPECT_TRUE(IsZeroVariance({0.3, 0.3}));
  EXPECT_FALSE(IsZeroVariance({0, 0, 1}));
  for (double a : GroupAdvantages({0.7, 0.7, 0.7}, true)) EXPECT_TRUE(std::isfinite(a));
}

TEST(AdvantageTest, StdNormalizationByEstimator) {
  LossConfig c;
  EXPECT_FALSE(UsesStdNormalizedAdvantages(c));
  c.estimator = "grpo";
  EXPECT_TRUE(UsesStdNormalizedAdvantages(c));
  c.estimator = "dr_grpo";
  EXPECT_FALSE(UsesStdNormalizedAdvantages(c));
  c.std_normalize = true;
  EXPECT_TRUE(UsesStdNormalizedAdvantages(c));
}

}  // namespace
}  // namespace rlvr::learner
