// Batch normalization on the CPU backend (model/model.h states the function): the layer's
// arithmetic on a known channel, the running statistics' update rule, evaluation by the running
// statistics, and a refused step leaving them alone. Its gradients are checked against central
// differences in cpu_backend_gradient_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu_backend.h"
#include "kernels/cpu_layers.h"
#include "tests/kernels/random_batch.h"
#include "tests/testing/bit_identical.h"

namespace rf {
namespace {

using testing::TinyConfig;
using testing::TinyNormalization;

ModelConfig BatchNormConfig() {
  ModelConfig c = TinyConfig();
  c.batch_norm = true;
  return c;
}

TEST(CpuBatchNormLayer, NormalizesAChannelByItsMeanAndBiasedVariance) {
  const std::vector<float> x = {1, 2, 3, 4};
  float mean = 0, var = 0;
  cpu::BatchNormChannelStats(x.size(), x.data(), &mean, &var);
  EXPECT_FLOAT_EQ(mean, 2.5f);
  EXPECT_FLOAT_EQ(var, 1.25f);
  std::vector<float> z(4);
  const float invstd = cpu::BatchNormChannelApply(x.size(), x.data(), mean, var, 2.f, z.data());
  EXPECT_FLOAT_EQ(invstd, 1.f / std::sqrt(1.25f + kBatchNormEps));
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(z[i], 2.f * (x[i] - 2.5f) * invstd) << i;
  // The backward pass of a gradient along xhat itself: scale * invstd * (xhat - 0 - xhat * 1).
  std::vector<float> dz(4);
  for (size_t i = 0; i < 4; ++i) dz[i] = (x[i] - mean) * invstd;
  float scale_grad = 0;
  cpu::BatchNormChannelBackward(4, x.data(), mean, invstd, 2.f, dz.data(), &scale_grad);
  EXPECT_NEAR(scale_grad, 4.f, 1e-4f);            // sum of xhat^2 = m (up to eps)
  for (float g : dz) EXPECT_NEAR(g, 0.f, 1e-4f);  // a shift of xhat's own direction: no dx
}

TEST(CpuBatchNormModel, ScalesFollowTheOtherParametersAndStartAtOne) {
  const ModelConfig c = BatchNormConfig();
  const std::vector<ParamShape> plain = ParameterShapes(TinyConfig());
  const std::vector<ParamShape> shapes = ParameterShapes(c);
  ASSERT_EQ(shapes.size(), plain.size() + c.conv.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(shapes[i].name, plain[i].name);
  EXPECT_EQ(shapes[plain.size()].name, "bn0.scale");
  const Tensors p = InitialParameters(c, 3);
  for (size_t b = 0; b < c.conv.size(); ++b) {
    EXPECT_EQ(p.t[plain.size() + b], std::vector<float>(c.conv[b], 1.f));
  }
  const Tensors stats = InitialRunningStats(c);
  ASSERT_EQ(stats.t.size(), 2 * c.conv.size());
  EXPECT_EQ(stats.t[0], std::vector<float>(c.conv[0], 0.f));              // means
  EXPECT_EQ(stats.t[c.conv.size()], std::vector<float>(c.conv[0], 1.f));  // variances
  EXPECT_TRUE(RunningStatShapes(TinyConfig()).empty());
}

// Steps with lr 0 leave the parameters, so the batch statistics, unchanged: each step moves the
// running statistics the same fraction (kBatchNormMomentum) of the way to the same target, so
// the second step's change is 0.9 times the first's.
TEST(CpuBatchNormBackend, RunningStatisticsMoveByTheMomentumTowardTheBatchs) {
  const ModelConfig c = BatchNormConfig();
  const testing::HostBatch batch = testing::RandomBatch(c, 20, 31);
  auto be = CpuBackend::Create(c, TinyNormalization(c), 20, InitialParameters(c, 5));
  ASSERT_TRUE(be.ok()) << be.status().ToString();
  Tensors r0, r1, r2;
  ASSERT_TRUE((*be)->GetRunningStats(&r0).ok());
  const OptimizerConfig still{0.f, 0.f, 0.f};
  ASSERT_TRUE((*be)->TrainStep(batch.ref(), still).ok());
  ASSERT_TRUE((*be)->GetRunningStats(&r1).ok());
  ASSERT_TRUE((*be)->TrainStep(batch.ref(), still).ok());
  ASSERT_TRUE((*be)->GetRunningStats(&r2).ok());
  ASSERT_EQ(r0.t.size(), 2 * c.conv.size());
  size_t moved = 0;
  for (size_t t = 0; t < r0.t.size(); ++t) {
    for (size_t i = 0; i < r0.t[t].size(); ++i) {
      const double d1 = r1.t[t][i] - r0.t[t][i], d2 = r2.t[t][i] - r1.t[t][i];
      EXPECT_NEAR(d2, (1 - kBatchNormMomentum) * d1, 1e-5 + 1e-4 * std::fabs(d1))
          << "tensor " << t << " value " << i;
      moved += std::fabs(d1) > 1e-3;
      if (t >= c.conv.size()) {
        EXPECT_GT(r2.t[t][i], 0.f);  // variances stay positive
      }
    }
  }
  EXPECT_GT(moved, r0.t.size());  // the statistics did move
}

// Evaluation normalizes by the running statistics (not the batch's) and leaves them alone.
TEST(CpuBatchNormBackend, EvaluationUsesTheRunningStatisticsAndKeepsThem) {
  const ModelConfig c = BatchNormConfig();
  const testing::HostBatch batch = testing::RandomBatch(c, 12, 32);
  auto be = CpuBackend::Create(c, TinyNormalization(c), 12, InitialParameters(c, 6));
  ASSERT_TRUE(be.ok());
  auto eval_loss = [&](const Tensors& stats) {
    EXPECT_TRUE((*be)->SetRunningStats(stats).ok());
    EXPECT_TRUE((*be)->Evaluate(batch.ref()).ok());
    Tensors after;
    EXPECT_TRUE((*be)->GetRunningStats(&after).ok());
    EXPECT_TRUE(testing::BitIdentical(after, stats));
    return (*be)->TakeEvalStats().mean_loss();
  };
  Tensors a = InitialRunningStats(c), b = a;
  for (size_t t = 0; t < b.t.size(); ++t) {
    for (float& v : b.t[t]) v = t < c.conv.size() ? v + 40.f : v * 900.f;
  }
  const double la = eval_loss(a), lb = eval_loss(b);
  EXPECT_GT(std::fabs(la - lb), 1e-3) << la << " " << lb;
  EXPECT_EQ(eval_loss(a), la);  // a function of the statistics alone
  // Evaluation is not the training forward pass: the batch's own statistics give another loss.
  double train_loss = 0;
  ASSERT_TRUE((*be)->ComputeGradients(batch.ref(), &train_loss, nullptr).ok());
  EXPECT_GT(std::fabs(train_loss - la), 1e-4);
  // Shapes that do not fit are refused.
  Tensors wrong = a;
  wrong.t.pop_back();
  EXPECT_TRUE((*be)->SetRunningStats(wrong).IsInvalidArgument());
}

// A step refused for a non-finite loss changes the running statistics no more than the weights.
TEST(CpuBatchNormBackend, ARefusedStepLeavesTheRunningStatistics) {
  const ModelConfig c = BatchNormConfig();
  auto be = CpuBackend::Create(c, TinyNormalization(c), 8, InitialParameters(c, 7));
  ASSERT_TRUE(be.ok());
  ASSERT_TRUE((*be)->TrainStep(testing::RandomBatch(c, 8, 33).ref(), OptimizerConfig{}).ok());
  Tensors before, after;
  ASSERT_TRUE((*be)->GetRunningStats(&before).ok());
  testing::RandomData d = testing::DrawData(c, 8, 34);
  d.values[3] = std::numeric_limits<float>::infinity();
  const Status st =
      (*be)->TrainStep(testing::MakeBatch(d.values, DType::kFloat32, d.labels, DType::kUInt8).ref(),
                       OptimizerConfig{});
  EXPECT_FALSE(st.ok());
  ASSERT_TRUE((*be)->GetRunningStats(&after).ok());
  EXPECT_TRUE(testing::BitIdentical(after, before));
}

}  // namespace
}  // namespace rf
