// The float32 NCHW decode is the CPU backend's own input, bit for bit. CpuBackend has no accessor
// for its input, so the test goes through its gradients: a backend with mean 0 and stddev 1 fed
// the decoded batch ((x - 0) / 1 is x for every float, so its input is the decoded batch itself)
// must compute the same loss and gradients as a backend with the dataset's statistics fed the
// stored batch. The first convolution's weight gradients sum products of every input value, so a
// changed input shows there (AChangedInputChangesTheGradients checks that it does).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/dtype.h"
#include "kernels/cpu_backend.h"
#include "model/model.h"
#include "pipeline/output/batch_decode.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/test_rng.h"

namespace rf {
namespace {

using testing::BitIdentical;
using testing::TestRng;

constexpr uint32_t kN = 6;

ModelConfig Config() {
  ModelConfig c;
  c.channels = 3;
  c.height = c.width = 8;
  c.classes = 4;
  c.conv = {4};
  c.hidden = 6;
  return c;
}

// The dataset's statistics, a zero stddev among them.
Normalization Statistics() { return {{120.f, 131.25f, -2.5f}, {61.7f, 0.f, 3.f}}; }

struct Outcome {
  double loss = 0;
  Tensors grads;
};

Outcome Gradients(const Normalization& norm, const Batch& batch) {
  Outcome o;
  auto be = CpuBackend::Create(Config(), norm, kN, InitialParameters(Config(), 5));
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  if (!be.ok()) return o;
  const Status st = (*be)->ComputeGradients(batch, &o.loss, &o.grads);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return o;
}

struct StoredBatch {
  std::vector<uint8_t> samples, labels;
  DType dtype;
};

// Random samples of `dtype` (uint8: 0..255; the float dtypes: values in about +-200 with
// fractions, rounded into the dtype) and labels.
StoredBatch RandomBatch(DType dtype, uint64_t seed) {
  const ModelConfig c = Config();
  TestRng rng(seed);
  std::vector<float> values(size_t{kN} * c.channels * c.height * c.width);
  for (float& v : values) {
    v = dtype == DType::kUInt8 ? static_cast<float>(rng.Below(256))
                               : static_cast<float>(rng.Uniform() * 400.0 - 200.0);
  }
  StoredBatch b{std::vector<uint8_t>(values.size() * DTypeSize(dtype)), {}, dtype};
  StoreFromFloat(dtype, values.data(), b.samples.data(), values.size());
  for (uint32_t i = 0; i < kN; ++i) b.labels.push_back(static_cast<uint8_t>(rng.Below(c.classes)));
  return b;
}

std::vector<float> DecodeFloat32(const StoredBatch& b) {
  const ModelConfig c = Config();
  DecodeSpec s;
  s.stored = b.dtype;
  s.output = DType::kFloat32;
  s.layout = SampleLayout::kNCHW;
  s.normalize = true;
  s.channels = c.channels;
  s.height = c.height;
  s.width = c.width;
  s.mean = Statistics().mean;
  s.stddev = Statistics().stddev;
  EXPECT_TRUE(s.Validate().ok()) << s.Validate().ToString();
  std::vector<float> out(size_t{kN} * c.channels * c.height * c.width);
  DecodeSamplesOnHost(s, b.samples.data(), kN, out.data());
  return out;
}

Normalization Identity() { return {{0.f, 0.f, 0.f}, {1.f, 1.f, 1.f}}; }

TEST(BatchDecodeVsCpuBackend, Float32DecodeIsTheBackendsInputForEveryImageDType) {
  for (DType dtype : {DType::kUInt8, DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const StoredBatch b = RandomBatch(dtype, 3);
    const Outcome stored =
        Gradients(Statistics(), {b.samples.data(), dtype, b.labels.data(), DType::kUInt8, kN});
    const std::vector<float> decoded = DecodeFloat32(b);
    const Outcome from_decoded = Gradients(
        Identity(), {decoded.data(), DType::kFloat32, b.labels.data(), DType::kUInt8, kN});
    EXPECT_EQ(std::memcmp(&stored.loss, &from_decoded.loss, sizeof(double)), 0)
        << stored.loss << " against " << from_decoded.loss;
    EXPECT_TRUE(BitIdentical(stored.grads, from_decoded.grads));
  }
}

TEST(BatchDecodeVsCpuBackend, AChangedInputChangesTheGradients) {
  const StoredBatch b = RandomBatch(DType::kUInt8, 3);
  std::vector<float> decoded = DecodeFloat32(b);
  const Outcome exact =
      Gradients(Identity(), {decoded.data(), DType::kFloat32, b.labels.data(), DType::kUInt8, kN});
  decoded[77] = std::nextafter(decoded[77], 1e9f);  // one value one ulp off
  const Outcome off =
      Gradients(Identity(), {decoded.data(), DType::kFloat32, b.labels.data(), DType::kUInt8, kN});
  EXPECT_FALSE(BitIdentical(exact.grads, off.grads));
}

}  // namespace
}  // namespace rf
