// CopyToHost: a loader's batch (pipeline/loader.h's LoadedBatch, in host or GPU memory) copied to
// host vectors, for the GPU loader tests to compare with the host loader's. A GPU batch is
// copied on `stream` after making it wait for the batch (LoadedBatch::WaitOn), then the stream
// is synchronized; a host batch is copied directly. Failures are gtest failures.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "pipeline/loader.h"

namespace rf::testing {

struct HostBatch {
  std::vector<uint8_t> samples;
  std::vector<int64_t> labels;
  std::vector<uint64_t> indices;
};

inline HostBatch CopyToHost(LoadedBatch& b, size_t sample_bytes, cudaStream_t stream) {
  HostBatch c;
  c.samples.resize(b.size() * sample_bytes);
  c.labels.resize(b.size());
  c.indices = b.indices();
  if (!b.on_gpu()) {
    std::memcpy(c.samples.data(), b.samples(), c.samples.size());
    std::memcpy(c.labels.data(), b.labels(), c.labels.size() * sizeof(int64_t));
    return c;
  }
  EXPECT_TRUE(b.WaitOn(stream).ok());
  EXPECT_EQ(cudaMemcpyAsync(c.samples.data(), b.samples(), c.samples.size(), cudaMemcpyDeviceToHost,
                            stream),
            cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(c.labels.data(), b.labels(), c.labels.size() * sizeof(int64_t),
                            cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return c;
}

}  // namespace rf::testing
