// What CpuBackend does beyond the Backend contract it shares with the CUDA backend
// (backend_contract_test.cc) and apart from the gradients themselves
// (cpu_backend_gradient_test.cc): the torch SGD rule, checkpoint continuation and thread-count
// independence, the input dtypes and normalization, and its own checks of a batch's labels and
// dtypes.
#include "kernels/cpu_backend.h"

#include <gtest/gtest.h>
#include <sched.h>

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
  const Status st = be->TrainStep(batch.ref(), SgdConfig{});
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
