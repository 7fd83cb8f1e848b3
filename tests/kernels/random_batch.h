// Host batches of reproducible random samples and labels for backend tests, in any sample and
// label dtype, the tiny model the exhaustive checks run on, and tensors for state checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "kernels/backend.h"
#include "model/model.h"
#include "tests/testing/test_rng.h"

namespace rf::testing {

// 2 channels of 8x8 -> conv 3 -> pool 4x4 -> conv 4 -> pool 2x2 -> 16 -> hidden 5 -> 3 classes:
// small enough to perturb every parameter, large enough to exercise every layer and padding.
inline ModelConfig TinyConfig() {
  ModelConfig c;
  c.channels = 2;
  c.height = c.width = 8;
  c.classes = 3;
  c.conv = {3, 4};
  c.hidden = 5;
  return c;
}

// Owns a batch's bytes; ref() points into them.
struct HostBatch {
  std::vector<uint8_t> samples, labels;
  DType dtype = DType::kUInt8, label_dtype = DType::kUInt8;
  uint32_t n = 0;
  Batch ref() const { return {samples.data(), dtype, labels.data(), label_dtype, n}; }
};

// Stores float values (samples) and integer labels in the requested dtypes.
inline HostBatch MakeBatch(const std::vector<float>& values, DType dtype,
                           const std::vector<int32_t>& labels, DType label_dtype) {
  HostBatch b;
  b.dtype = dtype;
  b.label_dtype = label_dtype;
  b.n = static_cast<uint32_t>(labels.size());
  b.samples.resize(values.size() * DTypeSize(dtype));
  StoreFromFloat(dtype, values.data(), b.samples.data(), values.size());
  b.labels.resize(labels.size() * DTypeSize(label_dtype));
  for (size_t i = 0; i < labels.size(); ++i) {
    const int32_t l = labels[i];
    if (label_dtype == DType::kUInt8) b.labels[i] = static_cast<uint8_t>(l);
    if (label_dtype == DType::kUInt16) {
      const auto v = static_cast<uint16_t>(l);
      std::memcpy(b.labels.data() + 2 * i, &v, 2);
    }
    if (label_dtype == DType::kInt32) std::memcpy(b.labels.data() + 4 * i, &l, 4);
  }
  return b;
}

// n samples of whole numbers in [0, 255] (exact in every sample dtype) and labels in
// [0, classes), drawn from `seed`.
struct RandomData {
  std::vector<float> values;
  std::vector<int32_t> labels;
};
inline RandomData DrawData(const ModelConfig& c, uint32_t n, uint64_t seed) {
  TestRng rng(seed);
  RandomData d;
  d.values.resize(size_t{n} * c.channels * c.height * c.width);
  for (float& v : d.values) v = static_cast<float>(rng.Below(256));
  for (uint32_t i = 0; i < n; ++i) d.labels.push_back(static_cast<int32_t>(rng.Below(c.classes)));
  return d;
}

inline HostBatch RandomBatch(const ModelConfig& c, uint32_t n, uint64_t seed,
                             DType dtype = DType::kUInt8) {
  const RandomData d = DrawData(c, n, seed);
  return MakeBatch(d.values, dtype, d.labels, DType::kUInt8);
}

// Tensors shaped for `c` whose every value encodes its tensor and position (times `scale`), so a
// misplaced one shows.
inline Tensors Numbered(const ModelConfig& c, float scale) {
  Tensors t = ZerosLike(c);
  for (size_t i = 0; i < t.t.size(); ++i) {
    for (size_t j = 0; j < t.t[i].size(); ++j) t.t[i][j] = scale * (1000.f * i + j + 1);
  }
  return t;
}

// A backend's parameters (GetState's first half).
inline Tensors ParamsOf(Backend& be) {
  Tensors p;
  EXPECT_TRUE(be.GetState(&p, nullptr).ok());
  return p;
}

// A normalization that maps [0, 255] to roughly [-1, 1] with different numbers per channel.
inline Normalization TinyNormalization(const ModelConfig& c) {
  Normalization n;
  for (uint32_t ch = 0; ch < c.channels; ++ch) {
    n.mean.push_back(120.f + 10.f * ch);
    n.stddev.push_back(70.f + 15.f * ch);
  }
  return n;
}

}  // namespace rf::testing
