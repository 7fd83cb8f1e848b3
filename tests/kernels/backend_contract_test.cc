// The Backend contract (kernels/backend.h), one typed test run against every backend this build
// has: CpuBackend always, CudaBackend where its target exists (RINGFEED_TEST_CUDA_BACKEND). What
// they must agree on: Create's argument checks, the batch-size check, exact state round trips,
// evaluation's counts, and bit-identical training from the same batches. The CUDA cases that
// need a GPU skip where none is found; Create's checks come before any CUDA call, so they run
// everywhere. What only one backend does stays in cpu_backend_test.cc and cuda_backend_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu_backend.h"
#include "tests/kernels/random_batch.h"
#include "tests/testing/bit_identical.h"
#if RINGFEED_TEST_CUDA_BACKEND
#include "cuda/device.h"
#include "kernels/cuda_backend.h"
#include "tests/kernels/cuda_test_util.h"
#endif

namespace rf::testing {
namespace {

// What the typed tests need to know of a backend: how to create one, what its messages call it,
// whether it can run here, and how a host batch becomes one it reads.
struct CpuKind {
  static constexpr const char* kName = "CPU";
  static bool Usable() { return true; }
  static Result<std::unique_ptr<CpuBackend>> Create(const ModelConfig& c, const Normalization& n,
                                                    uint32_t max_batch, const Tensors& params) {
    return CpuBackend::Create(c, n, max_batch, params);
  }
  static HostBatch Place(const HostBatch& h) { return h; }  // the CPU backend reads host memory
};

#if RINGFEED_TEST_CUDA_BACKEND
struct CudaKind {
  static constexpr const char* kName = "CUDA";
  static bool Usable() { return CudaDevicePresent(); }
  static Result<std::unique_ptr<CudaBackend>> Create(const ModelConfig& c, const Normalization& n,
                                                     uint32_t max_batch, const Tensors& params) {
    return CudaBackend::Create(c, n, max_batch, params);
  }
  static DeviceBatch Place(const HostBatch& h) { return ToDevice(h); }
};
using Kinds = ::testing::Types<CpuKind, CudaKind>;
#else
using Kinds = ::testing::Types<CpuKind>;
#endif

// Test names say the backend: BackendState/CPU.GetState..., BackendState/CUDA.GetState...
struct KindNames {
  template <class Kind>
  static std::string GetName(int) {
    return Kind::kName;
  }
};

// The tiny model, normalized, from InitialParameters(c, 3) (or `params`); null after a test
// failure.
template <class Kind>
std::unique_ptr<Backend> MakeBackend(uint32_t max_batch = 8, const Tensors* params = nullptr) {
  const ModelConfig c = TinyConfig();
  auto be = Kind::Create(c, TinyNormalization(c), max_batch,
                         params != nullptr ? *params : InitialParameters(c, 3));
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  if (!be.ok()) return nullptr;
  return std::move(*be);
}

// The first line of every case that runs the backend (Create's checks need no device).
#define RF_REQUIRE_BACKEND()                                                               \
  do {                                                                                     \
    if (!TypeParam::Usable()) GTEST_SKIP() << "no usable device for " << TypeParam::kName; \
  } while (0)

template <class Kind>
class BackendCreate : public ::testing::Test {};
template <class Kind>
class BackendBatch : public ::testing::Test {};
template <class Kind>
class BackendState : public ::testing::Test {};
template <class Kind>
class BackendEvaluate : public ::testing::Test {};
template <class Kind>
class BackendDeterminism : public ::testing::Test {};
template <class Kind>
class BackendDivergence : public ::testing::Test {};
TYPED_TEST_SUITE(BackendCreate, Kinds, KindNames);
TYPED_TEST_SUITE(BackendBatch, Kinds, KindNames);
TYPED_TEST_SUITE(BackendState, Kinds, KindNames);
TYPED_TEST_SUITE(BackendEvaluate, Kinds, KindNames);
TYPED_TEST_SUITE(BackendDeterminism, Kinds, KindNames);
TYPED_TEST_SUITE(BackendDivergence, Kinds, KindNames);

// --- Create: argument checks, before any device call ------------------------------------------

TYPED_TEST(BackendCreate, RejectsNormalizationOfTheWrongLength) {
  const ModelConfig c = TinyConfig();
  const Normalization one{{0.f}, {1.f}};
  auto be = TypeParam::Create(c, one, 8, InitialParameters(c, 1));
  ASSERT_FALSE(be.ok());
  EXPECT_TRUE(be.status().IsInvalidArgument());
  EXPECT_NE(be.status().message().find("1 means and 1 stds; the input has 2 channels"),
            std::string::npos)
      << be.status().message();
}

TYPED_TEST(BackendCreate, RejectsInitialParametersOfAnotherModel) {
  ModelConfig other = TinyConfig();
  other.hidden = 6;
  auto be = TypeParam::Create(TinyConfig(), TinyNormalization(TinyConfig()), 8,
                              InitialParameters(other, 1));
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.status().message().find("initial parameters tensor fc1.weight has 96 values; "
                                       "expected 80"),
            std::string::npos)
      << be.status().message();
}

// --- Batches ----------------------------------------------------------------------------------

TYPED_TEST(BackendBatch, RejectsMoreSamplesThanMaxBatch) {
  RF_REQUIRE_BACKEND();
  auto be = MakeBackend<TypeParam>(4);
  ASSERT_NE(be, nullptr);
  const auto batch = TypeParam::Place(RandomBatch(TinyConfig(), 5, 1));
  const Status st = be->TrainStep(batch.ref(), OptimizerConfig{});
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find(std::string("batch of 5 samples; the ") + TypeParam::kName +
                              " backend takes 1 to 4"),
            std::string::npos)
      << st.message();
}

// --- State ------------------------------------------------------------------------------------

TYPED_TEST(BackendState, GetStateReturnsExactlyWhatSetStateStored) {
  RF_REQUIRE_BACKEND();
  auto be = MakeBackend<TypeParam>();
  ASSERT_NE(be, nullptr);
  const ModelConfig c = TinyConfig();
  const Tensors params = Numbered(c, 1e-3f), momentum = Numbered(c, -7e-4f);
  ASSERT_TRUE(be->SetState(params, momentum).ok());
  Tensors p, m;
  ASSERT_TRUE(be->GetState(&p, &m).ok());
  EXPECT_TRUE(BitIdentical(p, params));
  EXPECT_TRUE(BitIdentical(m, momentum));
}

TYPED_TEST(BackendState, SetStateRejectsAWrongSizedTensorAndKeepsTheOldState) {
  RF_REQUIRE_BACKEND();
  auto be = MakeBackend<TypeParam>();
  ASSERT_NE(be, nullptr);
  const ModelConfig c = TinyConfig();
  const Tensors before = ParamsOf(*be);
  Tensors bad = Numbered(c, 1.f);
  bad.t[ParameterShapes(c).size() - 3].pop_back();  // fc1.bias
  const Status st = be->SetState(bad, ZerosLike(c));
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("parameters tensor fc1.bias has 4 values; expected 5"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(BitIdentical(ParamsOf(*be), before));
}

// AdamW keeps two slots (first moments, then second moments): GetState returns what SetState
// stored, a slot not given starts at zero, and a third slot is refused.
TYPED_TEST(BackendState, AdamWStateHasTwoSlotsAndASlotNotGivenStartsAtZero) {
  RF_REQUIRE_BACKEND();
  const ModelConfig c = TinyConfig();
  const Tensors params = Numbered(c, 1e-3f);
  Tensors two = Numbered(c, -7e-4f);
  for (const auto& t : Numbered(c, 3e-4f).t) two.t.push_back(t);
  auto a = MakeBackend<TypeParam>(), b = MakeBackend<TypeParam>();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->SetState(params, two).ok());
  Tensors p, m;
  ASSERT_TRUE(a->GetState(&p, &m).ok());
  EXPECT_TRUE(BitIdentical(m, two));

  Tensors three = two;
  for (const auto& t : ZerosLike(c).t) three.t.push_back(t);
  const Status st = a->SetState(params, three);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("optimizer state has 24 tensors"), std::string::npos) << st.message();

  // a: the second slot overwritten by a one-slot SetState; b: given as zeros. One AdamW step
  // must then agree to the bit.
  Tensors first(two);
  first.t.resize(ParameterShapes(c).size());
  Tensors first_and_zeros = first;
  for (const auto& t : ZerosLike(c).t) first_and_zeros.t.push_back(t);
  ASSERT_TRUE(a->SetState(params, first).ok());
  ASSERT_TRUE(b->SetState(params, first_and_zeros).ok());
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdamW;
  const auto batch = TypeParam::Place(RandomBatch(c, 8, 77));
  ASSERT_TRUE(a->TrainStep(batch.ref(), adam).ok());
  ASSERT_TRUE(b->TrainStep(batch.ref(), adam).ok());
  Tensors pa, ma, pb, mb;
  ASSERT_TRUE(a->GetState(&pa, &ma).ok());
  ASSERT_TRUE(b->GetState(&pb, &mb).ok());
  ASSERT_EQ(ma.t.size(), 2 * ParameterShapes(c).size());  // the step's optimizer's slots
  EXPECT_TRUE(BitIdentical(pa, pb));
  EXPECT_TRUE(BitIdentical(ma, mb));
}

// --- Evaluation -------------------------------------------------------------------------------

TYPED_TEST(BackendEvaluate, CountsCorrectPredictionsAndLeavesParametersAlone) {
  RF_REQUIRE_BACKEND();
  const ModelConfig c = TinyConfig();
  auto be = MakeBackend<TypeParam>();
  ASSERT_NE(be, nullptr);
  // fc2 all zero and its bias (0, 2, 1): every sample's logits are (0, 2, 1), so class 1 wins
  // and the loss of a sample labelled y is log(1 + e^2 + e^1) - bias[y].
  Tensors p = InitialParameters(c, 3);
  const size_t fc2w = p.t.size() - 2, fc2b = p.t.size() - 1;
  std::fill(p.t[fc2w].begin(), p.t[fc2w].end(), 0.f);
  p.t[fc2b] = {0.f, 2.f, 1.f};
  ASSERT_TRUE(be->SetState(p, ZerosLike(c)).ok());
  RandomData d = DrawData(c, 7, 5);
  d.labels = {1, 0, 1, 2, 1, 1, 0};  // four 1s: four correct
  const auto batch = TypeParam::Place(MakeBatch(d.values, DType::kUInt8, d.labels, DType::kUInt16));

  ASSERT_TRUE(be->Evaluate(batch.ref()).ok());
  const StepStats s = be->TakeEvalStats();
  EXPECT_EQ(s.samples, 7u);
  EXPECT_EQ(s.correct, 4u);
  const double lse = std::log(1 + std::exp(2.0) + std::exp(1.0));
  EXPECT_NEAR(s.loss_sum, 4 * (lse - 2) + 2 * lse + (lse - 1), 1e-5);
  EXPECT_TRUE(BitIdentical(ParamsOf(*be), p));
  EXPECT_EQ(be->TakeTrainStats().samples, 0u);  // evaluation is not training
  EXPECT_EQ(be->TakeEvalStats().samples, 0u);   // taking resets
}

// --- Determinism ------------------------------------------------------------------------------

TYPED_TEST(BackendDeterminism, SameBatchesGiveBitIdenticalParameters) {
  RF_REQUIRE_BACKEND();
  auto a = MakeBackend<TypeParam>(), b = MakeBackend<TypeParam>();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const ModelConfig c = TinyConfig();
  for (uint32_t step = 0; step < 6; ++step) {
    const auto batch =
        TypeParam::Place(RandomBatch(c, step % 2 ? 8 : 5, 100 + step));  // full, partial
    ASSERT_TRUE(a->TrainStep(batch.ref(), OptimizerConfig{}).ok());
    ASSERT_TRUE(b->TrainStep(batch.ref(), OptimizerConfig{}).ok());
    (void)a->TakeTrainStats();  // waits (the CUDA backend queues steps), so the batch may go
    (void)b->TakeTrainStats();
  }
  Tensors pa, ma, pb, mb;
  ASSERT_TRUE(a->GetState(&pa, &ma).ok());
  ASSERT_TRUE(b->GetState(&pb, &mb).ok());
  EXPECT_FALSE(BitIdentical(pa, InitialParameters(c, 3)));  // training did move them
  EXPECT_TRUE(BitIdentical(pa, pb));
  EXPECT_TRUE(BitIdentical(ma, mb));
}

// AdamW with label smoothing and a changing lr, stopped after 3 steps and restored into another
// backend: the 3 steps after end bit-identical to 6 straight steps (moments and step count
// carried over).
TYPED_TEST(BackendDeterminism, RestoredAdamWStateContinuesBitExact) {
  RF_REQUIRE_BACKEND();
  const ModelConfig c = TinyConfig();
  auto straight = MakeBackend<TypeParam>(), first = MakeBackend<TypeParam>();
  auto second = MakeBackend<TypeParam>();
  ASSERT_TRUE(straight && first && second);
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdamW;
  adam.label_smoothing = 0.1f;
  adam.weight_decay = 0.01f;
  for (uint32_t step = 0; step < 6; ++step) {
    const auto batch = TypeParam::Place(RandomBatch(c, step % 2 ? 8 : 5, 300 + step));
    adam.lr = 1e-3f * static_cast<float>(6 - step);
    adam.adam_step = step + 1;
    ASSERT_TRUE(straight->TrainStep(batch.ref(), adam).ok());
    (void)straight->TakeTrainStats();  // waits, so the batch may go
    Backend& half = step < 3 ? *first : *second;
    ASSERT_TRUE(half.TrainStep(batch.ref(), adam).ok());
    (void)half.TakeTrainStats();
    if (step == 2) {
      Tensors p, m;
      ASSERT_TRUE(first->GetState(&p, &m).ok());
      ASSERT_EQ(m.t.size(), 2 * p.t.size());
      ASSERT_TRUE(second->SetState(p, m).ok());
    }
  }
  Tensors p1, m1, p2, m2;
  ASSERT_TRUE(straight->GetState(&p1, &m1).ok());
  ASSERT_TRUE(second->GetState(&p2, &m2).ok());
  EXPECT_FALSE(BitIdentical(p1, InitialParameters(c, 3)));
  EXPECT_TRUE(BitIdentical(p1, p2));
  EXPECT_TRUE(BitIdentical(m1, m2));
}

// --- Divergence -------------------------------------------------------------------------------

// A batch whose loss or gradient is not finite fails, at once on the CPU and by the next call on
// the GPU, and changes no parameter, no momentum and no statistic: the state stays that of the
// last finite step, and training goes on from it if the caller chooses. `bad` holds an infinite
// input value (what a diverged run or a bad sample gives).
template <class Kind>
void ExpectTheNonFiniteStepFailsAndChangesNothing(Backend* be, const RandomData& bad) {
  const ModelConfig c = TinyConfig();
  const auto good = Kind::Place(RandomBatch(c, 8, 21, DType::kFloat32));
  ASSERT_TRUE(be->TrainStep(good.ref(), OptimizerConfig{}).ok());
  ASSERT_EQ(be->TakeTrainStats().samples, 8u);
  Tensors p1, m1;
  ASSERT_TRUE(be->GetState(&p1, &m1).ok());

  const auto placed =
      Kind::Place(MakeBatch(bad.values, DType::kFloat32, bad.labels, DType::kUInt8));
  Status st = be->TrainStep(placed.ref(), OptimizerConfig{});
  EXPECT_EQ(be->TakeTrainStats().samples, 0u);  // waits for the GPU: its finding is in by now
  if (st.ok())
    st = be->TrainStep(good.ref(), OptimizerConfig{});  // the GPU's, reported by this call
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the training loss or its gradient is not finite"), std::string::npos)
      << st.message();
  Tensors p2, m2;
  ASSERT_TRUE(be->GetState(&p2, &m2).ok());
  EXPECT_TRUE(BitIdentical(p2, p1));
  EXPECT_TRUE(BitIdentical(m2, m1));

  ASSERT_TRUE(
      be->TrainStep(good.ref(), OptimizerConfig{}).ok());  // reported once; finite steps go on
  EXPECT_EQ(be->TakeTrainStats().samples, 8u);
}

TYPED_TEST(BackendDivergence, ANonFiniteLossFailsAndChangesNothing) {
  RF_REQUIRE_BACKEND();
  RandomData d = DrawData(TinyConfig(), 8, 22);
  d.values[5] = std::numeric_limits<float>::infinity();
  auto be = MakeBackend<TypeParam>();
  ASSERT_NE(be, nullptr);
  ExpectTheNonFiniteStepFailsAndChangesNothing<TypeParam>(be.get(), d);
}

// The same where the loss is finite: with every first-layer filter weight negative, the infinite
// input value makes -infinity (or NaN, through a Winograd or FFT convolution), which the ReLU and
// the pooling turn into finite values, so only the gradient (infinity times zero) shows it. The
// GPU once trained such a step whenever cuDNN chose a transform algorithm (found under
// compute-sanitizer, which changes the timings cuDNN chooses by).
TYPED_TEST(BackendDivergence, ANonFiniteGradientBehindAFiniteLossFailsAndChangesNothing) {
  RF_REQUIRE_BACKEND();
  const ModelConfig c = TinyConfig();
  Tensors params = InitialParameters(c, 3);
  for (float& w : params.t[0]) w = -std::fabs(w) - 0.01f;  // block 0's filters
  RandomData d = DrawData(c, 8, 22);
  d.values[5] = std::numeric_limits<float>::infinity();
  auto be = MakeBackend<TypeParam>(8, &params);
  ASSERT_NE(be, nullptr);
  // The case this is: a finite loss over a gradient that is not.
  const auto placed =
      TypeParam::Place(MakeBatch(d.values, DType::kFloat32, d.labels, DType::kUInt8));
  double loss = 0;
  Tensors grads;
  ASSERT_TRUE(be->ComputeGradients(placed.ref(), &loss, &grads).ok());
  EXPECT_TRUE(std::isfinite(loss)) << loss;
  bool all_finite = true;
  for (const auto& t : grads.t) {
    for (float g : t) all_finite = all_finite && std::isfinite(g);
  }
  EXPECT_FALSE(all_finite);
  ExpectTheNonFiniteStepFailsAndChangesNothing<TypeParam>(be.get(), d);
}

}  // namespace
}  // namespace rf::testing
