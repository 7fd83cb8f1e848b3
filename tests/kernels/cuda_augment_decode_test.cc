// The CUDA backend's decode kernels under augmentation (kernels/cuda_kernels.cuh's DecodeSamples,
// the float32 precision's; kernels/cuda_bf16_kernels.cuh's DecodeSamplesBf16Nhwc, the bf16
// one's): for every spec, uint8 input decodes to the CPU backend's input bit for bit (the bf16
// one to it rounded), each sample through the transform its global index draws, with the indices
// in device memory as the training sources hand them over. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/augment.h"
#include "core/augment_spec.h"
#include "core/dtype.h"
#include "cuda/handles.h"
#include "kernels/cuda_bf16_kernels.cuh"
#include "kernels/cuda_kernels.cuh"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/random_batch.h"
#include "tests/testing/require_gpu.h"

namespace rf {
namespace {

using testing::Download;
using testing::Upload;

constexpr uint32_t kN = 12, kChannels = 3, kHeight = 10, kWidth = 7, kPadded = 8;
constexpr size_t kPlane = size_t{kHeight} * kWidth;

// The CPU backend's input (CpuBackend::LoadBatch) as NCHW: (x - mean[c]) / divisor[c] from the
// pixel the transform says, 0 where it says none.
std::vector<float> Reference(const std::vector<uint8_t>& in, const std::vector<uint64_t>& indices,
                             const AugmentParams& p, uint64_t seed, uint64_t epoch,
                             const std::vector<float>& mean, const std::vector<float>& divisor) {
  std::vector<float> out(in.size());
  for (size_t img = 0; img < kN; ++img) {
    const SampleTransform t = DrawTransform(p, seed, epoch, indices[img], kHeight, kWidth);
    for (size_t c = 0; c < kChannels; ++c) {
      for (uint32_t y = 0; y < kHeight; ++y) {
        for (uint32_t x = 0; x < kWidth; ++x) {
          uint32_t src = 0;
          const size_t base = (img * kChannels + c) * kPlane;
          out[base + y * kWidth + x] =
              SourcePixel(t, kHeight, kWidth, y, x, &src)
                  ? (static_cast<float>(in[base + src]) - mean[c]) / divisor[c]
                  : 0.f;
        }
      }
    }
  }
  return out;
}

TEST(CudaAugmentDecode, Float32AndBf16DecodesEqualTheCpuBackendsInputForEverySpec) {
  RF_REQUIRE_GPU();
  testing::TestRng rng(5);
  std::vector<uint8_t> samples(kN * kChannels * kPlane);
  for (uint8_t& v : samples) v = static_cast<uint8_t>(rng.Below(256));
  std::vector<uint64_t> indices;
  for (uint32_t i = 0; i < kN; ++i) indices.push_back(i * 7919 + (i % 3 == 0 ? 1ull << 33 : 0));
  const std::vector<float> mean = {120.f, 3.5f, 0.f}, divisor = {61.f, 1.f, 7.25f};
  std::vector<float> norm = mean;
  norm.insert(norm.end(), divisor.begin(), divisor.end());
  cuda::DeviceBuffer d_samples = Upload(samples), d_indices = Upload(indices),
                     d_norm = Upload(norm);
  auto f32 = cuda::DeviceBuffer::Allocate(samples.size() * sizeof(float), "float32 input");
  auto bf16 = cuda::DeviceBuffer::Allocate(kN * kPlane * kPadded * 2, "bf16 input");
  ASSERT_TRUE(f32.ok() && bf16.ok());
  const float* d_mean = d_norm.as<float>();
  const float* d_divisor = d_norm.as<float>() + kChannels;

  for (const char* spec : {"", "crop:3", "flip", "erase:1", "crop:2,flip,erase:0.5"}) {
    SCOPED_TRACE(spec);
    Result<AugmentParams> p = ParseAugmentSpec(spec);
    ASSERT_TRUE(p.ok());
    const uint64_t seed = 99, epoch = 4;
    AugmentBatch a;
    if (p->enabled()) {
      a.params = *p;
      a.seed = seed;
      a.epoch = epoch;
      a.indices = d_indices.as<uint64_t>();
    }
    const std::vector<float> want = Reference(samples, indices, *p, seed, epoch, mean, divisor);

    ASSERT_EQ(cuda::DecodeSamples(d_samples.data(), DType::kUInt8, kN, kChannels, kHeight, kWidth,
                                  d_mean, d_divisor, a, f32->as<float>(), nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = Download<float>(f32->data(), want.size());
    ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
        << "float32 decode differs from the CPU backend's input";

    ASSERT_EQ(
        cuda::DecodeSamplesBf16Nhwc(d_samples.data(), DType::kUInt8, kN, kChannels, kPadded,
                                    kHeight, kWidth, d_mean, d_divisor, a, bf16->data(), nullptr),
        cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> got16 = Download<uint16_t>(bf16->data(), kN * kPlane * kPadded);
    for (size_t img = 0; img < kN; ++img) {
      for (size_t px = 0; px < kPlane; ++px) {
        for (size_t c = 0; c < kPadded; ++c) {
          const uint16_t expect =
              c < kChannels ? FloatToBFloat16(want[(img * kChannels + c) * kPlane + px]) : 0;
          ASSERT_EQ(got16[(img * kPlane + px) * kPadded + c], expect)
              << "bf16: sample " << img << " pixel " << px << " channel " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace rf
