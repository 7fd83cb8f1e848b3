// What CudaBackend does beyond the Backend contract it shares with the CPU backend
// (backend_contract_test.cc) and apart from agreeing with it (cuda_backend_vs_cpu_test.cc): its
// own argument checks (these run without a GPU: Create checks before any CUDA call), batches in
// host memory, bad labels found on the GPU, determinism in every precision, the CUDA graph, and
// no memory growth over steps. Every test that needs the GPU skips where none is found.
#include "kernels/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tests/kernels/cuda_test_util.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/require_gpu.h"

namespace rf {
namespace {

using testing::BitIdentical;
using testing::DeviceBatch;
using testing::HostBatch;
using testing::ParamsOf;
using testing::TinyConfig;
using testing::TinyNormalization;

std::unique_ptr<CudaBackend> MakeBackend(const CudaBackendOptions& o = {}, uint32_t max_batch = 8,
                                         const ModelConfig& c = TinyConfig()) {
  auto be = CudaBackend::Create(c, TinyNormalization(c), max_batch, InitialParameters(c, 3), o);
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  return be.ok() ? std::move(*be) : nullptr;
}

// --- Create: argument checks, which need no GPU ---------------------------------------------

TEST(CudaBackendCreate, RejectsAnInvalidConfig) {
  ModelConfig c = TinyConfig();
  c.conv = {3, 4, 5, 6};  // four poolings shrink 8x8 to nothing
  auto be = CudaBackend::Create(c, TinyNormalization(c), 8, InitialParameters(TinyConfig(), 1));
  ASSERT_FALSE(be.ok());
  EXPECT_TRUE(be.status().IsInvalidArgument());
  EXPECT_NE(be.status().message().find("4 pooling blocks shrink a 8x8 input to nothing"),
            std::string::npos)
      << be.status().message();
}

TEST(CudaBackendCreate, RejectsZeroMaxBatch) {
  const ModelConfig c = TinyConfig();
  auto be = CudaBackend::Create(c, TinyNormalization(c), 0, InitialParameters(c, 1));
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.status().message().find("the CUDA backend needs max_batch >= 1"), std::string::npos)
      << be.status().message();
}

TEST(CudaBackendCreate, RejectsAMaxBatchTooLargeForCudnnSizes) {
  const ModelConfig c = testing::CifarConfig();
  auto be = CudaBackend::Create(c, TinyNormalization(c), 1u << 22, InitialParameters(c, 1));
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.status().message().find("is too large for the CUDA backend"), std::string::npos)
      << be.status().message();
}

TEST(CudaBackendCreate, NamesTheFailingCallWhereTheDeviceDoesNotExist) {
  RF_REQUIRE_GPU();
  CudaBackendOptions o;
  o.device = 4096;
  const ModelConfig c = TinyConfig();
  auto be = CudaBackend::Create(c, TinyNormalization(c), 8, InitialParameters(c, 1), o);
  ASSERT_FALSE(be.ok());
  EXPECT_EQ(be.status().code(), Status::Code::kAborted);
  EXPECT_NE(be.status().message().find("cudaSetDevice(options_.device) failed at "
                                       "kernels/cuda_backend.cc:"),
            std::string::npos)
      << be.status().message();
}

// --- Batches --------------------------------------------------------------------------------

TEST(CudaBackendBatch, RejectsSamplesInPlainHostMemory) {
  RF_REQUIRE_GPU();
  auto be = MakeBackend();
  const HostBatch host = testing::RandomBatch(TinyConfig(), 2, 1);
  const Status st = be->Evaluate(host.ref());
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("plain host memory"), std::string::npos) << st.message();
}

TEST(CudaBackendBatch, ReportsABadLabelAndAppliesNothingOfItsBatch) {
  RF_REQUIRE_GPU();
  const ModelConfig c = TinyConfig();
  auto be = MakeBackend();
  testing::RandomData d = testing::DrawData(c, 3, 1);
  d.labels = {0, 3, 1};  // 3 classes: 3 is out of range
  const DeviceBatch bad =
      testing::ToDevice(testing::MakeBatch(d.values, DType::kUInt8, d.labels, DType::kInt32));
  const Tensors before = ParamsOf(*be);
  const Status queued = be->TrainStep(bad.ref(), OptimizerConfig{});  // queued; the GPU finds it
  ASSERT_TRUE(queued.ok()) << queued.ToString();
  EXPECT_EQ(be->TakeTrainStats().samples, 0u);  // waits: the batch counted nothing
  EXPECT_TRUE(BitIdentical(ParamsOf(*be), before));
  const DeviceBatch good = testing::ToDevice(testing::RandomBatch(c, 3, 2));
  const Status st = be->TrainStep(good.ref(), OptimizerConfig{});
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("label 3 of sample 1 in the batch is outside [0, 3)"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(be->TrainStep(good.ref(), OptimizerConfig{}).ok());  // reported once, then cleared
  // ComputeGradients waits for its own batch, so it reports it.
  const Status own = be->ComputeGradients(bad.ref(), nullptr, nullptr);
  EXPECT_TRUE(own.IsInvalidArgument()) << own.ToString();
}

// --- Determinism and the CUDA graph ---------------------------------------------------------

// TrainSome's steps: full batches but every third (the descriptors change size in between).
constexpr uint32_t kTrainSomeSteps = 8;
constexpr uint64_t kTrainSomeFullBatches = kTrainSomeSteps - (kTrainSomeSteps + 2) / 3;

// Parameters after kTrainSomeSteps steps; `graph_replays`, where given, gets the backend's count
// of steps that replayed the CUDA graph.
// With `scheduled`, the steps use it with an lr that changes every step (as a schedule's does)
// and adam_step counting them.
Tensors TrainSome(const CudaBackendOptions& o, const ModelConfig& c,
                  uint64_t* graph_replays = nullptr, const OptimizerConfig* scheduled = nullptr) {
  auto be = MakeBackend(o, 8, c);
  if (be == nullptr) return {};
  for (uint32_t step = 0; step < kTrainSomeSteps; ++step) {
    const DeviceBatch batch = testing::ToDevice(testing::RandomBatch(c, step % 3 ? 8 : 5, step));
    OptimizerConfig opt;
    if (scheduled != nullptr) {
      opt = *scheduled;
      opt.lr = scheduled->lr * static_cast<float>(step + 1) / kTrainSomeSteps;
      opt.adam_step = step + 1;
    }
    EXPECT_TRUE(be->TrainStep(batch.ref(), opt).ok());
    (void)be->TakeTrainStats();  // waits, so the batch's memory may be freed
  }
  if (graph_replays != nullptr) *graph_replays = be->graph_replays();
  // The parameters, then batch norm's running statistics (none without it): both are state.
  Tensors state = ParamsOf(*be), running;
  EXPECT_TRUE(be->GetRunningStats(&running).ok());
  for (auto& t : running.t) state.t.push_back(std::move(t));
  return state;
}

ModelConfig WithBatchNorm(ModelConfig c) {
  c.batch_norm = true;
  return c;
}

// The models the determinism and graph tests train: both sizes, without and with batch norm.
std::vector<ModelConfig> TrainedModels() {
  return {TinyConfig(), testing::CifarConfig(), WithBatchNorm(TinyConfig()),
          WithBatchNorm(testing::CifarConfig())};
}

// Every precision on both models (the contract test covers the CPU's pattern of steps).
TEST(CudaBackendDeterminism, SameBatchesGiveBitIdenticalParametersInEveryPrecision) {
  RF_REQUIRE_GPU();
  for (const bool bf16 : {false, true}) {
    CudaBackendOptions o;
    o.bf16 = bf16;
    for (const ModelConfig& c : TrainedModels()) {
      const Tensors a = TrainSome(o, c), b = TrainSome(o, c);
      Tensors a_params = a;
      a_params.t.resize(ParameterShapes(c).size());
      EXPECT_FALSE(BitIdentical(a_params, InitialParameters(c, 3)))
          << "bf16 " << bf16 << " bn " << c.batch_norm;
      EXPECT_TRUE(BitIdentical(a, b)) << "bf16 " << bf16 << " bn " << c.batch_norm;
    }
  }
}

// The graph is captured in Create's warm-up, so with cuda_graph every full batch replays it (the
// partial ones run eagerly); without it, none does. The count is what makes this test fail if
// the graph never ran: equal parameters alone would also come from eager steps.
TEST(CudaBackendGraph, ReplayGivesTheSameParametersAsEagerSteps) {
  RF_REQUIRE_GPU();
  static_assert(kTrainSomeFullBatches == 5);  // steps 1, 2, 4, 5, 7
  for (const bool bf16 : {false, true}) {
    CudaBackendOptions eager, graph;
    eager.bf16 = graph.bf16 = bf16;
    graph.cuda_graph = true;
    for (const ModelConfig& c : TrainedModels()) {
      uint64_t graph_replays = 0, eager_replays = 1;
      EXPECT_TRUE(
          BitIdentical(TrainSome(graph, c, &graph_replays), TrainSome(eager, c, &eager_replays)))
          << "bf16 " << bf16 << " bn " << c.batch_norm;
      EXPECT_EQ(graph_replays, kTrainSomeFullBatches) << "bf16 " << bf16;
      EXPECT_EQ(eager_replays, 0u) << "bf16 " << bf16;
    }
  }
}

// The update's lr (changed every step by the schedule) and AdamW's bias corrections are launch
// arguments outside the graph, and the label smoothing is read from device memory: replaying the
// graph must follow each step's values exactly as eager steps do.
TEST(CudaBackendGraph, ScheduledLrAdamWAndLabelSmoothingReplayAsEagerSteps) {
  RF_REQUIRE_GPU();
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdamW;
  adam.lr = 2e-3f;
  adam.weight_decay = 0.01f;
  adam.label_smoothing = 0.1f;
  CudaBackendOptions eager, graph;
  graph.cuda_graph = true;
  OptimizerConfig sgd;
  sgd.lr = 0.05f;
  sgd.label_smoothing = 0.2f;
  for (const OptimizerConfig& opt : {adam, sgd}) {
    uint64_t graph_replays = 0;
    const Tensors g = TrainSome(graph, TinyConfig(), &graph_replays, &opt);
    const Tensors e = TrainSome(eager, TinyConfig(), nullptr, &opt);
    EXPECT_TRUE(BitIdentical(g, e)) << "adamw " << (opt.kind == OptimizerKind::kAdamW);
    EXPECT_EQ(graph_replays, kTrainSomeFullBatches);
    // And the schedule mattered: a constant lr ends elsewhere.
    OptimizerConfig constant = opt;
    constant.lr = opt.lr / 2;
    EXPECT_FALSE(BitIdentical(g, TrainSome(eager, TinyConfig(), nullptr, &constant)));
  }
}

// --- Batch norm -----------------------------------------------------------------------------

// A step refused for a non-finite gradient (an infinite input) leaves the running statistics as
// it leaves the weights, in both precisions and with the graph: their update is gated on the GPU
// by the same record as the optimizer's.
TEST(CudaBackendBatchNorm, ARefusedStepLeavesTheRunningStatistics) {
  RF_REQUIRE_GPU();
  const ModelConfig c = WithBatchNorm(TinyConfig());
  for (const bool bf16 : {false, true}) {
    CudaBackendOptions o;
    o.bf16 = bf16;
    o.cuda_graph = true;
    auto be = MakeBackend(o, 8, c);
    ASSERT_NE(be, nullptr);
    const DeviceBatch good = testing::ToDevice(testing::RandomBatch(c, 8, 33));
    ASSERT_TRUE(be->TrainStep(good.ref(), OptimizerConfig{}).ok());
    (void)be->TakeTrainStats();
    Tensors before, after;
    ASSERT_TRUE(be->GetRunningStats(&before).ok());
    EXPECT_FALSE(BitIdentical(before, InitialRunningStats(c))) << "bf16 " << bf16;
    const Tensors params = ParamsOf(*be);
    testing::RandomData d = testing::DrawData(c, 8, 34);
    d.values[3] = std::numeric_limits<float>::infinity();
    const DeviceBatch bad =
        testing::ToDevice(testing::MakeBatch(d.values, DType::kFloat32, d.labels, DType::kUInt8));
    (void)be->TrainStep(bad.ref(), OptimizerConfig{});  // found on the GPU: reported later
    (void)be->TakeTrainStats();
    const Status later = be->TrainStep(good.ref(), OptimizerConfig{0.f, 0.f, 0.f});
    EXPECT_FALSE(later.ok()) << "bf16 " << bf16;
    ASSERT_TRUE(be->GetRunningStats(&after).ok());
    EXPECT_TRUE(BitIdentical(after, before)) << "bf16 " << bf16;
    EXPECT_TRUE(BitIdentical(ParamsOf(*be), params)) << "bf16 " << bf16;
  }
}

// --- Memory ---------------------------------------------------------------------------------

// Nothing allocates per step: the device's free memory after 1000 steps is what it was after 10
// (by then every kernel is loaded and every library has done its first-call setup).
TEST(CudaBackendMemory, FreeMemoryAfter1000StepsEqualsFreeMemoryAfter10) {
  RF_REQUIRE_GPU();
  RF_SKIP_UNDER_CUDA_TOOL("the free device memory it measures");
  // eager, CUDA graph, bf16 with a CUDA graph, and both precisions with batch norm and a graph
  for (const int variant : {0, 1, 2, 3, 4}) {
    CudaBackendOptions o;
    o.cuda_graph = variant > 0;
    o.bf16 = variant == 2 || variant == 4;
    ModelConfig c = testing::CifarConfig();
    c.batch_norm = variant >= 3;
    auto be = MakeBackend(o, 64, c);
    ASSERT_NE(be, nullptr);
    const DeviceBatch full = testing::ToDevice(testing::RandomBatch(c, 64, 1));
    const DeviceBatch part = testing::ToDevice(testing::RandomBatch(c, 40, 2));
    size_t free_after_10 = 0, free_after_1000 = 0, total = 0;
    for (int step = 1; step <= 1000; ++step) {
      // Every 7th batch is partial, so descriptor changes are exercised too.
      ASSERT_TRUE(be->TrainStep((step % 7 ? full : part).ref(), OptimizerConfig{}).ok());
      if (step % 50 == 0 || step == 5) {  // before step 10 too: its kernels load lazily
        ASSERT_TRUE(be->Evaluate(part.ref()).ok());
      }
      if (step == 10 || step == 1000) {
        (void)be->TakeTrainStats();  // waits for the stream
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        ASSERT_EQ(cudaMemGetInfo(step == 10 ? &free_after_10 : &free_after_1000, &total),
                  cudaSuccess);
      }
    }
    EXPECT_EQ(free_after_1000, free_after_10) << "variant " << variant;
  }
}

}  // namespace
}  // namespace rf
