// Helpers for the CUDA backend's tests: host batches copied to device memory, and the per-tensor
// relative error the comparisons with the CPU backend use.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda/handles.h"
#include "kernels/cuda_backend.h"
#include "tests/kernels/random_batch.h"

namespace rf::testing {

// A batch in device memory, copied from a host batch.
struct DeviceBatch {
  cuda::DeviceBuffer samples, labels;
  DType dtype = DType::kUInt8, label_dtype = DType::kUInt8;
  uint32_t n = 0;
  Batch ref() const { return {samples.data(), dtype, labels.data(), label_dtype, n}; }
};

inline DeviceBatch ToDevice(const HostBatch& h) {
  DeviceBatch d;
  auto s = cuda::DeviceBuffer::Allocate(h.samples.size(), "test samples");
  auto l = cuda::DeviceBuffer::Allocate(h.labels.size(), "test labels");
  EXPECT_TRUE(s.ok() && l.ok());
  if (!s.ok() || !l.ok()) return d;
  d.samples = std::move(*s);
  d.labels = std::move(*l);
  EXPECT_EQ(
      cudaMemcpy(d.samples.data(), h.samples.data(), h.samples.size(), cudaMemcpyHostToDevice),
      cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d.labels.data(), h.labels.data(), h.labels.size(), cudaMemcpyHostToDevice),
            cudaSuccess);
  d.dtype = h.dtype;
  d.label_dtype = h.label_dtype;
  d.n = h.n;
  return d;
}

// A copy of `v` in device memory.
template <typename T>
cuda::DeviceBuffer Upload(const std::vector<T>& v) {
  auto b = cuda::DeviceBuffer::Allocate(v.size() * sizeof(T), "test data");
  EXPECT_TRUE(b.ok());
  if (!b.ok()) return cuda::DeviceBuffer();
  EXPECT_EQ(cudaMemcpy(b->data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice),
            cudaSuccess);
  return std::move(*b);
}

// The `count` values of type T at device address p, on the host.
template <typename T>
std::vector<T> Download(const void* p, size_t count) {
  std::vector<T> v(count);
  EXPECT_EQ(cudaMemcpy(v.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

// ||a - ref|| / ||ref|| (Euclidean; plain ||a - ref|| where ref is all zero).
inline double RelError(const std::vector<float>& a, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size() && i < a.size(); ++i) {
    diff += (double{a[i]} - ref[i]) * (double{a[i]} - ref[i]);
    norm += double{ref[i]} * ref[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Parameters with every bias non-zero too, so no gradient is checked only at a special point.
inline Tensors ParametersWithBiases(const ModelConfig& c, uint64_t seed) {
  Tensors p = InitialParameters(c, seed);
  TestRng rng(seed + 1);
  const std::vector<ParamShape> shapes = ParameterShapes(c);
  for (size_t t = 0; t < shapes.size(); ++t) {
    if (shapes[t].dims.size() != 1) continue;
    for (float& b : p.t[t]) b = static_cast<float>(0.2 * (rng.Uniform() - 0.5));
  }
  return p;
}

// The default model (conv 32/64/128, hidden 256, 10 classes) on CIFAR-shaped input.
inline ModelConfig CifarConfig() { return ModelConfig{}; }

}  // namespace rf::testing
