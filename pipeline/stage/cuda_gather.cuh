// The streaming and managed modes' batch gather: copies each sample of a batch (and its label)
// from wherever its chunk sits in device-readable memory (a staging slot, or a managed dataset)
// into one contiguous batch, on the compute stream. One block per sample; 16-byte copies where
// the sample size and offsets allow. Host launcher only, graph capturable, no allocation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace rf::cuda {

// refs[3i..3i+2] = {byte offset of sample i in `base`, byte offset of its label in `base`, 0}
// (memory the GPU can read: device or pinned host memory; the layout of
// pipeline/stage/chunk_staging.h's SampleRef). indices_in (memory the GPU can read, n global sample
// indices) is copied to indices_out alongside.
cudaError_t GatherSamples(const uint8_t* base, const uint64_t* refs, const uint64_t* indices_in,
                          uint32_t n, size_t sample_bytes, size_t label_bytes, uint8_t* samples,
                          uint8_t* labels, uint64_t* indices_out, cudaStream_t stream);

}  // namespace rf::cuda
