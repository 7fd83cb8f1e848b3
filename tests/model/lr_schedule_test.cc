// The lr schedules (model/lr_schedule.h) at chosen steps, each expected value worked out here
// from the documented formula by hand (not through the function under test).
#include "model/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rf {
namespace {

constexpr double kPi = 3.14159265358979323846;

// 10 steps an epoch, 4 epochs: T = 40 steps.
constexpr LrScheduleSpan kSpan{10, 4};

double Lr(LrScheduleKind kind, uint64_t step, float warmup = 0, double base = 0.1) {
  return ScheduledLr(base, step, kSpan, LrScheduleConfig{kind, warmup});
}

TEST(LrSchedule, ConstantIsTheBaseAtEveryStep) {
  for (uint64_t s : {0, 1, 20, 39, 400}) EXPECT_EQ(Lr(LrScheduleKind::kConstant, s), 0.1);
}

TEST(LrSchedule, StepDividesByTenAtHalfAndThreeQuartersOfTraining) {
  // Milestones floor(0.5 * 40) = 20 and floor(0.75 * 40) = 30.
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kStep, 0), 0.1);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kStep, 19), 0.1);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kStep, 20), 0.1 * 0.1);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kStep, 29), 0.1 * 0.1);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kStep, 30), 0.1 * 0.1 * 0.1);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kStep, 39), 0.1 * 0.1 * 0.1);
}

TEST(LrSchedule, CosineFallsFromTheBaseToZeroOverTraining) {
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kCosine, 0), 0.1);      // cos(0) = 1
  EXPECT_NEAR(Lr(LrScheduleKind::kCosine, 20), 0.05, 1e-15);  // t = 1/2: cos = 0
  EXPECT_NEAR(Lr(LrScheduleKind::kCosine, 10), 0.1 * (1 + std::sqrt(0.5)) / 2, 1e-15);
  EXPECT_NEAR(Lr(LrScheduleKind::kCosine, 30), 0.1 * (1 - std::sqrt(0.5)) / 2, 1e-15);
  EXPECT_NEAR(Lr(LrScheduleKind::kCosine, 40), 0.0, 1e-15);   // the end
  EXPECT_NEAR(Lr(LrScheduleKind::kCosine, 100), 0.0, 1e-15);  // past it: the final value
}

TEST(LrSchedule, WarmupRisesLinearlyOverFractionalEpochsCountedInSteps) {
  // 0.25 epochs of 10 steps: W = ceil(2.5) = 3 steps at 1/3, 2/3, 3/3 of the base.
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kConstant, 0, 0.25f), 0.1 / 3);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kConstant, 1, 0.25f), 0.2 / 3);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kConstant, 2, 0.25f), 0.1);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kConstant, 3, 0.25f), 0.1);
  // Warmup 1 epoch = 10 steps, then the cosine over the remaining 30: t = (s - 10) / 30.
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kCosine, 4, 1.f), 0.1 * 5 / 10);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kCosine, 9, 1.f), 0.1);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kCosine, 10, 1.f), 0.1);
  EXPECT_NEAR(Lr(LrScheduleKind::kCosine, 25, 1.f), 0.05, 1e-15);
  EXPECT_NEAR(Lr(LrScheduleKind::kCosine, 20, 1.f), 0.1 * 0.5 * (1 + std::cos(kPi / 3)), 1e-15);
  // The step schedule's milestones stay where they were: warmup only replaces its first steps.
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kStep, 0, 1.f), 0.01);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kStep, 20, 1.f), 0.01);
}

// Issue 23, W5: a warmup of 1e18 epochs at 100 steps an epoch is 1e20 steps, past 2^64: the cast
// was undefined behaviour and turned the warmup off. It spans the whole run instead.
TEST(LrSchedule, WarmupPastTheRunsEndWarmsUpTheWholeRun) {
  const LrScheduleSpan span{100, 4};  // T = 400
  for (float warmup : {1e18f, 3e38f, 4.f, 400.f}) {
    SCOPED_TRACE(warmup);
    for (uint64_t s : {0, 1, 199, 399}) {
      EXPECT_DOUBLE_EQ(ScheduledLr(0.1, s, span, {LrScheduleKind::kConstant, warmup}),
                       0.1 * static_cast<double>(s + 1) / 400);
    }
  }
}

TEST(LrSchedule, OneCycleRisesFromAFortiethToThePeakThenAnnealsToTheFloor) {
  // No warmup: U = ceil(0.3 * 40) = 12; lo = 0.1 / 25 = 0.004; fin = 0.004 / 1e4.
  const double lo = 0.004, fin = 4e-7;
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kOneCycle, 0), lo);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kOneCycle, 6), lo + (0.1 - lo) * 0.5);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kOneCycle, 12), 0.1);                        // the peak
  EXPECT_NEAR(Lr(LrScheduleKind::kOneCycle, 26), fin + (0.1 - fin) * 0.5, 1e-15);  // t = 14/28
  EXPECT_NEAR(Lr(LrScheduleKind::kOneCycle, 40), fin, 1e-15);
  // With warmup 2 epochs the rise takes U = 20 steps.
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kOneCycle, 10, 2.f), lo + (0.1 - lo) * 0.5);
  EXPECT_DOUBLE_EQ(Lr(LrScheduleKind::kOneCycle, 20, 2.f), 0.1);
  EXPECT_NEAR(Lr(LrScheduleKind::kOneCycle, 30, 2.f), fin + (0.1 - fin) * 0.5, 1e-15);
}

TEST(LrSchedule, NamesParseBackAndAnUnknownOneIsAUsageErrorNamingTheFlag) {
  for (LrScheduleKind k : {LrScheduleKind::kConstant, LrScheduleKind::kStep,
                           LrScheduleKind::kCosine, LrScheduleKind::kOneCycle}) {
    auto parsed = ParseLrSchedule(LrScheduleName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  auto bad = ParseLrSchedule("linear");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kUsage);
  EXPECT_NE(bad.status().message().find("--lr-schedule"), std::string::npos);
  EXPECT_NE(bad.status().message().find("linear"), std::string::npos);
}

}  // namespace
}  // namespace rf
