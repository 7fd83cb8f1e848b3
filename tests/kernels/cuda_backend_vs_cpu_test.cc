// The CUDA backend against the CPU reference on the same batch and weights: the loss and every
// parameter gradient (TF32 off: each tensor's relative error below 1e-3; TF32 on is printed, not
// asserted), and the parameters and momentum after one TrainStep. Skips where no GPU is found.
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

std::unique_ptr<CudaBackend> MakeCuda(const ModelConfig& c, uint32_t max_batch, const Tensors& p,
                                      bool tf32) {
  CudaBackendOptions o;
  o.tf32 = tf32;
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
double CompareGradients(const Case& k, bool tf32) {
  const Tensors p = testing::ParametersWithBiases(k.config, 11);
  auto cpu = MakeCpu(k.config, k.max_batch, p);
  auto gpu = MakeCuda(k.config, k.max_batch, p, tf32);
  if (cpu == nullptr || gpu == nullptr) return INFINITY;
  const HostBatch host = testing::RandomBatch(k.config, k.n, 77, k.dtype);
  const DeviceBatch dev = testing::ToDevice(host);

  double cpu_loss = 0, gpu_loss = 0;
  Tensors cpu_g, gpu_g;
  EXPECT_TRUE(cpu->ComputeGradients(host.ref(), &cpu_loss, &cpu_g).ok());
  const Status st = gpu->ComputeGradients(dev.ref(), &gpu_loss, &gpu_g);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return INFINITY;
  if (!tf32) {
    EXPECT_NEAR(gpu_loss, cpu_loss, 1e-5 * std::abs(cpu_loss)) << k.name;
  }

  const std::vector<ParamShape> shapes = ParameterShapes(k.config);
  double worst = 0;
  std::printf("%s, tf32 %s: loss cpu %.7f gpu %.7f\n", k.name, tf32 ? "on" : "off", cpu_loss,
              gpu_loss);
  for (size_t t = 0; t < shapes.size(); ++t) {
    const double rel = RelError(gpu_g.t[t], cpu_g.t[t]);
    std::printf("  %-12s rel %.3g\n", shapes[t].name.c_str(), rel);
    if (!tf32) {
      EXPECT_LT(rel, kGradientTolerance) << k.name << " " << shapes[t].name;
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
  for (const Case& k : Cases()) CompareGradients(k, /*tf32=*/false);
}

TEST(CudaBackendGradients, PrintWhatTf32OnGives) {
  RF_REQUIRE_GPU();
  const std::vector<Case> cases = Cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const double worst = CompareGradients(cases[i], /*tf32=*/true);
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
  auto gpu = MakeCuda(c, 16, w0, /*tf32=*/false);
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
