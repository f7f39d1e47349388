#include "common/base/lr_schedule.h"

#include "gtest/gtest.h"

namespace rlvr {
namespace {

TEST(LrScheduleTest, WarmupIsLinearFromOneStep) {
  LrSchedule s{
      .peak = 1.0, .warmup_steps = 4, .cosine = true, .total_steps = 14, .min_lr_ratio = 0.1};
  EXPECT_DOUBLE_EQ(s.At(0), 0.25);
  EXPECT_DOUBLE_EQ(s.At(3), 1.0);
}

TEST(LrScheduleTest, CosineReachesTheFloorAndStays) {
  LrSchedule s{
      .peak = 2.0, .warmup_steps = 4, .cosine = true, .total_steps = 14, .min_lr_ratio = 0.1};
  EXPECT_DOUBLE_EQ(s.At(4), 2.0);
  EXPECT_NEAR(s.At(9), 2.0 * (0.1 + 0.9 * 0.5), 1e-12);  // Half way: cos(pi/2) = 0.
  EXPECT_NEAR(s.At(14), 0.2, 1e-12);
  EXPECT_NEAR(s.At(1000), 0.2, 1e-12);
}

TEST(LrScheduleTest, ConstantAfterWarmup) {
  LrSchedule s{
      .peak = 0.5, .warmup_steps = 2, .cosine = false, .total_steps = 10, .min_lr_ratio = 0.1};
  EXPECT_DOUBLE_EQ(s.At(1), 0.5);
  EXPECT_DOUBLE_EQ(s.At(100), 0.5);
}

}  // namespace
}  // namespace rlvr
