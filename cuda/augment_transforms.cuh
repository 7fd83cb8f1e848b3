// Augmentation's per-sample transforms (core/augment.h) drawn for a whole batch on the GPU, once
// per sample, ahead of a decode kernel that then reads them (AugmentBatch::transforms) instead of
// drawing its sample's in every element: measured on an H200 (2026-11-26), drawing per element
// cost augmented CIFAR-shaped epochs 10% of their speed with crop:4,flip,erase:0.5. Shared by
// the CUDA backend's decode (kernels/) and the library's (pipeline/).
//
// Host launcher only (this header compiles as plain C++); no synchronization, no allocation:
// graph capturable. Thread safety: none beyond the stream's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/augment.h"

namespace rf::cuda {

// Where a->params has augmentation on: queues on `stream` the draw of the n samples'
// transforms (a->indices in device memory) for height x width images into `scratch` (device
// memory, n entries), and points a->transforms at it. Otherwise does nothing.
cudaError_t DrawBatchTransforms(AugmentBatch* a, uint32_t n, uint32_t height, uint32_t width,
                                SampleTransform* scratch, cudaStream_t stream);

}  // namespace rf::cuda
