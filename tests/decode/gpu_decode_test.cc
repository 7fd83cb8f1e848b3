// The one decode on the GPU (decode/kernel.cuh) against the one on the host (decode/host_decode.h):
// every plan, in every layout (the CPU backend's CNHW and a padded NHWC among them, which the
// loader's own tests do not reach), on random bits (NaNs, infinities and subnormals among them),
// with each sample's transform drawn in the kernel or ahead of it, bit for bit; labels likewise;
// and the CUDA backend's two inputs (kernels/cuda_kernels.cuh's DecodeSamples, float32 NCHW, and
// kernels/cuda_bf16_kernels.cuh's DecodeSamplesBf16Nhwc, padded bf16 NHWC) for every image dtype:
// the host's bits wherever the host's value is not a NaN, and a NaN where it is (NanBits::
// kGpuNative). Skips without a GPU.
#include "decode/gpu_decode.cuh"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/augment.h"
#include "core/augment_spec.h"
#include "core/dtype.h"
#include "cuda/augment_transforms.cuh"
#include "cuda/handles.h"
#include "decode/dtypes.h"
#include "decode/host_decode.h"
#include "decode/plan.h"
#include "kernels/cuda_bf16_kernels.cuh"
#include "kernels/cuda_kernels.cuh"
#include "pipeline/output/batch_decode.h"
#include "tests/pipeline/decode_testing.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/test_rng.h"

namespace rf::decode {
namespace {

using testing::RandomBytes;
using testing::SameBytes;
using testing::TestRng;

constexpr uint32_t kN = 4, kC = 3, kH = 5, kW = 7;
const std::vector<float> kStats = {17.375f, -3.1f, 0.5f,    // means
                                   0.37f,   0.f,   11.3f};  // stddevs: a 0 among them

cuda::DeviceBuffer Upload(const void* data, size_t bytes) {
  auto b = cuda::DeviceBuffer::Allocate(bytes, "test data");
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  if (!b.ok()) return {};
  EXPECT_EQ(cudaMemcpy(b->data(), data, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return std::move(*b);
}

std::vector<uint8_t> Download(const cuda::DeviceBuffer& b, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), b.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

// The augmentation under test, on the host and on the device (indices uploaded), and with the
// batch's transforms drawn ahead on the device.
struct Augmentation {
  AugmentBatch host, device, device_drawn;
  std::vector<uint64_t> indices;
  cuda::DeviceBuffer d_indices, d_transforms;
};

void MakeAugmentation(const char* spec, Augmentation* a) {
  Result<AugmentParams> p = ParseAugmentSpec(spec);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  a->indices = {3, 91, uint64_t{1} << 34, 7};
  a->host.params = *p;
  a->host.seed = 12;
  a->host.epoch = 5;
  a->host.indices = a->indices.data();
  a->d_indices = Upload(a->indices.data(), kN * sizeof(uint64_t));
  auto t = cuda::DeviceBuffer::Allocate(kN * sizeof(SampleTransform), "transforms");
  ASSERT_TRUE(t.ok());
  a->d_transforms = std::move(*t);
  a->device = a->host;
  a->device.indices = a->d_indices.as<uint64_t>();
  a->device_drawn = a->device;
  ASSERT_EQ(cuda::DrawBatchTransforms(&a->device_drawn, kN, kH, kW,
                                      a->d_transforms.as<SampleTransform>(), nullptr),
            cudaSuccess);
}

// Every plan VisitPlan knows for kC x kH x kW samples: each spec the loader accepts
// (tests/pipeline/decode_testing.h's EverySpec) in NCHW, NHWC, CNHW and an NHWC padded to kC + 2.
std::vector<Plan> EveryPlan() {
  std::vector<Plan> plans;
  for (const DecodeSpec& s : testing::EverySpec(kC, kH, kW)) {
    if (s.layout != SampleLayout::kNCHW) continue;  // the layouts come below
    Plan p = s.ToPlan();
    for (const auto& [layout, out_channels] :
         {std::pair{Layout::kNCHW, kC}, std::pair{Layout::kNHWC, kC}, std::pair{Layout::kCNHW, kC},
          std::pair{Layout::kNHWC, kC + 2}}) {
      p.layout = layout;
      p.out_channels = out_channels;
      plans.push_back(p);
    }
  }
  return plans;
}

std::string Describe(const Plan& p, const char* augment) {
  static const char* kLayouts[] = {"NCHW", "NHWC", "CNHW"};
  return std::string(DTypeName(p.stored)) + " -> " + std::string(DTypeName(p.output)) + " " +
         kLayouts[static_cast<int>(p.layout)] + " " + std::to_string(p.out_channels) + " channels" +
         (p.normalize ? " normalized" : "") + ", augment \"" + augment + "\"";
}

TEST(GpuDecode, EveryPlanEqualsTheHostDecodeBitForBit) {
  RF_REQUIRE_GPU();
  TestRng rng(19);
  const cuda::DeviceBuffer d_stats = Upload(kStats.data(), kStats.size() * sizeof(float));
  const std::vector<Plan> plans = EveryPlan();
  // 4 integer dtypes into 3 floats (or normalized) and into themselves (not normalized), 3 float
  // dtypes into 3 floats (or normalized); each in NCHW, NHWC, CNHW and a padded NHWC.
  ASSERT_EQ(plans.size(), (4u * (3 * 2 + 1) + 3 * 3 * 2) * 4);
  for (const char* spec : {"", "crop:2,flip,erase:1"}) {
    Augmentation a;
    MakeAugmentation(spec, &a);
    for (const Plan& base : plans) {
      SCOPED_TRACE(Describe(base, spec));
      const std::vector<uint8_t> stored =
          RandomBytes(rng, size_t{kN} * kC * kH * kW * DTypeSize(base.stored));
      const size_t out_bytes = size_t{kN} * base.out_channels * kH * kW * DTypeSize(base.output);
      Plan host_plan = base;
      host_plan.stats = {kStats.data(), kStats.data() + kC};
      std::vector<uint8_t> host(out_bytes);
      ASSERT_TRUE(DecodeOnHost(host_plan, stored.data(), kN, host.data(), a.host));

      Plan gpu_plan = base;
      gpu_plan.stats = {d_stats.as<float>(), d_stats.as<float>() + kC};
      const cuda::DeviceBuffer in = Upload(stored.data(), stored.size());
      auto out = cuda::DeviceBuffer::Allocate(out_bytes, "test output");
      ASSERT_TRUE(out.ok());
      for (const AugmentBatch* device : {&a.device, &a.device_drawn}) {
        ASSERT_EQ(cudaMemset(out->data(), 0x5a, out_bytes), cudaSuccess);
        ASSERT_EQ(DecodeOnGpu(gpu_plan, in.data(), kN, out->data(), *device, nullptr), cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_TRUE(SameBytes(Download(*out, out_bytes), host, DTypeSize(base.output)))
            << (device->transforms != nullptr ? "transforms drawn ahead" : "drawn per element");
      }
    }
  }
}

TEST(GpuDecode, LabelsOfEveryIntegerDTypeWidenAsOnTheHost) {
  RF_REQUIRE_GPU();
  TestRng rng(3);
  for (DType dtype : testing::DTypesOf(IntegerDTypes{})) {
    constexpr uint32_t kLabels = 1000;
    const std::vector<uint8_t> labels = RandomBytes(rng, kLabels * DTypeSize(dtype));
    std::vector<int64_t> host(kLabels);
    ASSERT_TRUE(ForEachLabel(dtype, labels.data(), kLabels,
                             [&](uint32_t i, int64_t label) { host[i] = label; }));
    const cuda::DeviceBuffer in = Upload(labels.data(), labels.size());
    auto out = cuda::DeviceBuffer::Allocate(kLabels * sizeof(int64_t), "labels");
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(WidenLabelsOnGpu(dtype, in.data(), kLabels, out->as<int64_t>(), nullptr),
              cudaSuccess);
    std::vector<int64_t> gpu(kLabels);
    ASSERT_EQ(cudaMemcpy(gpu.data(), out->data(), kLabels * 8, cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(gpu, host) << DTypeName(dtype);
  }
  EXPECT_EQ(WidenLabelsOnGpu(DType::kFloat32, nullptr, 1, nullptr, nullptr), cudaErrorInvalidValue);
}

TEST(GpuDecode, LabelsWidenedInTheDecodesLaunchEqualTheHostsAndLeaveTheSamplesAlone) {
  RF_REQUIRE_GPU();
  TestRng rng(23);
  const cuda::DeviceBuffer d_stats = Upload(kStats.data(), kStats.size() * sizeof(float));
  const std::vector<DType> dtypes = testing::DTypesOf(IntegerDTypes{});
  const std::vector<Plan> plans = EveryPlan();
  Augmentation none;
  MakeAugmentation("", &none);
  size_t copies = 0;
  for (size_t k = 0; k < plans.size(); ++k) {
    Plan plan = plans[k];
    const DType dtype = dtypes[k % dtypes.size()];  // each plan with one dtype, every dtype often
    SCOPED_TRACE(Describe(plan, "") + ", labels " + std::string(DTypeName(dtype)));
    copies += plan.IsCopy(none.device) ? 1 : 0;
    plan.stats = {d_stats.as<float>(), d_stats.as<float>() + kC};
    const std::vector<uint8_t> stored =
        RandomBytes(rng, size_t{kN} * kC * kH * kW * DTypeSize(plan.stored));
    const std::vector<uint8_t> labels = RandomBytes(rng, kN * DTypeSize(dtype));
    std::vector<int64_t> host(kN);
    ASSERT_TRUE(ForEachLabel(dtype, labels.data(), kN,
                             [&](uint32_t i, int64_t label) { host[i] = label; }));
    const size_t out_bytes = size_t{kN} * plan.out_channels * kH * kW * DTypeSize(plan.output);
    const cuda::DeviceBuffer in = Upload(stored.data(), stored.size());
    const cuda::DeviceBuffer in_labels = Upload(labels.data(), labels.size());
    auto alone = cuda::DeviceBuffer::Allocate(out_bytes, "samples decoded alone");
    auto fused = cuda::DeviceBuffer::Allocate(out_bytes, "samples decoded with labels");
    auto out_labels = cuda::DeviceBuffer::Allocate(kN * sizeof(int64_t), "labels");
    ASSERT_TRUE(alone.ok() && fused.ok() && out_labels.ok());
    ASSERT_EQ(cudaMemset(out_labels->data(), 0x5a, kN * sizeof(int64_t)), cudaSuccess);
    ASSERT_EQ(DecodeOnGpu(plan, in.data(), kN, alone->data(), none.device, nullptr), cudaSuccess);
    ASSERT_EQ(DecodeOnGpu(plan, in.data(), kN, fused->data(), none.device, nullptr,
                          {dtype, in_labels.data(), out_labels->as<int64_t>()}),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(Download(*fused, out_bytes), Download(*alone, out_bytes));
    const std::vector<uint8_t> got = Download(*out_labels, kN * sizeof(int64_t));
    std::vector<int64_t> gpu(kN);
    std::memcpy(gpu.data(), got.data(), got.size());
    EXPECT_EQ(gpu, host);
  }
  EXPECT_GT(copies, 0u);  // the plain copies' path (a copy, then the labels' own launch) ran too
  EXPECT_EQ(DecodeOnGpu(plans[0], nullptr, kN, nullptr, none.device, nullptr,
                        {DType::kFloat32, nullptr, reinterpret_cast<int64_t*>(16)}),
            cudaErrorInvalidValue);
}

// Element i of `got` has `want`'s bits, or both are NaNs (float32 or bfloat16 bits).
::testing::AssertionResult SameOrBothNan(const std::vector<uint8_t>& got,
                                         const std::vector<uint8_t>& want, DType dtype) {
  const size_t size = DTypeSize(dtype);
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size() / size; ++i) {
    if (std::memcmp(got.data() + i * size, want.data() + i * size, size) == 0) continue;
    if (std::isnan(LoadAsFloat(dtype, got.data(), i)) &&
        std::isnan(LoadAsFloat(dtype, want.data(), i))) {
      continue;
    }
    return ::testing::AssertionFailure()
           << "element " << i << " is " << LoadAsFloat(dtype, got.data(), i) << " against "
           << LoadAsFloat(dtype, want.data(), i);
  }
  return ::testing::AssertionSuccess();
}

TEST(GpuDecode, CudaBackendInputsAreTheHostDecodeForEveryImageDType) {
  RF_REQUIRE_GPU();
  TestRng rng(29);
  const cuda::DeviceBuffer d_stats = Upload(kStats.data(), kStats.size() * sizeof(float));
  constexpr uint32_t kPadded = 8;
  for (const char* spec : {"", "crop:3,flip,erase:0.5"}) {
    Augmentation a;
    MakeAugmentation(spec, &a);
    for (DType dtype : {DType::kUInt8, DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + ", augment \"" + spec + "\"");
      const std::vector<uint8_t> stored =
          RandomBytes(rng, size_t{kN} * kC * kH * kW * DTypeSize(dtype));
      const cuda::DeviceBuffer in = Upload(stored.data(), stored.size());
      Plan plan;
      plan.stored = dtype;
      plan.normalize = true;
      plan.channels = plan.out_channels = kC;
      plan.height = kH;
      plan.width = kW;
      plan.stats = {kStats.data(), kStats.data() + kC};

      // float32 NCHW.
      plan.output = DType::kFloat32;
      std::vector<uint8_t> host(size_t{kN} * kC * kH * kW * 4);
      ASSERT_TRUE(DecodeOnHost(plan, stored.data(), kN, host.data(), a.host));
      auto out = cuda::DeviceBuffer::Allocate(host.size(), "float32 input");
      ASSERT_TRUE(out.ok());
      ASSERT_EQ(
          cuda::DecodeSamples(in.data(), dtype, kN, kC, kH, kW, d_stats.as<float>(),
                              d_stats.as<float>() + kC, a.device_drawn, out->as<float>(), nullptr),
          cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_TRUE(SameOrBothNan(Download(*out, host.size()), host, DType::kFloat32));

      // bf16 NHWC padded to kPadded channels.
      plan.output = DType::kBFloat16;
      plan.layout = Layout::kNHWC;
      plan.out_channels = kPadded;
      host.assign(size_t{kN} * kPadded * kH * kW * 2, 0);
      ASSERT_TRUE(DecodeOnHost(plan, stored.data(), kN, host.data(), a.host));
      auto out16 = cuda::DeviceBuffer::Allocate(host.size(), "bf16 input");
      ASSERT_TRUE(out16.ok());
      ASSERT_EQ(cuda::DecodeSamplesBf16Nhwc(in.data(), dtype, kN, kC, kPadded, kH, kW,
                                            d_stats.as<float>(), d_stats.as<float>() + kC,
                                            a.device_drawn, out16->data(), nullptr),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_TRUE(SameOrBothNan(Download(*out16, host.size()), host, DType::kBFloat16));
    }
  }
  // What the backends never pass: a dtype that is no image dtype.
  EXPECT_EQ(cuda::DecodeSamples(nullptr, DType::kInt32, 1, 1, 1, 1, nullptr, nullptr,
                                AugmentBatch{}, nullptr, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace rf::decode
