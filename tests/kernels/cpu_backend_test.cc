// What CpuBackend does beyond the Backend contract it shares with the CUDA backend
// (backend_contract_test.cc) and apart from the gradients themselves
// (cpu_backend_gradient_test.cc): the torch SGD rule, checkpoint continuation and thread-count
// independence, the input dtypes and normalization, and its own checks of a batch's labels and
// dtypes.
#include "kernels/cpu_backend.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "tests/kernels/random_batch.h"
#include "tests/testing/bit_identical.h"

namespace rf {
namespace {

using testing::BitIdentical;
using testing::HostBatch;
using testing::Numbered;
using testing::ParamsOf;
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

  const OptimizerConfig sgd{0.05f, 0.9f, 1e-2f};
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

// Two AdamW steps (so the bias corrections of t = 1 and t = 2 are both checked), each against
// torch.optim.AdamW's update written out here from the gradient ComputeGradients gives.
TEST(CpuBackendAdamW, TrainStepAppliesTorchAdamWWithBiasCorrectionAndDecoupledDecay) {
  auto be = MakeBackend();
  const ModelConfig c = TinyConfig();
  Tensors w = InitialParameters(c, 3);
  OptimizerConfig adam{0.01f, 0.f, 0.1f};
  adam.kind = OptimizerKind::kAdamW;
  adam.beta1 = 0.8f;
  adam.beta2 = 0.95f;
  adam.eps = 1e-6f;
  ASSERT_TRUE(be->SetState(w, OptimizerStateZeros(c, OptimizerKind::kAdamW)).ok());
  Tensors m = ZerosLike(c), v = ZerosLike(c);
  for (uint64_t t = 1; t <= 2; ++t) {
    const HostBatch batch = RandomBatch(c, 6, 40 + t);
    Tensors g;
    double loss = 0;
    ASSERT_TRUE(be->ComputeGradients(batch.ref(), &loss, &g).ok());
    adam.adam_step = t;
    ASSERT_TRUE(be->TrainStep(batch.ref(), adam).ok());
    Tensors w1, state;
    ASSERT_TRUE(be->GetState(&w1, &state).ok());
    ASSERT_EQ(state.t.size(), 2 * w.t.size());  // first moments, then second moments
    const double bc1 = 1 - std::pow(0.8, static_cast<double>(t));
    const double bc2 = 1 - std::pow(0.95, static_cast<double>(t));
    for (size_t k = 0; k < w.t.size(); ++k) {
      for (size_t i = 0; i < w.t[k].size(); ++i) {
        const double gi = g.t[k][i];
        // The terms may cancel: float rounding is relative to their sizes, not the sum's.
        const double m_scale = 0.8 * std::abs(m.t[k][i]) + 0.2 * std::abs(gi);
        m.t[k][i] = static_cast<float>(0.8 * m.t[k][i] + 0.2 * gi);
        v.t[k][i] = static_cast<float>(0.95 * v.t[k][i] + 0.05 * gi * gi);
        const double mhat = m.t[k][i] / bc1, vhat = v.t[k][i] / bc2;
        const double want = w.t[k][i] * (1 - 0.01 * 0.1) - 0.01 * mhat / (std::sqrt(vhat) + 1e-6);
        ASSERT_NEAR(state.t[k][i], m.t[k][i], 1e-6 * m_scale + 1e-12)
            << "m, step " << t << " tensor " << k << " index " << i;
        ASSERT_NEAR(state.t[w.t.size() + k][i], v.t[k][i], 1e-5 * std::abs(v.t[k][i]) + 1e-15)
            << "v, step " << t << " tensor " << k << " index " << i;
        // Each step moves a weight by about lr: a few float roundings of that are 1e-8.
        ASSERT_NEAR(w1.t[k][i], want, 1e-6) << "w, step " << t << " tensor " << k << " i " << i;
      }
    }
    // Follow the backend's own state, so the next step's expectation starts from its floats.
    w = w1;
    for (size_t k = 0; k < w.t.size(); ++k) {
      m.t[k] = state.t[k];
      v.t[k] = state.t[w.t.size() + k];
    }
  }
}

// Through the whole backend: a TrainStep with label smoothing reports the smoothed loss and moves
// the weights along its gradient. With plain SGD at lr 1 (no momentum, no decay) the step is
// w - g, checked against central differences of the loss that lr-0 steps report.
TEST(CpuBackendLabelSmoothing, TrainStepFollowsTheGradientOfTheSmoothedLoss) {
  auto be = MakeBackend();
  const ModelConfig c = TinyConfig();
  const Tensors w0 = InitialParameters(c, 3);
  const HostBatch batch = RandomBatch(c, 8, 55);
  OptimizerConfig probe{0.f, 0.f, 0.f};  // lr 0: reports the loss, changes nothing
  probe.label_smoothing = 0.2f;
  const auto smoothed_loss = [&](const Tensors& w) {
    EXPECT_TRUE(be->SetState(w, ZerosLike(c)).ok());
    EXPECT_TRUE(be->TrainStep(batch.ref(), probe).ok());
    return be->TakeTrainStats().mean_loss();
  };
  OptimizerConfig unit = probe;
  unit.lr = 1.f;
  ASSERT_TRUE(be->SetState(w0, ZerosLike(c)).ok());
  Tensors plain;
  double plain_loss = 0;
  ASSERT_TRUE(be->ComputeGradients(batch.ref(), &plain_loss, &plain).ok());
  ASSERT_TRUE(be->TrainStep(batch.ref(), unit).ok());
  Tensors w1;
  ASSERT_TRUE(be->GetState(&w1, nullptr).ok());
  EXPECT_GT(std::abs(be->TakeTrainStats().mean_loss() - plain_loss), 1e-3);  // it is smoothed

  const size_t fc2w = w0.t.size() - 2, fc2b = w0.t.size() - 1;
  double moved_from_plain = 0;
  for (const size_t t : {fc2w, fc2b}) {
    for (size_t i = 0; i < w0.t[t].size(); ++i) {
      const double g = static_cast<double>(w0.t[t][i]) - w1.t[t][i];
      Tensors up = w0, down = w0;
      up.t[t][i] += 1e-2f;
      down.t[t][i] -= 1e-2f;
      const double fd = (smoothed_loss(up) - smoothed_loss(down)) /
                        (static_cast<double>(up.t[t][i]) - down.t[t][i]);
      EXPECT_NEAR(g, fd, 2e-4) << "tensor " << t << " index " << i;
      moved_from_plain = std::max(moved_from_plain, std::abs(g - plain.t[t][i]));
    }
  }
  EXPECT_GT(moved_from_plain, 1e-3);  // the smoothed gradient is not the plain one
}

TEST(CpuBackendDeterminism, RestoredCheckpointContinuesBitExact) {
  const ModelConfig c = TinyConfig();
  auto straight = MakeBackend(), first_half = MakeBackend();
  auto second_half = MakeBackend(8, /*seed=*/99);  // different start, overwritten by SetState
  for (uint32_t step = 0; step < 8; ++step) {
    const HostBatch batch = RandomBatch(c, 8, 200 + step);
    ASSERT_TRUE(straight->TrainStep(batch.ref(), OptimizerConfig{}).ok());
    if (step < 4) {
      ASSERT_TRUE(first_half->TrainStep(batch.ref(), OptimizerConfig{}).ok());
    }
    if (step == 3) {
      Tensors p, m;
      ASSERT_TRUE(first_half->GetState(&p, &m).ok());
      ASSERT_TRUE(second_half->SetState(p, m).ok());
    }
    if (step >= 4) {
      ASSERT_TRUE(second_half->TrainStep(batch.ref(), OptimizerConfig{}).ok());
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
    ASSERT_TRUE(single->TrainStep(batch.ref(), OptimizerConfig{}).ok());
    ASSERT_TRUE(many->TrainStep(batch.ref(), OptimizerConfig{}).ok());
  }
  Tensors p1, m1, p2, m2;
  ASSERT_TRUE(single->GetState(&p1, &m1).ok());
  ASSERT_TRUE(many->GetState(&p2, &m2).ok());
  EXPECT_TRUE(BitIdentical(p1, p2));
  EXPECT_TRUE(BitIdentical(m1, m2));
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

TEST(CpuBackendBatch, RejectsALabelOutsideTheClassesAndChangesNothing) {
  const ModelConfig c = TinyConfig();
  auto be = MakeBackend();
  testing::RandomData d = testing::DrawData(c, 3, 1);
  d.labels = {0, 3, 1};  // 3 classes: 3 is out of range
  const HostBatch batch = testing::MakeBatch(d.values, DType::kUInt8, d.labels, DType::kInt32);
  const Tensors before = ParamsOf(*be);
  const Status st = be->TrainStep(batch.ref(), OptimizerConfig{});
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("label 3 of sample 1 in the batch is outside [0, 3)"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(BitIdentical(ParamsOf(*be), before));
  EXPECT_EQ(be->TakeTrainStats().samples, 0u);
}

// int32 is a sample dtype of the format (ids, such as token ids) but not one the model decodes.
TEST(CpuBackendBatch, RejectsIdSamplesItCannotDecode) {
  auto be = MakeBackend();
  HostBatch batch = RandomBatch(TinyConfig(), 2, 1);
  batch.dtype = DType::kInt32;
  const Status st = be->Evaluate(batch.ref());
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("samples of type int32 are not one the model reads"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace rf
