// The host's consumers of the one decode take their bits from it: the library loader's host decode
// (pipeline/output/batch_decode.h) is decode::DecodeOnHost of its spec's plan for every spec, and
// the CPU backend's input is decode::DecodeOnHost's normalized float32 for every image dtype and
// transform. CpuBackend has no accessor for its input, so that test goes through its gradients,
// as tests/pipeline/batch_decode_cpu_backend_test.cc does: a backend with mean 0 and stddev 1 fed
// the decoded batch ((x - 0) / 1 is x, so its input is the decoded batch itself) must compute the
// same loss and gradients, bit for bit, as a backend fed the stored batch.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/augment.h"
#include "core/augment_spec.h"
#include "core/batch.h"
#include "core/dtype.h"
#include "decode/host_decode.h"
#include "decode/plan.h"
#include "kernels/cpu_backend.h"
#include "model/model.h"
#include "pipeline/output/batch_decode.h"
#include "tests/kernels/random_batch.h"
#include "tests/pipeline/decode_testing.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/test_rng.h"

namespace rf {
namespace {

using testing::BitIdentical;
using testing::TestRng;

TEST(DecodeConsumers, LoaderHostDecodeIsTheOneDecodeForEverySpecAndTransform) {
  TestRng rng(23);
  const std::vector<DecodeSpec> specs = testing::EverySpec(3, 5, 7);
  ASSERT_GE(specs.size(), 60u);
  const uint64_t indices[3] = {4, 77, uint64_t{1} << 35};
  for (const char* augment : {"", "crop:2,flip,erase:0.5"}) {
    Result<AugmentParams> params = ParseAugmentSpec(augment);
    ASSERT_TRUE(params.ok());
    for (DecodeSpec s : specs) {
      s.augment = *params;
      s.seed = 5;
      Batch batch;
      batch.sample_indices = indices;
      batch.epoch = 2;
      Result<AugmentBatch> a = s.AugmentFor(batch);
      ASSERT_TRUE(a.ok());
      const std::vector<uint8_t> stored = testing::RandomBytes(
          rng, size_t{3} * s.channels * s.height * s.width * DTypeSize(s.stored));
      std::vector<uint8_t> loader(3 * s.OutputSampleBytes(), 0x11),
          one(3 * s.OutputSampleBytes(), 0x22);
      DecodeSamplesOnHost(s, stored.data(), 3, loader.data(), *a);
      ASSERT_TRUE(decode::DecodeOnHost(s.ToPlan(), stored.data(), 3, one.data(), *a));
      EXPECT_TRUE(testing::SameBytes(loader, one, DTypeSize(s.output)))
          << testing::Describe(s) << (*augment != 0 ? ", augmented" : "");
    }
  }
}

constexpr uint32_t kN = 5;

struct Outcome {
  double loss = 0;
  Tensors grads;
};

Outcome Gradients(const Normalization& norm, const Batch& batch, const AugmentParams& augment) {
  Outcome o;
  auto be = CpuBackend::Create(testing::TinyConfig(), norm, kN,
                               InitialParameters(testing::TinyConfig(), 9));
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  if (!be.ok()) return o;
  (*be)->SetAugmentation(augment, /*seed=*/31);
  const Status st = (*be)->ComputeGradients(batch, &o.loss, &o.grads);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return o;
}

TEST(DecodeConsumers, CpuBackendInputIsTheOneDecodeForEveryImageDTypeAndTransform) {
  const ModelConfig c = testing::TinyConfig();
  const Normalization stats{{120.f, -2.5f}, {61.7f, 0.f}};  // a zero stddev
  const Normalization identity{{0.f, 0.f}, {1.f, 1.f}};
  const size_t count = size_t{kN} * c.channels * c.height * c.width;
  const std::vector<uint8_t> labels = {0, 2, 1, 2, 0};  // TinyConfig: 3 classes
  const uint64_t indices[kN] = {8, 1, 900, 3, uint64_t{1} << 40};
  TestRng rng(41);
  for (DType dtype : {DType::kUInt8, DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    std::vector<float> values(count);
    for (float& v : values) {
      v = dtype == DType::kUInt8 ? static_cast<float>(rng.Below(256))
                                 : static_cast<float>(rng.Uniform() * 400.0 - 200.0);
    }
    std::vector<uint8_t> stored(count * DTypeSize(dtype));
    StoreFromFloat(dtype, values.data(), stored.data(), count);
    for (const char* spec : {"", "crop:3,flip,erase:1"}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + spec);
      Result<AugmentParams> params = ParseAugmentSpec(spec);
      ASSERT_TRUE(params.ok());
      Batch batch{stored.data(), dtype, labels.data(), DType::kUInt8, kN};
      batch.sample_indices = indices;
      batch.epoch = 6;
      const Outcome from_stored = Gradients(stats, batch, *params);

      // The same samples through the one decode, as NCHW float32 with the dataset's statistics
      // and the transform the backend's seed draws.
      decode::Plan plan;
      plan.stored = dtype;
      plan.output = DType::kFloat32;
      plan.normalize = true;
      plan.channels = plan.out_channels = c.channels;
      plan.height = c.height;
      plan.width = c.width;
      plan.stats = {stats.mean.data(), stats.stddev.data()};
      Result<AugmentBatch> a = AugmentationOf(batch, *params, 31);
      ASSERT_TRUE(a.ok());
      std::vector<float> decoded(count);
      ASSERT_TRUE(decode::DecodeOnHost(plan, stored.data(), kN, decoded.data(), *a));
      Batch fed{decoded.data(), DType::kFloat32, labels.data(), DType::kUInt8, kN};
      const Outcome from_decoded = Gradients(identity, fed, AugmentParams{});

      EXPECT_EQ(std::memcmp(&from_stored.loss, &from_decoded.loss, sizeof(double)), 0)
          << from_stored.loss << " against " << from_decoded.loss;
      EXPECT_TRUE(BitIdentical(from_stored.grads, from_decoded.grads));
    }
  }
}

}  // namespace
}  // namespace rf
