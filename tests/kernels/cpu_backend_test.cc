// CpuBackend's contract apart from the gradients themselves (cpu_backend_gradient_test.cc): state
// round trips, the torch SGD rule, determinism and checkpoint continuation, evaluation, the input
// dtypes and normalization, and the checks on its arguments.
#include "kernels/cpu_backend.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "tests/kernels/random_batch.h"

namespace rf {
namespace {

using testing::HostBatch;
using testing::RandomBatch;
using testing::TinyConfig;
using testing::TinyNormalization;

std::unique_ptr<CpuBackend> MakeBackend(uint32_t max_batch = 8, uint64_t seed = 3,
                                        const Normalization* norm = nullptr) {
  const ModelConfig c = TinyConfig();
  auto be = CpuBackend::Create(c, norm ? *norm : TinyNormalization(c), max_batch,
                               InitialParameters(c, seed));
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  return be.ok() ? std::move(*be) : nullptr;
}

// Tensors filled with distinct values that encode tensor and position.
Tensors Numbered(const ModelConfig& c, float scale) {
  Tensors t = ZerosLike(c);
  for (size_t i = 0; i < t.t.size(); ++i) {
    for (size_t j = 0; j < t.t[i].size(); ++j) t.t[i][j] = scale * (1000.f * i + j + 1);
  }
  return t;
}

bool BitIdentical(const Tensors& a, const Tensors& b) {
  if (a.t.size() != b.t.size()) return false;
  for (size_t i = 0; i < a.t.size(); ++i) {
    if (a.t[i].size() != b.t[i].size()) return false;
    if (std::memcmp(a.t[i].data(), b.t[i].data(), a.t[i].size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

Tensors Params(CpuBackend& be) {
  Tensors p;
  EXPECT_TRUE(be.GetState(&p, nullptr).ok());
  return p;
}

TEST(CpuBackendState, GetStateReturnsExactlyWhatSetStateStored) {
  auto be = MakeBackend();
  const ModelConfig c = TinyConfig();
  const Tensors params = Numbered(c, 1e-3f), momentum = Numbered(c, -7e-4f);
  ASSERT_TRUE(be->SetState(params, momentum).ok());
  Tensors p, m;
  ASSERT_TRUE(be->GetState(&p, &m).ok());
  EXPECT_TRUE(BitIdentical(p, params));
  EXPECT_TRUE(BitIdentical(m, momentum));
}

TEST(CpuBackendState, SetStateRejectsAWrongSizedTensorAndKeepsTheOldState) {
  auto be = MakeBackend();
  const ModelConfig c = TinyConfig();
  const Tensors before = Params(*be);
  Tensors bad = Numbered(c, 1.f);
  bad.t[ParameterShapes(c).size() - 3].pop_back();  // fc1.bias
  const Status st = be->SetState(bad, ZerosLike(c));
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("parameters tensor fc1.bias has 4 values; expected 5"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(BitIdentical(Params(*be), before));
}

TEST(CpuBackendSgd, TrainStepAppliesTorchSgdToEveryParameter) {
  auto be = MakeBackend();
  const ModelConfig c = TinyConfig();
  const Tensors w0 = InitialParameters(c, 3);
  const Tensors v0 = Numbered(c, 1e-5f);  // non-zero momentum, so its term is checked too
  ASSERT_TRUE(be->SetState(w0, v0).ok());
  const HostBatch batch = RandomBatch(c, 6, 41);
  Tensors g;
  double loss = 0;
  ASSERT_TRUE(be->ComputeGradients(batch.ref(), &loss, &g).ok());

  const SgdConfig sgd{0.05f, 0.9f, 1e-2f};
  ASSERT_TRUE(be->TrainStep(batch.ref(), sgd).ok());
  Tensors w1, v1;
  ASSERT_TRUE(be->GetState(&w1, &v1).ok());
  for (size_t t = 0; t < w0.t.size(); ++t) {
    for (size_t i = 0; i < w0.t[t].size(); ++i) {
      const float v = sgd.momentum * v0.t[t][i] + (g.t[t][i] + sgd.weight_decay * w0.t[t][i]);
      const float w = w0.t[t][i] - sgd.lr * v;
      ASSERT_FLOAT_EQ(v1.t[t][i], v) << "tensor " << t << " index " << i;
      ASSERT_FLOAT_EQ(w1.t[t][i], w) << "tensor " << t << " index " << i;
    }
  }
  // The step's statistics are those of the forward pass before the update.
  const StepStats s = be->TakeTrainStats();
  EXPECT_EQ(s.samples, 6u);
  EXPECT_DOUBLE_EQ(s.mean_loss(), loss);
  EXPECT_EQ(be->TakeTrainStats().samples, 0u);  // taking resets
}

TEST(CpuBackendDeterminism, SameBatchesGiveBitIdenticalParameters) {
  auto a = MakeBackend(), b = MakeBackend();
  const ModelConfig c = TinyConfig();
  for (uint32_t step = 0; step < 6; ++step) {
    const HostBatch batch = RandomBatch(c, step % 2 ? 8 : 5, 100 + step);  // full and partial
    ASSERT_TRUE(a->TrainStep(batch.ref(), SgdConfig{}).ok());
    ASSERT_TRUE(b->TrainStep(batch.ref(), SgdConfig{}).ok());
  }
  Tensors pa, ma, pb, mb;
  ASSERT_TRUE(a->GetState(&pa, &ma).ok());
  ASSERT_TRUE(b->GetState(&pb, &mb).ok());
  EXPECT_FALSE(BitIdentical(pa, InitialParameters(c, 3)));  // training did move them
  EXPECT_TRUE(BitIdentical(pa, pb));
  EXPECT_TRUE(BitIdentical(ma, mb));
}

TEST(CpuBackendDeterminism, RestoredCheckpointContinuesBitExact) {
  const ModelConfig c = TinyConfig();
  auto straight = MakeBackend(), first_half = MakeBackend();
  auto second_half = MakeBackend(8, /*seed=*/99);  // different start, overwritten by SetState
  for (uint32_t step = 0; step < 8; ++step) {
    const HostBatch batch = RandomBatch(c, 8, 200 + step);
    ASSERT_TRUE(straight->TrainStep(batch.ref(), SgdConfig{}).ok());
    if (step < 4) {
      ASSERT_TRUE(first_half->TrainStep(batch.ref(), SgdConfig{}).ok());
    }
    if (step == 3) {
      Tensors p, m;
      ASSERT_TRUE(first_half->GetState(&p, &m).ok());
      ASSERT_TRUE(second_half->SetState(p, m).ok());
    }
    if (step >= 4) {
      ASSERT_TRUE(second_half->TrainStep(batch.ref(), SgdConfig{}).ok());
    }
  }
  Tensors p1, m1, p2, m2;
  ASSERT_TRUE(straight->GetState(&p1, &m1).ok());
  ASSERT_TRUE(second_half->GetState(&p2, &m2).ok());
  EXPECT_TRUE(BitIdentical(p1, p2));
  EXPECT_TRUE(BitIdentical(m1, m2));
}

// The backend starts one worker per CPU in its affinity mask: one confined to a single CPU and
// one with them all must agree bit for bit, over batches of several chunks.
TEST(CpuBackendDeterminism, OneThreadAndAllThreadsGiveBitIdenticalParameters) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: nothing to compare";
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &all)) {
      CPU_SET(i, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  auto single = MakeBackend(48);  // its worker count is fixed at creation
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  auto many = MakeBackend(48);

  const ModelConfig c = TinyConfig();
  for (uint32_t step = 0; step < 4; ++step) {
    const HostBatch batch = RandomBatch(c, step % 2 ? 48 : 37, 300 + step);
    ASSERT_TRUE(single->TrainStep(batch.ref(), SgdConfig{}).ok());
    ASSERT_TRUE(many->TrainStep(batch.ref(), SgdConfig{}).ok());
  }
  Tensors p1, m1, p2, m2;
  ASSERT_TRUE(single->GetState(&p1, &m1).ok());
  ASSERT_TRUE(many->GetState(&p2, &m2).ok());
  EXPECT_TRUE(BitIdentical(p1, p2));
  EXPECT_TRUE(BitIdentical(m1, m2));
}

TEST(CpuBackendEvaluate, CountsCorrectPredictionsAndLeavesParametersAlone) {
  const ModelConfig c = TinyConfig();
  auto be = MakeBackend();
  // fc2 all zero and its bias (0, 2, 1): every sample's logits are (0, 2, 1), so class 1 wins
  // and the loss of a sample labelled y is log(1 + e^2 + e^1) - bias[y].
  Tensors p = InitialParameters(c, 3);
  const size_t fc2w = p.t.size() - 2, fc2b = p.t.size() - 1;
  std::fill(p.t[fc2w].begin(), p.t[fc2w].end(), 0.f);
  p.t[fc2b] = {0.f, 2.f, 1.f};
  ASSERT_TRUE(be->SetState(p, ZerosLike(c)).ok());
  testing::RandomData d = testing::DrawData(c, 7, 5);
  d.labels = {1, 0, 1, 2, 1, 1, 0};  // four 1s: four correct
  const HostBatch batch = testing::MakeBatch(d.values, DType::kUInt8, d.labels, DType::kUInt16);

  ASSERT_TRUE(be->Evaluate(batch.ref()).ok());
  const StepStats s = be->TakeEvalStats();
  EXPECT_EQ(s.samples, 7u);
  EXPECT_EQ(s.correct, 4u);
  const double lse = std::log(1 + std::exp(2.0) + std::exp(1.0));
  EXPECT_NEAR(s.loss_sum, 4 * (lse - 2) + 2 * lse + (lse - 1), 1e-5);
  EXPECT_TRUE(BitIdentical(Params(*be), p));
  EXPECT_EQ(be->TakeTrainStats().samples, 0u);  // evaluation is not training
  EXPECT_EQ(be->TakeEvalStats().samples, 0u);   // taking resets
}

// The same values stored as uint8, float16, bfloat16 or float32 (all exact for whole numbers up
// to 255), with labels in any label type, are the same batch.
TEST(CpuBackendInput, EverySampleAndLabelDTypeGivesTheSameGradients) {
  const ModelConfig c = TinyConfig();
  const testing::RandomData d = testing::DrawData(c, 4, 9);
  auto be = MakeBackend();
  Tensors reference;
  double reference_loss = 0;
  ASSERT_TRUE(be->ComputeGradients(
                    testing::MakeBatch(d.values, DType::kUInt8, d.labels, DType::kUInt8).ref(),
                    &reference_loss, &reference)
                  .ok());
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    for (DType lt : {DType::kUInt8, DType::kUInt16, DType::kInt32}) {
      Tensors g;
      double loss = 0;
      ASSERT_TRUE(
          be->ComputeGradients(testing::MakeBatch(d.values, dt, d.labels, lt).ref(), &loss, &g)
              .ok());
      EXPECT_EQ(loss, reference_loss) << DTypeName(dt) << " / " << DTypeName(lt);
      EXPECT_TRUE(BitIdentical(g, reference)) << DTypeName(dt) << " / " << DTypeName(lt);
    }
  }
}

// Normalizing inside the backend is (v - mean) / std per channel, with std 0 read as 1: the same
// as feeding floats normalized that way through the identity normalization.
TEST(CpuBackendInput, NormalizesPerChannelAndTreatsZeroStdAsOne) {
  const ModelConfig c = TinyConfig();
  const Normalization norm{{100.f, 30.f}, {50.f, 0.f}};
  const Normalization identity{{0.f, 0.f}, {1.f, 1.f}};
  testing::RandomData d = testing::DrawData(c, 3, 17);
  const HostBatch raw = testing::MakeBatch(d.values, DType::kUInt8, d.labels, DType::kUInt8);
  const size_t plane = size_t{c.height} * c.width;
  for (size_t i = 0; i < d.values.size(); ++i) {
    const size_t ch = (i / plane) % c.channels;
    d.values[i] = (d.values[i] - norm.mean[ch]) / (ch == 1 ? 1.f : norm.stddev[ch]);
  }
  const HostBatch pre = testing::MakeBatch(d.values, DType::kFloat32, d.labels, DType::kUInt8);

  auto inside = MakeBackend(8, 3, &norm), outside = MakeBackend(8, 3, &identity);
  Tensors g1, g2;
  double l1 = 0, l2 = 0;
  ASSERT_TRUE(inside->ComputeGradients(raw.ref(), &l1, &g1).ok());
  ASSERT_TRUE(outside->ComputeGradients(pre.ref(), &l2, &g2).ok());
  EXPECT_EQ(l1, l2);
  EXPECT_TRUE(BitIdentical(g1, g2));
}

TEST(CpuBackendCreate, RejectsNormalizationOfTheWrongLength) {
  const ModelConfig c = TinyConfig();
  const Normalization one{{0.f}, {1.f}};
  auto be = CpuBackend::Create(c, one, 8, InitialParameters(c, 1));
  ASSERT_FALSE(be.ok());
  EXPECT_TRUE(be.status().IsInvalidArgument());
  EXPECT_NE(be.status().message().find("1 means and 1 stds; the input has 2 channels"),
            std::string::npos)
      << be.status().message();
}

TEST(CpuBackendCreate, RejectsInitialParametersOfAnotherModel) {
  ModelConfig other = TinyConfig();
  other.hidden = 6;
  auto be = CpuBackend::Create(TinyConfig(), TinyNormalization(TinyConfig()), 8,
                               InitialParameters(other, 1));
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.status().message().find("initial parameters tensor fc1.weight has 96 values; "
                                       "expected 80"),
            std::string::npos)
      << be.status().message();
}

TEST(CpuBackendBatch, RejectsMoreSamplesThanMaxBatch) {
  auto be = MakeBackend(4);
  const HostBatch batch = RandomBatch(TinyConfig(), 5, 1);
  const Status st = be->TrainStep(batch.ref(), SgdConfig{});
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("batch of 5 samples; the CPU backend takes 1 to 4"),
            std::string::npos)
      << st.message();
}

TEST(CpuBackendBatch, RejectsALabelOutsideTheClassesAndChangesNothing) {
  const ModelConfig c = TinyConfig();
  auto be = MakeBackend();
  testing::RandomData d = testing::DrawData(c, 3, 1);
  d.labels = {0, 3, 1};  // 3 classes: 3 is out of range
  const HostBatch batch = testing::MakeBatch(d.values, DType::kUInt8, d.labels, DType::kInt32);
  const Tensors before = Params(*be);
  const Status st = be->TrainStep(batch.ref(), SgdConfig{});
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("label 3 of sample 1 in the batch is outside [0, 3)"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(BitIdentical(Params(*be), before));
  EXPECT_EQ(be->TakeTrainStats().samples, 0u);
}

TEST(CpuBackendBatch, RejectsALabelDTypeAsSamples) {
  auto be = MakeBackend();
  HostBatch batch = RandomBatch(TinyConfig(), 2, 1);
  batch.dtype = DType::kInt32;
  const Status st = be->Evaluate(batch.ref());
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("samples of type int32 are not a sample type"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace rf
