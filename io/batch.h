// Batch: one batch of samples and their labels as the layer that made it hands it to the layer
// that computes from it: a view, owning nothing. The pipeline's sources (pipeline/batch_source.h)
// produce batches; the backends (kernels/backend.h) consume them. It lives here, below both, so
// that pipeline/ and kernels/ need not include each other.
//
// Memory: host memory for the CPU backend, device memory (or memory the device can read) for the
// CUDA backend. The producer says how long it stays valid (for the sources: until their next
// call, and on the GPU until the work queued on the consumer's stream before that call has run).
#pragma once

#include <cstdint>

#include "io/dtype.h"

namespace rf {

struct Batch {
  const void* samples = nullptr;  // n samples, row-major C x H x W, in sample_dtype
  DType sample_dtype = DType::kUInt8;
  const void* labels = nullptr;  // n labels in label_dtype
  DType label_dtype = DType::kUInt8;
  uint32_t n = 0;  // from a source, 0: the epoch is over
};

}  // namespace rf
