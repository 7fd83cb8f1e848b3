// The ranks of a data-parallel job (dist/world.h) and the gradient mean (dist/host_reducer.h,
// dist/nccl_reducer.h). One binary, run by ctest on its own (a world of one) and under
// `mpirun --oversubscribe -np 2` and `-np 3`: every rank runs every test, in the same order.
// Each test makes all its collective calls before it asserts anything, so a failing rank does
// not leave the others waiting in a call it will not make.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/cpu_backend.h"
#include "parallel/host_reducer.h"
#include "parallel/world.h"
#include "tests/kernels/random_batch.h"
#if RINGFEED_TEST_NCCL
#include <cuda_runtime_api.h>

#include "kernels/cuda_backend.h"
#include "kernels/reduce_buckets.h"
#include "parallel/nccl_reducer.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/testing/require_gpu.h"
#endif

namespace rf {
namespace {

using testing::RandomBatch;
using testing::TinyConfig;
using testing::TinyNormalization;

// The process's world, opened once (MPI is initialized once per process) and finalized after
// the last test.
World* g_world = nullptr;

class WorldEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    Result<std::unique_ptr<World>> w = OpenWorld();
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    world_ = std::move(*w);
    g_world = world_.get();
  }
  void TearDown() override {
    g_world = nullptr;
    world_.reset();
  }

 private:
  std::unique_ptr<World> world_;
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new WorldEnvironment);

World& W() { return *g_world; }

// A value that encodes its rank and index, with a fraction so sums round.
float ValueOf(uint32_t rank, size_t i) {
  return 0.001f * static_cast<float>((rank + 1) * (i + 7)) + 1.f / static_cast<float>(rank + 3);
}

TEST(World, LauncherAndRanksAgree) {
  const uint32_t size = W().size();
  uint64_t sizes[2] = {size, size};
  ASSERT_TRUE(W().AllReduceMin(sizes, 1).ok());
  ASSERT_TRUE(W().AllReduceMax(sizes + 1, 1).ok());
  EXPECT_EQ(sizes[0], size);
  EXPECT_EQ(sizes[1], size);
  EXPECT_LT(W().rank(), size);
  EXPECT_LT(W().local_rank(), W().local_size());
  EXPECT_EQ(DetectLauncher().empty(), size == 1 && W().Describe() == "1 process");
}

TEST(World, CollectivesMoveEveryRanksValues) {
  const uint32_t r = W().rank(), n = W().size();
  // Broadcast from the last rank.
  uint64_t word[2] = {r == n - 1 ? 0xabcdef00ull + n : 0, 5};
  const Status bcast = W().Broadcast(word, sizeof word, n - 1);
  // Sums, maxima and minima of rank-encoded values.
  double sum[2] = {1.0 + r, 0.5 * r};
  const Status sum_st = W().AllReduceSum(sum, 2);
  uint64_t mx[2] = {r, 100 - r}, mn[2] = {r, 100 - r};
  const Status max_st = W().AllReduceMax(mx, 2), min_st = W().AllReduceMin(mn, 2);
  // Gather on rank 0, all-gather and all-to-all of three words a rank.
  const uint32_t mine[3] = {r, r * 10, r * 100};
  std::vector<uint32_t> gathered(3 * n, 7), all(3 * n, 7), to_me(n, 7), to_each(n);
  const Status gather = W().Gather(mine, sizeof mine, gathered.data(), 0);
  const Status allgather = W().AllGather(mine, sizeof mine, all.data());
  for (uint32_t j = 0; j < n; ++j) to_each[j] = 1000 * r + j;  // from r to j
  const Status alltoall = W().AllToAll(to_each.data(), sizeof(uint32_t), to_me.data());
  const Status barrier = W().Barrier();

  for (const Status* st :
       {&bcast, &sum_st, &max_st, &min_st, &gather, &allgather, &alltoall, &barrier}) {
    ASSERT_TRUE(st->ok()) << st->ToString();
  }
  EXPECT_EQ(word[0], 0xabcdef00ull + n);
  EXPECT_EQ(word[1], 5u);
  EXPECT_EQ(sum[0], n + n * (n - 1) / 2.0);
  EXPECT_EQ(sum[1], 0.5 * n * (n - 1) / 2.0);
  EXPECT_EQ(mx[0], n - 1);
  EXPECT_EQ(mx[1], 100u);
  EXPECT_EQ(mn[0], 0u);
  EXPECT_EQ(mn[1], 100u - (n - 1));
  for (uint32_t j = 0; j < n; ++j) {
    if (r == 0) {
      EXPECT_EQ(gathered[3 * j], j);
      EXPECT_EQ(gathered[3 * j + 2], j * 100);
    }
    EXPECT_EQ(all[3 * j + 1], j * 10);
    EXPECT_EQ(to_me[j], 1000 * j + r);  // what rank j sent to this one
  }
}

// The mean every rank gets is the rank-order sum in double divided once, rounded once: computed
// here from every rank's values, for a length no rank count divides.
TEST(HostReducer, MeanIsTheRankOrderMeanAndTheSameBitsOnEveryRank) {
  const uint32_t r = W().rank(), n = W().size();
  const size_t len = 1001;
  std::vector<float> g(len);
  for (size_t i = 0; i < len; ++i) g[i] = ValueOf(r, i);
  HostReducer reducer(W());
  const Status st = reducer.MeanOverRanks(g.data(), len, nullptr);
  std::vector<float> everyone(len * n);
  const Status gathered = W().AllGather(g.data(), len * sizeof(float), everyone.data());
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE(gathered.ok()) << gathered.ToString();
  for (size_t i = 0; i < len; ++i) {
    double sum = 0;
    for (uint32_t k = 0; k < n; ++k) sum += ValueOf(k, i);
    const float expected = static_cast<float>(sum / n);
    ASSERT_EQ(g[i], expected) << "element " << i;
    for (uint32_t k = 0; k < n; ++k) ASSERT_EQ(everyone[k * len + i], g[i]) << "rank " << k;
  }
}

TEST(HostReducer, RefusesDeviceMemory) {
  HostReducer reducer(W());
  float g = 1;
  int fake_stream = 0;
  const Status st = reducer.MeanOverRanks(&g, 1, &fake_stream);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
}

// The mean of the ranks' gradients, each computed alone by ComputeGradients on the rank's own
// batch; every rank's values gathered to every rank.
std::vector<float> MeanOfLocalGradients(Backend& alone, const testing::HostBatch& batch,
                                        Status* st) {
  Tensors grads;
  double loss = 0;
  *st = alone.ComputeGradients(batch.ref(), &loss, &grads);
  std::vector<float> flat;
  for (const auto& t : grads.t) flat.insert(flat.end(), t.begin(), t.end());
  const uint32_t n = W().size();
  std::vector<float> all(flat.size() * n);
  if (Status g = W().AllGather(flat.data(), flat.size() * sizeof(float), all.data()); !g.ok()) {
    *st = g;
  }
  std::vector<float> mean(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) {
    double sum = 0;
    for (uint32_t k = 0; k < n; ++k) sum += all[k * flat.size() + i];
    mean[i] = static_cast<float>(sum / n);
  }
  return mean;
}

// A data-parallel step with lr 1 and no momentum or decay subtracts exactly the reduced gradient
// (v = 0 * 0 + g; w -= 1 * v), so the new parameters show it bit for bit: P - mean.
TEST(HostReducer, CpuBackendStepAppliesTheMeanOfTheRanksLocalGradients) {
  const ModelConfig c = TinyConfig();
  const Tensors start = InitialParameters(c, 5);
  const testing::HostBatch batch = RandomBatch(c, 12, 100 + W().rank());  // each rank's own
  auto alone = CpuBackend::Create(c, TinyNormalization(c), 16, start);
  auto ranked = CpuBackend::Create(c, TinyNormalization(c), 16, start);
  ASSERT_TRUE(alone.ok() && ranked.ok());
  Status local;
  const std::vector<float> mean = MeanOfLocalGradients(**alone, batch, &local);
  HostReducer reducer(W());
  ASSERT_TRUE((*ranked)->SetGradientReducer(&reducer).ok());
  const Status step = (*ranked)->TrainStep(batch.ref(), OptimizerConfig{1.f, 0.f, 0.f});
  Tensors after;
  ASSERT_TRUE((*ranked)->GetState(&after, nullptr).ok());
  std::vector<float> flat;
  for (const auto& t : after.t) flat.insert(flat.end(), t.begin(), t.end());
  std::vector<float> everyone(flat.size() * W().size());
  const Status gathered = W().AllGather(flat.data(), flat.size() * sizeof(float), everyone.data());
  ASSERT_TRUE(local.ok()) << local.ToString();
  ASSERT_TRUE(step.ok()) << step.ToString();
  ASSERT_TRUE(gathered.ok()) << gathered.ToString();
  size_t i = 0;
  for (const auto& t : start.t) {
    for (float p : t) {
      ASSERT_EQ(flat[i], p - mean[i]) << "parameter value " << i;
      ++i;
    }
  }
  // Every rank holds the same parameters afterwards.
  for (uint32_t k = 0; k < W().size(); ++k) {
    EXPECT_EQ(
        std::memcmp(everyone.data() + k * flat.size(), flat.data(), flat.size() * sizeof(float)), 0)
        << "rank " << k;
  }
}

#if RINGFEED_TEST_NCCL
// Whether every rank's machine has a GPU for each of its ranks (a collective: every rank asks).
bool EveryRankHasItsGpu() {
  int devices = 0;
  const bool usable = CudaDevicePresent() && cudaGetDeviceCount(&devices) == cudaSuccess &&
                      static_cast<uint32_t>(devices) >= W().local_size();
  uint64_t all_usable = usable ? 1 : 0;
  return W().AllReduceMin(&all_usable, 1).ok() && all_usable == 1;
}

// The same on GPUs through NCCL, one GPU a rank (skipped where this machine has fewer GPUs than
// ranks on it): the reduced gradient is the ranks' mean within float rounding (NCCL sums in its
// own order), and the same bits on every rank.
TEST(NcclReducer, CudaBackendStepAppliesTheMeanOfTheRanksLocalGradients) {
  if (!EveryRankHasItsGpu()) GTEST_SKIP() << "fewer GPUs than ranks on a machine";
  const int gpu = static_cast<int>(W().local_rank());
  ASSERT_EQ(cudaSetDevice(gpu), cudaSuccess);
  const ModelConfig c = TinyConfig();
  const Tensors start = InitialParameters(c, 5);
  const testing::HostBatch host = RandomBatch(c, 12, 100 + W().rank());
  // The CPU backend's local gradient is the reference mean (the CUDA backend agrees with it to
  // float rounding: kernels/cuda_backend_vs_cpu_test.cc).
  auto alone = CpuBackend::Create(c, TinyNormalization(c), 16, start);
  ASSERT_TRUE(alone.ok());
  Status local;
  const std::vector<float> mean = MeanOfLocalGradients(**alone, host, &local);
  auto nccl = NcclReducer::Create(W(), gpu);  // outlives the backend
  ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
  CudaBackendOptions o;
  o.device = gpu;
  o.tf32 = false;
  auto ranked = CudaBackend::Create(c, TinyNormalization(c), 16, start, o);
  ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
  ASSERT_TRUE((*ranked)->SetGradientReducer(nccl->get()).ok());
  const testing::DeviceBatch on_gpu = testing::ToDevice(host);
  const Status step = (*ranked)->TrainStep(on_gpu.ref(), OptimizerConfig{1.f, 0.f, 0.f});
  Tensors after;
  const Status state = (*ranked)->GetState(&after, nullptr);
  std::vector<float> flat;
  for (const auto& t : after.t) flat.insert(flat.end(), t.begin(), t.end());
  std::vector<float> everyone(flat.size() * W().size());
  const Status gathered = W().AllGather(flat.data(), flat.size() * sizeof(float), everyone.data());
  ASSERT_TRUE(local.ok() && step.ok() && state.ok() && gathered.ok()) << step.ToString();
  size_t i = 0;
  for (const auto& t : start.t) {
    for (float p : t) {
      ASSERT_NEAR(flat[i], p - mean[i], 1e-4f + 1e-3f * std::fabs(mean[i])) << "value " << i;
      ++i;
    }
  }
  for (uint32_t k = 0; k < W().size(); ++k) {
    EXPECT_EQ(
        std::memcmp(everyone.data() + k * flat.size(), flat.data(), flat.size() * sizeof(float)), 0)
        << "rank " << k;
  }
}

// Whole batches, as training runs them: the first step captures the backend's CUDA graph again
// with the NCCL all-reduce inside it, the rest replay that graph. The parameter is the
// backend's reduce_buckets: 1, one reduction after the backward pass; 2 and 16 (a bucket per
// layer), reductions forked to the reduce stream during the backward pass and joined before the
// finite check.
// Every rank ends where the CPU backend's ranks end (the MPI mean) within float rounding, with
// the same bits as every other rank. Then one rank alone gets an infinite input: the mean over
// the ranks is not finite, so every rank (not only that one) refuses the step and keeps its
// parameters, since the check looks at the mean.
class NcclBuckets : public ::testing::TestWithParam<uint32_t> {};

TEST_P(NcclBuckets, GraphReplayedStepsApplyTheMeanAndEveryRankRefusesANonFiniteMean) {
  if (!EveryRankHasItsGpu()) GTEST_SKIP() << "fewer GPUs than ranks on a machine";
  const int gpu = static_cast<int>(W().local_rank());
  ASSERT_EQ(cudaSetDevice(gpu), cudaSuccess);
  constexpr uint32_t kBatch = 16, kSteps = 4;
  const ModelConfig c = TinyConfig();
  const Tensors start = InitialParameters(c, 5);
  const OptimizerConfig sgd{0.05f, 0.9f, 0.f};
  std::vector<testing::HostBatch> batches;
  for (uint32_t s = 0; s < kSteps; ++s) {
    batches.push_back(RandomBatch(c, kBatch, 300 + 10 * s + W().rank(), DType::kFloat32));
  }
  // The reference: the CPU backend's ranks, the mean through MPI.
  auto cpu = CpuBackend::Create(c, TinyNormalization(c), kBatch, start);
  ASSERT_TRUE(cpu.ok());
  HostReducer host_reducer(W());
  ASSERT_TRUE((*cpu)->SetGradientReducer(&host_reducer).ok());
  Status cpu_steps;
  for (const auto& b : batches) {
    if (cpu_steps.ok()) cpu_steps = (*cpu)->TrainStep(b.ref(), sgd);
  }
  Tensors want;
  ASSERT_TRUE(cpu_steps.ok()) << cpu_steps.ToString();
  ASSERT_TRUE((*cpu)->GetState(&want, nullptr).ok());

  // The communicator outlives the backend: ncclCommDestroy waits for the graphs that captured
  // its all-reduce to be destroyed.
  auto nccl = NcclReducer::Create(W(), gpu);
  ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
  CudaBackendOptions o;
  o.device = gpu;
  o.tf32 = false;
  o.cuda_graph = true;
  o.reduce_buckets = GetParam();
  auto ranked = CudaBackend::Create(c, TinyNormalization(c), kBatch, start, o);
  ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
  ASSERT_EQ((*ranked)->reduce_buckets().size(), std::min<size_t>(GetParam(), ReduceUnitCount(c)));
  ASSERT_TRUE((*ranked)->SetGradientReducer(nccl->get()).ok());
  // Each batch in device memory of its own, kept to the end: no step's input is overwritten.
  std::vector<testing::DeviceBatch> on_gpu;
  auto step_on = [&](const testing::HostBatch& host) {
    on_gpu.push_back(testing::ToDevice(host));
    return (*ranked)->TrainStep(on_gpu.back().ref(), sgd);
  };
  Status gpu_steps;
  for (const auto& b : batches) {
    if (gpu_steps.ok()) gpu_steps = step_on(b);
  }
  Tensors got;
  const Status state = (*ranked)->GetState(&got, nullptr);
  std::vector<float> flat;
  for (const auto& t : got.t) flat.insert(flat.end(), t.begin(), t.end());
  std::vector<float> everyone(flat.size() * W().size());
  const Status gathered = W().AllGather(flat.data(), flat.size() * sizeof(float), everyone.data());
  const uint64_t replays = (*ranked)->graph_replays();

  // The non-finite step: the last rank's input holds an infinity; the others' are finite.
  testing::HostBatch bad = RandomBatch(c, kBatch, 400 + W().rank(), DType::kFloat32);
  if (W().rank() + 1 == W().size()) {
    const float inf = std::numeric_limits<float>::infinity();
    std::memcpy(bad.samples.data() + 5 * sizeof(float), &inf, sizeof inf);
  }
  Status refused = step_on(bad);
  // The GPU's finding is reported by a call after it has landed: wait for it (TakeTrainStats
  // synchronizes), or the next step may be queued before it is seen (it was, on 2 H200s).
  (void)(*ranked)->TakeTrainStats();
  if (refused.ok()) refused = step_on(batches[0]);
  Tensors kept;
  const Status kept_state = (*ranked)->GetState(&kept, nullptr);

  ASSERT_TRUE(gpu_steps.ok()) << gpu_steps.ToString();
  ASSERT_TRUE(state.ok() && gathered.ok() && kept_state.ok());
  // The graph the backend captured at its creation (without a reducer) is captured again, with
  // the all-reduce, by the first step; the other steps replay it.
  EXPECT_EQ(replays, kSteps - 1) << "steps 2 on replay the graph the first step captured";
  size_t i = 0;
  for (const auto& t : want.t) {
    for (float w : t) {
      ASSERT_NEAR(flat[i], w, 1e-4f + 1e-3f * std::fabs(w)) << "value " << i;
      ++i;
    }
  }
  for (uint32_t k = 0; k < W().size(); ++k) {
    EXPECT_EQ(
        std::memcmp(everyone.data() + k * flat.size(), flat.data(), flat.size() * sizeof(float)), 0)
        << "rank " << k;
  }
  ASSERT_FALSE(refused.ok()) << "rank " << W().rank();
  EXPECT_NE(refused.message().find("the training loss or its gradient is not finite"),
            std::string::npos)
      << refused.message();
  size_t j = 0;
  for (const auto& t : kept.t) {
    for (float v : t) {
      ASSERT_EQ(v, flat[j]) << "rank " << W().rank() << " changed value " << j;
      ++j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OneOrSeveral, NcclBuckets, ::testing::Values(1u, 2u, 16u));

// Buckets change where the reductions run, not what they compute: with batch norm (its scales'
// gradients lie apart from their blocks'), a bucket per layer and two buckets end every step
// where one reduction after the backward pass does. On 2 ranks an element's mean is
// (a + b) / 2 whichever way NCCL splits the buffer, so float32 gives the same bits; bf16
// (whose conv algorithms each backend times for itself) agrees within its rounding, which a
// reduction that read a filter gradient before its float copy was written would not.
TEST(NcclReducer, BucketsEndWhereOneReductionEnds) {
  if (!EveryRankHasItsGpu()) GTEST_SKIP() << "fewer GPUs than ranks on a machine";
  const int gpu = static_cast<int>(W().local_rank());
  ASSERT_EQ(cudaSetDevice(gpu), cudaSuccess);
  constexpr uint32_t kBatch = 16, kSteps = 5;
  ModelConfig c = TinyConfig();
  c.batch_norm = true;
  const Tensors start = InitialParameters(c, 9);
  const OptimizerConfig sgd{0.05f, 0.9f, 0.f};
  std::vector<testing::DeviceBatch> batches;
  for (uint32_t s = 0; s < kSteps; ++s) {
    batches.push_back(
        testing::ToDevice(RandomBatch(c, kBatch, 500 + 10 * s + W().rank(), DType::kFloat32)));
  }
  auto nccl = NcclReducer::Create(W(), gpu);
  ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
  for (bool bf16 : {false, true}) {
    std::vector<std::vector<float>> ends;
    for (uint32_t buckets : {1u, 2u, 16u}) {
      SCOPED_TRACE(std::string(bf16 ? "bf16" : "fp32") + ", reduce_buckets " +
                   std::to_string(buckets));
      CudaBackendOptions o;
      o.device = gpu;
      o.tf32 = false;
      o.bf16 = bf16;
      o.cuda_graph = true;
      o.reduce_buckets = buckets;
      auto ranked = CudaBackend::Create(c, TinyNormalization(c), kBatch, start, o);
      ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
      ASSERT_TRUE((*ranked)->SetGradientReducer(nccl->get()).ok());
      Status steps;
      for (const auto& b : batches) {
        if (steps.ok()) steps = (*ranked)->TrainStep(b.ref(), sgd);
      }
      ASSERT_TRUE(steps.ok()) << steps.ToString();
      EXPECT_EQ((*ranked)->graph_replays(), kSteps - 1);
      Tensors got;
      ASSERT_TRUE((*ranked)->GetState(&got, nullptr).ok());
      std::vector<float> flat;
      for (const auto& t : got.t) flat.insert(flat.end(), t.begin(), t.end());
      ends.push_back(std::move(flat));
    }
    for (size_t k = 1; k < ends.size(); ++k) {
      ASSERT_EQ(ends[k].size(), ends[0].size());
      for (size_t i = 0; i < ends[0].size(); ++i) {
        if (!bf16 && W().size() == 2) {
          ASSERT_EQ(ends[k][i], ends[0][i]) << "setting " << k << ", value " << i;
        } else {
          ASSERT_NEAR(ends[k][i], ends[0][i], 2e-3f + 2e-2f * std::fabs(ends[0][i]))
              << (bf16 ? "bf16" : "fp32") << ", setting " << k << ", value " << i;
        }
      }
    }
  }
}
#endif

}  // namespace
}  // namespace rf
