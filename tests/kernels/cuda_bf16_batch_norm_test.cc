// The bf16 mode's batch-norm kernels (kernels/cuda_bf16_kernels.cuh) against a double-precision
// reference on the host, on inputs every bf16 value of which is exact (j / 32 for integers j), so
// what is compared is the kernels' arithmetic alone: the batch statistics and the tail's gain and
// shift, the running statistics' affine map, the fused tail with them, and the backward pass
// (the scale's gradient and the data gradient). The backend-level comparison with the CPU
// (cuda_backend_vs_cpu_test.cc) mixes in bf16's rounding of every activation, which can move a
// pooling window's arg-max; here nothing can. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/handles.h"
#include "kernels/cuda_bf16_kernels.cuh"
#include "model/model.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/test_rng.h"

namespace rf {
namespace {

using testing::Download;
using testing::Upload;

// 41 channels: a second, partial tile of 32. An odd height: a row no window pools.
constexpr uint32_t kN = 5, kHeight = 7, kWidth = 6, kChannels = 41;
constexpr size_t kPixels = size_t{kN} * kHeight * kWidth;
constexpr size_t kCount = kPixels * kChannels;

uint16_t ToBf16Exact(float v) {  // v must be exact in bf16: its low 16 bits are zero
  uint32_t bits = 0;
  std::memcpy(&bits, &v, 4);
  EXPECT_EQ(bits & 0xffffu, 0u) << v;
  return static_cast<uint16_t>(bits >> 16);
}
float FromBf16(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float v = 0;
  std::memcpy(&v, &bits, 4);
  return v;
}

// Per channel: a mean and a spread of its own, values j / 32 (|j| < 256: exact in bf16).
std::vector<float> DrawActivations(uint64_t seed) {
  testing::TestRng rng(seed);
  std::vector<float> y(kCount);
  for (size_t p = 0; p < kPixels; ++p) {
    for (uint32_t c = 0; c < kChannels; ++c) {
      const int centre = static_cast<int>(c % 7) * 16 - 48,
                spread = 8 + static_cast<int>(c % 5) * 16;
      const int j = centre + static_cast<int>(rng.Below(2 * spread + 1)) - spread;
      y[p * kChannels + c] = static_cast<float>(j) / 32.f;
    }
  }
  return y;
}

std::vector<uint16_t> ToBf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = ToBf16Exact(v[i]);
  return out;
}

struct Reference {
  std::vector<double> mean, var;  // biased
};
Reference Stats(const std::vector<float>& y) {
  Reference r{std::vector<double>(kChannels), std::vector<double>(kChannels)};
  for (uint32_t c = 0; c < kChannels; ++c) {
    double sum = 0, sq = 0;
    for (size_t p = 0; p < kPixels; ++p) sum += y[p * kChannels + c];
    r.mean[c] = sum / kPixels;
    for (size_t p = 0; p < kPixels; ++p) {
      const double d = y[p * kChannels + c] - r.mean[c];
      sq += d * d;
    }
    r.var[c] = sq / kPixels;
  }
  return r;
}

void ExpectClose(double got, double want, double rel, const char* what, uint32_t c) {
  EXPECT_NEAR(got, want, rel * std::max(1.0, std::fabs(want))) << what << " channel " << c;
}

TEST(CudaBf16BatchNorm, StatisticsGainAndShiftMatchADoubleReference) {
  RF_REQUIRE_GPU();
  const std::vector<float> y = DrawActivations(3);
  std::vector<float> scale(kChannels), bias(kChannels);
  for (uint32_t c = 0; c < kChannels; ++c) {
    scale[c] = 0.5f + 0.03f * static_cast<float>(c);
    bias[c] = 0.1f * static_cast<float>(c % 9) - 0.4f;
  }
  cuda::DeviceBuffer d_y = Upload(ToBf16(y)), d_scale = Upload(scale), d_bias = Upload(bias);
  cuda::DeviceBuffer d_partial = Upload(std::vector<float>(cuda::BatchNormPartials(kChannels)));
  cuda::DeviceBuffer d_saved = Upload(std::vector<float>(4 * kChannels));
  cuda::DeviceBuffer d_batch = Upload(std::vector<float>(2 * kChannels));
  float* batch_mean = d_batch.as<float>();
  ASSERT_EQ(
      cuda::BatchNormStatsBf16(kN, kHeight, kWidth, kChannels, d_y.data(), d_scale.as<float>(),
                               d_bias.as<float>(), d_partial.as<float>(), d_saved.as<float>(),
                               batch_mean, batch_mean + kChannels, nullptr),
      cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> saved = Download<float>(d_saved.data(), 4 * kChannels);
  const std::vector<float> batch = Download<float>(d_batch.data(), 2 * kChannels);
  const Reference r = Stats(y);
  for (uint32_t c = 0; c < kChannels; ++c) {
    const double invstd = 1 / std::sqrt(r.var[c] + kBatchNormEps);
    const double gain = scale[c] * invstd;
    ExpectClose(saved[c], r.mean[c], 1e-6, "mean", c);
    ExpectClose(saved[kChannels + c], invstd, 1e-5, "invstd", c);
    ExpectClose(saved[2 * kChannels + c], gain, 1e-5, "gain", c);
    ExpectClose(saved[3 * kChannels + c], bias[c] - r.mean[c] * gain, 1e-5, "shift", c);
    EXPECT_EQ(batch[c], saved[c]) << c;
    ExpectClose(batch[kChannels + c], r.var[c] * kPixels / (kPixels - 1), 1e-5, "unbiased var", c);
  }

  // The fused tail with that gain and shift: each window's max of relu(y * gain + shift).
  cuda::DeviceBuffer d_pooled =
      Upload(std::vector<uint16_t>(kN * (kHeight / 2) * (kWidth / 2) * kChannels));
  const cuda::ChannelAffine affine{d_saved.as<float>() + 2 * kChannels,
                                   d_saved.as<float>() + 3 * kChannels};
  ASSERT_EQ(cuda::BiasReluPoolBf16(kN, kHeight, kWidth, kChannels, d_y.data(), affine,
                                   d_pooled.data(), nullptr),
            cudaSuccess);
  const std::vector<uint16_t> pooled =
      Download<uint16_t>(d_pooled.data(), kN * (kHeight / 2) * (kWidth / 2) * kChannels);
  size_t i = 0, positive = 0;
  for (uint32_t s = 0; s < kN; ++s) {
    for (uint32_t ph = 0; ph < kHeight / 2; ++ph) {
      for (uint32_t pw = 0; pw < kWidth / 2; ++pw) {
        for (uint32_t c = 0; c < kChannels; ++c, ++i) {
          double best = 0;
          for (uint32_t k = 0; k < 4; ++k) {
            const size_t at =
                ((size_t{s} * kHeight + 2 * ph + k / 2) * kWidth + 2 * pw + k % 2) * kChannels + c;
            best =
                std::max(best, y[at] * double{saved[2 * kChannels + c]} + saved[3 * kChannels + c]);
          }
          positive += best > 0;
          EXPECT_NEAR(FromBf16(pooled[i]), best, 1.0 / 256 * best + 1e-6) << "pooled " << i;
        }
      }
    }
  }
  EXPECT_GT(positive, i / 4);  // the ReLU passed a fair share: the comparison saw values
}

TEST(CudaBf16BatchNorm, RunningAffineIsTheRunningStatisticsGainAndShift) {
  RF_REQUIRE_GPU();
  std::vector<float> scale(kChannels), bias(kChannels), mean(kChannels), var(kChannels);
  for (uint32_t c = 0; c < kChannels; ++c) {
    scale[c] = 1.5f - 0.02f * static_cast<float>(c);
    bias[c] = 0.05f * static_cast<float>(c);
    mean[c] = 0.25f * static_cast<float>(c % 6) - 0.5f;
    var[c] = 0.01f + 0.3f * static_cast<float>(c);
  }
  cuda::DeviceBuffer d_scale = Upload(scale), d_bias = Upload(bias), d_mean = Upload(mean),
                     d_var = Upload(var);
  cuda::DeviceBuffer d_saved = Upload(std::vector<float>(4 * kChannels, -7.f));
  ASSERT_EQ(cuda::BatchNormRunningAffineBf16(kChannels, d_scale.as<float>(), d_bias.as<float>(),
                                             d_mean.as<float>(), d_var.as<float>(),
                                             d_saved.as<float>(), nullptr),
            cudaSuccess);
  const std::vector<float> saved = Download<float>(d_saved.data(), 4 * kChannels);
  for (uint32_t c = 0; c < kChannels; ++c) {
    const double gain = scale[c] / std::sqrt(double{var[c]} + kBatchNormEps);
    ExpectClose(saved[2 * kChannels + c], gain, 1e-6, "gain", c);
    ExpectClose(saved[3 * kChannels + c], bias[c] - mean[c] * gain, 1e-6, "shift", c);
    EXPECT_EQ(saved[c], -7.f) << "the batch mean slot is left alone";
  }
}

// The backward pass through the normalization, given v's gradient (bf16-exact, as the pooling's
// backward pass leaves it) and its channel sums (the bias gradient it also writes).
TEST(CudaBf16BatchNorm, BackwardMatchesADoubleReference) {
  RF_REQUIRE_GPU();
  const std::vector<float> y = DrawActivations(4);
  testing::TestRng rng(8);
  std::vector<float> dv(kCount), scale(kChannels), shift_grad(kChannels, 0.f);
  for (size_t i = 0; i < kCount; ++i) {
    // Most positions get no gradient, as after max-pooling; the rest j / 64.
    dv[i] =
        rng.Below(4) == 0 ? static_cast<float>(static_cast<int>(rng.Below(201)) - 100) / 64.f : 0.f;
    shift_grad[i % kChannels] += dv[i];  // exact: sums of j / 64 well inside float's range
  }
  for (uint32_t c = 0; c < kChannels; ++c) scale[c] = 0.7f + 0.01f * static_cast<float>(c);
  const Reference r = Stats(y);
  std::vector<float> saved(4 * kChannels);
  for (uint32_t c = 0; c < kChannels; ++c) {
    saved[c] = static_cast<float>(r.mean[c]);
    saved[kChannels + c] = static_cast<float>(1 / std::sqrt(r.var[c] + kBatchNormEps));
  }
  cuda::DeviceBuffer d_y = Upload(ToBf16(y)), d_grad = Upload(ToBf16(dv)), d_saved = Upload(saved),
                     d_scale = Upload(scale), d_shift_grad = Upload(shift_grad);
  cuda::DeviceBuffer d_partial = Upload(std::vector<float>(cuda::BiasGradPartials(kChannels)));
  cuda::DeviceBuffer d_scale_grad = Upload(std::vector<float>(kChannels));
  ASSERT_EQ(
      cuda::BatchNormBackwardBf16(kN, kHeight, kWidth, kChannels, d_y.data(), d_saved.as<float>(),
                                  d_scale.as<float>(), d_shift_grad.as<float>(), d_grad.data(),
                                  d_partial.as<float>(), d_scale_grad.as<float>(), nullptr),
      cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> scale_grad = Download<float>(d_scale_grad.data(), kChannels);
  const std::vector<uint16_t> grad = Download<uint16_t>(d_grad.data(), kCount);
  std::vector<double> dot(kChannels, 0.0);
  for (size_t i = 0; i < kCount; ++i) {
    const size_t c = i % kChannels;
    dot[c] += dv[i] * ((y[i] - double{saved[c]}) * saved[kChannels + c]);
  }
  double largest = 0;
  for (uint32_t c = 0; c < kChannels; ++c) {
    ExpectClose(scale_grad[c], dot[c], 1e-5, "scale gradient", c);
    largest = std::max(largest, std::fabs(dot[c]));
  }
  EXPECT_GT(largest, 1.0);  // the gradients are not all (near) zero
  size_t nonzero = 0;
  for (size_t i = 0; i < kCount; ++i) {
    const size_t c = i % kChannels;
    const double invstd = saved[kChannels + c], xhat = (y[i] - double{saved[c]}) * invstd;
    const double want =
        scale[c] * invstd * (dv[i] - shift_grad[c] / double{kPixels} - xhat * dot[c] / kPixels);
    const double got = FromBf16(grad[i]);
    nonzero += got != 0;
    // One bf16 rounding of the result (2^-9 relative), after float arithmetic on the way.
    EXPECT_NEAR(got, want, 1.0 / 256 * std::fabs(want) + 1e-5) << "gradient " << i;
  }
  EXPECT_GT(nonzero, kCount / 2);  // the normalization spreads the gradient to every position
}

}  // namespace
}  // namespace rf
