// Batch: one batch of samples and their labels as the layer that made it hands it to the layer
// that computes from it: a view, owning nothing. The pipeline's sources
// (pipeline/sources/batch_source.h) produce batches; the backends (kernels/backend.h) consume them.
// It lives here, below both, so that pipeline/ and kernels/ need not include each other.
//
// Memory: host memory for the CPU backend, device memory (or memory the device can read) for the
// CUDA backend. The producer says how long it stays valid (for the sources: until their next
// call, and on the GPU until the work queued on the consumer's stream before that call has run).
#pragma once

#include <cstdint>

#include "core/augment.h"
#include "core/dtype.h"
#include "core/status.h"

namespace rf {

struct Batch {
  const void* samples = nullptr;  // n samples, row-major C x H x W, in sample_dtype
  DType sample_dtype = DType::kUInt8;
  const void* labels = nullptr;  // n labels in label_dtype
  DType label_dtype = DType::kUInt8;
  uint32_t n = 0;  // from a source, 0: the epoch is over
  // Which samples these are, for augmentation (core/augment.h keys each sample's transform by
  // them): the n samples' global indices in the dataset, in batch order, in the same memory as
  // `samples` and valid as long; and the epoch the batch belongs to. The training sources
  // (streaming and managed) fill them in; null where a source does not (the evaluation split's,
  // never augmented).
  const uint64_t* sample_indices = nullptr;
  uint64_t epoch = 0;
  // Records of any size (io/format.h: tokens, bytes): `samples` holds the n records back to
  // back, values_bytes in all, and offsets (n + 1, in elements of sample_dtype, host memory,
  // valid as long as `samples`) says where each starts and ends. Null for fixed-shape samples.
  const int64_t* offsets = nullptr;
  uint64_t values_bytes = 0;
};

// How `batch` is augmented under `params` and the run's `seed`, for a decode: nothing where params
// are all off; else the params, seed, and the batch's epoch and sample indices, or InvalidArgument
// where the batch carries no indices.
inline Result<AugmentBatch> AugmentationOf(const Batch& batch, const AugmentParams& params,
                                           uint64_t seed) {
  AugmentBatch a;
  if (!params.enabled()) return a;
  if (batch.sample_indices == nullptr) {
    return Status::InvalidArgument(
        "augmentation needs each sample's global index, and this batch carries none");
  }
  a.params = params;
  a.seed = seed;
  a.epoch = batch.epoch;
  a.indices = batch.sample_indices;
  return a;
}

}  // namespace rf
