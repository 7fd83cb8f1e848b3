// The CUDA backend against the CPU reference on the same batch and weights: the loss and every
// parameter gradient (TF32 off: each tensor's relative error below 1e-3; bf16 conv blocks: below
// 5e-2, far under what a wrong layout or index gives; TF32 on is printed, not asserted), and the
// parameters and momentum after one TrainStep. Skips where no GPU is found.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu_backend.h"
#include "kernels/cuda_backend.h"
#include "tests/kernels/cuda_test_util.h"

namespace rf {
namespace {

using testing::DeviceBatch;
using testing::HostBatch;
using testing::RelError;

constexpr double kGradientTolerance = 1e-3;
// bf16 keeps 8 bits of mantissa: each stored activation is off by up to 2^-9 relative, and the
// gradients of sums over thousands of them land near 1e-2.
constexpr double kBf16Tolerance = 5e-2;

enum class Math { kFloat32, kTf32, kBf16 };
const char* Name(Math m) {
  return m == Math::kFloat32 ? "fp32" : m == Math::kTf32 ? "tf32" : "bf16";
}

std::unique_ptr<CudaBackend> MakeCuda(const ModelConfig& c, uint32_t max_batch, const Tensors& p,
                                      Math math) {
  CudaBackendOptions o;
  o.tf32 = math == Math::kTf32;
  o.bf16 = math == Math::kBf16;
  auto be = CudaBackend::Create(c, testing::TinyNormalization(c), max_batch, p, o);
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  return be.ok() ? std::move(*be) : nullptr;
}

std::unique_ptr<CpuBackend> MakeCpu(const ModelConfig& c, uint32_t max_batch, const Tensors& p) {
  auto be = CpuBackend::Create(c, testing::TinyNormalization(c), max_batch, p);
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  return be.ok() ? std::move(*be) : nullptr;
}

struct Case {
  const char* name;
  ModelConfig config;
  uint32_t max_batch, n;
  DType dtype;
};

// Returns the largest per-tensor relative error, printing each.
double CompareGradients(const Case& k, Math math) {
  const Tensors p = testing::ParametersWithBiases(k.config, 11);
  auto cpu = MakeCpu(k.config, k.max_batch, p);
  auto gpu = MakeCuda(k.config, k.max_batch, p, math);
  if (cpu == nullptr || gpu == nullptr) return INFINITY;
  const HostBatch host = testing::RandomBatch(k.config, k.n, 77, k.dtype);
  const DeviceBatch dev = testing::ToDevice(host);

  double cpu_loss = 0, gpu_loss = 0;
  Tensors cpu_g, gpu_g;
  EXPECT_TRUE(cpu->ComputeGradients(host.ref(), &cpu_loss, &cpu_g).ok());
  const Status st = gpu->ComputeGradients(dev.ref(), &gpu_loss, &gpu_g);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return INFINITY;
  if (math == Math::kFloat32) {
    EXPECT_NEAR(gpu_loss, cpu_loss, 1e-5 * std::abs(cpu_loss)) << k.name;
  } else if (math == Math::kBf16) {
    EXPECT_NEAR(gpu_loss, cpu_loss, 1e-2 * std::abs(cpu_loss)) << k.name;
  }

  const std::vector<ParamShape> shapes = ParameterShapes(k.config);
  double worst = 0;
  std::printf("%s, %s: loss cpu %.7f gpu %.7f\n", k.name, Name(math), cpu_loss, gpu_loss);
  for (size_t t = 0; t < shapes.size(); ++t) {
    const double rel = RelError(gpu_g.t[t], cpu_g.t[t]);
    std::printf("  %-12s rel %.3g\n", shapes[t].name.c_str(), rel);
    if (math == Math::kFloat32) {
      EXPECT_LT(rel, kGradientTolerance) << k.name << " " << shapes[t].name;
    } else if (math == Math::kBf16) {
      EXPECT_LT(rel, kBf16Tolerance) << k.name << " " << shapes[t].name;
    }
    worst = std::max(worst, rel);
  }
  std::printf("%s", gpu->Describe().c_str());
  std::printf("\n");
  return worst;
}

std::vector<Case> Cases() {
  return {
      {"tiny uint8 full batch", testing::TinyConfig(), 8, 8, DType::kUInt8},
      {"tiny float32 full batch", testing::TinyConfig(), 8, 8, DType::kFloat32},
      {"tiny uint8 partial batch (5 of 8)", testing::TinyConfig(), 8, 5, DType::kUInt8},
      {"cifar uint8 full batch", testing::CifarConfig(), 16, 16, DType::kUInt8},
      {"cifar float32 partial batch (11 of 16)", testing::CifarConfig(), 16, 11, DType::kFloat32},
  };
}

TEST(CudaBackendGradients, MatchTheCpuBackendWithTf32Off) {
  RF_REQUIRE_GPU();
  for (const Case& k : Cases()) CompareGradients(k, Math::kFloat32);
}

TEST(CudaBackendGradients, MatchTheCpuBackendLooselyWithBf16ConvBlocks) {
  RF_REQUIRE_GPU();
  std::vector<Case> cases = Cases();
  // Odd sizes: the pooling drops a row and a column, and channel counts are not multiples of 8.
  ModelConfig odd = testing::CifarConfig();
  odd.height = 15;
  odd.width = 13;
  odd.conv = {6, 10};
  cases.push_back({"odd 15x13, conv 6,10, uint8", odd, 8, 7, DType::kUInt8});
  for (const Case& k : cases) CompareGradients(k, Math::kBf16);
}

TEST(CudaBackendGradients, PrintWhatTf32OnGives) {
  RF_REQUIRE_GPU();
  const std::vector<Case> cases = Cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const double worst = CompareGradients(cases[i], Math::kTf32);
    RecordProperty("tf32_worst_rel_" + std::to_string(i), std::to_string(worst));
  }
}

// One step from the same parameters and a non-zero momentum: both backends apply the same SGD
// rule to gradients that agree to 1e-3, so the updates (w1 - w0) agree to about that.
TEST(CudaBackendSgd, TrainStepMatchesTheCpuBackend) {
  RF_REQUIRE_GPU();
  const ModelConfig c = testing::CifarConfig();
  const Tensors w0 = testing::ParametersWithBiases(c, 5);
  Tensors v0 = ZerosLike(c);
  testing::TestRng rng(9);
  for (auto& t : v0.t) {
    for (float& v : t) v = static_cast<float>(1e-3 * (rng.Uniform() - 0.5));
  }
  auto cpu = MakeCpu(c, 16, w0);
  auto gpu = MakeCuda(c, 16, w0, Math::kFloat32);
  ASSERT_TRUE(cpu && gpu);
  ASSERT_TRUE(cpu->SetState(w0, v0).ok());
  ASSERT_TRUE(gpu->SetState(w0, v0).ok());
  const HostBatch host = testing::RandomBatch(c, 16, 31);
  const DeviceBatch dev = testing::ToDevice(host);

  // The GPU's own gradients, to check its update exactly.
  Tensors g;
  ASSERT_TRUE(gpu->ComputeGradients(dev.ref(), nullptr, &g).ok());

  const SgdConfig sgd{0.05f, 0.9f, 1e-2f};
  ASSERT_TRUE(cpu->TrainStep(host.ref(), sgd).ok());
  ASSERT_TRUE(gpu->TrainStep(dev.ref(), sgd).ok());
  Tensors cw, cv, gw, gv;
  ASSERT_TRUE(cpu->GetState(&cw, &cv).ok());
  ASSERT_TRUE(gpu->GetState(&gw, &gv).ok());
  const std::vector<ParamShape> shapes = ParameterShapes(c);
  for (size_t t = 0; t < shapes.size(); ++t) {
    std::vector<float> cpu_step(w0.t[t].size()), gpu_step(w0.t[t].size());
    for (size_t i = 0; i < w0.t[t].size(); ++i) {
      cpu_step[i] = cw.t[t][i] - w0.t[t][i];
      gpu_step[i] = gw.t[t][i] - w0.t[t][i];
      // The torch rule on the GPU's gradients, rounded as the kernel rounds (no FMA).
      const float v = sgd.momentum * v0.t[t][i] + (g.t[t][i] + sgd.weight_decay * w0.t[t][i]);
      ASSERT_FLOAT_EQ(gv.t[t][i], v) << shapes[t].name << " index " << i;
      ASSERT_FLOAT_EQ(gw.t[t][i], w0.t[t][i] - sgd.lr * v) << shapes[t].name << " index " << i;
    }
    EXPECT_LT(RelError(gpu_step, cpu_step), kGradientTolerance) << shapes[t].name;
    EXPECT_LT(RelError(gv.t[t], cv.t[t]), kGradientTolerance) << shapes[t].name;
  }
  const StepStats cs = cpu->TakeTrainStats(), gs = gpu->TakeTrainStats();
  EXPECT_EQ(gs.samples, 16u);
  EXPECT_NEAR(gs.loss_sum, cs.loss_sum, 1e-5 * cs.loss_sum);
}

}  // namespace
}  // namespace rf
