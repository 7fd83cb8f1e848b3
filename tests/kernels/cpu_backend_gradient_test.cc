// ComputeGradients against central differences of the mean loss, for a sample of entries of
// every parameter tensor of the tiny model: every layer's backward pass is checked against its
// own forward pass.
//
// Tolerance. Per tensor we compare the sampled vectors: rel = |fd - g| / |g| (Euclidean norms).
// The step must be small enough that few ReLU or max-pool choices flip inside [w - eps, w + eps]
// (each flip bends the difference quotient by an amount linear in eps) and large enough that the
// float forward pass's rounding stays small next to the loss change. Measured: for 4-5 samples at
// eps = 3e-3, rel < 1e-4 for every tensor (at 1e-2 one flip gave 0.06); for 37 samples, which
// have many more units to flip, conv0.weight's rel is 0.010 at eps = 3e-3, 0.0026 at 1e-3 and
// 5e-4 at 3e-4 (linear in eps: flips, not a wrong gradient), so that test uses 3e-4.
// Planted bugs give rel of 0.07 to 2 on the tensors they touch: a conv bias gradient doubled
// (0.5), the pool gradient sent to the wrong window element (0.08 to 2.3), the hidden ReLU mask
// dropped (0.07 to 0.26), col2im shifting the wrong way (0.16 to 0.55), the sum loss instead of
// the mean (0.75). A tolerance of 1e-2 passes the correct code with a 10x or larger margin and
// fails each of those.
// Batch norm couples every sample: a conv0 weight moves the loss by little, so the float forward
// pass's rounding weighs more (about 1e-3 of the gradient per entry at 3e-4; one kink in 37
// samples adds some): the correct code measured 0.0134 at most. Its planted bugs: the mean term
// of the normalization's backward pass dropped (0.27 to 1.3 on every tensor before it), the xhat
// term dropped (0.44 to 1.0), the scale's gradient summing dz instead of dz * xhat (0.30 to 0.53).
// It is checked at 3e-2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/cpu_backend.h"
#include "tests/kernels/random_batch.h"

namespace rf {
namespace {

using testing::HostBatch;
using testing::TinyConfig;

constexpr double kTolerance = 1e-2;
constexpr size_t kSamplesPerTensor = 20;

// Parameters with every bias non-zero too, so no gradient is checked only at a special point.
Tensors TinyParameters(const ModelConfig& c) {
  Tensors p = InitialParameters(c, 11);
  testing::TestRng rng(5);
  const std::vector<ParamShape> shapes = ParameterShapes(c);
  for (size_t t = 0; t < shapes.size(); ++t) {
    if (shapes[t].dims.size() != 1) continue;
    const bool scale = shapes[t].name.rfind("bn", 0) == 0;  // batch-norm scales: around one
    for (float& b : p.t[t]) b = static_cast<float>((scale ? 1 : 0) + 0.2 * (rng.Uniform() - 0.5));
  }
  return p;
}

double MeanLoss(CpuBackend& be, const ModelConfig& c, const HostBatch& batch,
                const Tensors& params) {
  const Tensors zeros = ZerosLike(c);
  EXPECT_TRUE(be.SetState(params, zeros).ok());
  double loss = 0;
  EXPECT_TRUE(be.ComputeGradients(batch.ref(), &loss, nullptr).ok());
  return loss;
}

void ExpectGradientsMatchCentralDifferences(const HostBatch& batch, const Normalization& norm,
                                            float eps, const ModelConfig& c = TinyConfig(),
                                            double tolerance = kTolerance) {
  const Tensors params = TinyParameters(c);
  auto be = CpuBackend::Create(c, norm, batch.n, params);
  ASSERT_TRUE(be.ok()) << be.status().ToString();

  double loss = 0;
  Tensors grads;
  ASSERT_TRUE((*be)->ComputeGradients(batch.ref(), &loss, &grads).ok());
  ASSERT_TRUE(std::isfinite(loss));

  const std::vector<ParamShape> shapes = ParameterShapes(c);
  for (size_t t = 0; t < shapes.size(); ++t) {
    const size_t count = shapes[t].count();
    // Every entry of small tensors; an even spread (stride coprime to the dims) of larger ones.
    const size_t picks = std::min(count, kSamplesPerTensor);
    const size_t stride = count <= kSamplesPerTensor ? 1 : count / kSamplesPerTensor + 1;
    double diff2 = 0, grad2 = 0;
    for (size_t k = 0; k < picks; ++k) {
      const size_t i = (k * stride) % count;
      Tensors q = params;
      q.t[t][i] = params.t[t][i] + eps;
      const float up = q.t[t][i];
      const double loss_up = MeanLoss(**be, c, batch, q);
      q.t[t][i] = params.t[t][i] - eps;
      const float down = q.t[t][i];
      const double loss_down = MeanLoss(**be, c, batch, q);
      // Divide by the step actually taken: w +- eps rounds in float.
      const double fd = (loss_up - loss_down) / (static_cast<double>(up) - down);
      const double g = grads.t[t][i];
      diff2 += (fd - g) * (fd - g);
      grad2 += g * g;
    }
    const double rel = std::sqrt(diff2) / std::sqrt(grad2);
    // A tensor whose sampled gradient is all zero would pass vacuously.
    EXPECT_GT(std::sqrt(grad2), 1e-4) << shapes[t].name;
    EXPECT_LT(rel, tolerance) << shapes[t].name << ": |fd - g| / |g| = " << rel;
  }
}

TEST(CpuBackendGradient, MatchesCentralDifferencesForUint8Input) {
  const ModelConfig c = TinyConfig();
  ExpectGradientsMatchCentralDifferences(testing::RandomBatch(c, 4, 21, DType::kUInt8),
                                         testing::TinyNormalization(c), 3e-3f);
}

TEST(CpuBackendGradient, MatchesCentralDifferencesForFloat32Input) {
  const ModelConfig c = TinyConfig();
  // Values already centred and scaled, with the identity normalization: the float path alone.
  testing::RandomData d = testing::DrawData(c, 5, 22);
  for (float& v : d.values) v = (v - 128.f) / 64.f;
  const Normalization identity{std::vector<float>(c.channels, 0.f),
                               std::vector<float>(c.channels, 1.f)};
  ExpectGradientsMatchCentralDifferences(
      testing::MakeBatch(d.values, DType::kFloat32, d.labels, DType::kInt32), identity, 3e-3f);
}

// 37 samples: three chunks of work (16, 16 and 5 images; see CpuBackend::kChunkImages), whose
// weight and bias gradients are summed across chunks.
TEST(CpuBackendGradient, MatchesCentralDifferencesForABatchOfSeveralChunks) {
  const ModelConfig c = TinyConfig();
  ExpectGradientsMatchCentralDifferences(testing::RandomBatch(c, 37, 23, DType::kUInt8),
                                         testing::TinyNormalization(c), 3e-4f);
}

// Batch normalization after each convolution (the batch's statistics, as in training): its scale
// and shift (the conv bias) and everything before it, through the normalization's backward pass
// (which couples every sample of the batch). A batch of several chunks: the statistics span them.
TEST(CpuBackendGradient, MatchesCentralDifferencesWithBatchNorm) {
  ModelConfig c = TinyConfig();
  c.batch_norm = true;
  ExpectGradientsMatchCentralDifferences(testing::RandomBatch(c, 5, 24, DType::kUInt8),
                                         testing::TinyNormalization(c), 3e-4f, c, 3e-2);
  ExpectGradientsMatchCentralDifferences(testing::RandomBatch(c, 37, 25, DType::kUInt8),
                                         testing::TinyNormalization(c), 3e-4f, c, 3e-2);
}

}  // namespace
}  // namespace rf
