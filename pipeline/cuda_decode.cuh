// The batch decode's kernels (the function pipeline/batch_decode.h defines, on the GPU): one kernel
// template over (stored dtype, output dtype, layout, normalize), instantiated for every stored
// dtype of pipeline/decode_dtypes.h and every float output; a transpose for an NHWC output of the
// stored dtype; a device-to-device copy for an NCHW one; and the labels' widening to int64. Host
// launchers only, graph capturable, no allocation, no host synchronization.
//
// Every array is device memory aligned to its element size (cudaMalloc'd buffers and element
// offsets into them are); `in` and `out` do not overlap.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/augment.h"
#include "core/dtype.h"

namespace rf::cuda {

struct DecodeArgs {
  DType stored = DType::kUInt8;
  DType output = DType::kFloat32;
  bool channels_last = false;  // NHWC output
  bool normalize = false;
  uint32_t channels = 1, plane = 1;  // plane: height * width
  uint32_t height = 1, width = 1;
  // Augmentation (core/augment.h; indices in device memory): each output element reads the stored
  // element its sample's transform says, or is the output dtype's 0 where it says none.
  AugmentBatch augment;
  // Normalize only: `channels` floats each, the means and the divisors (stddev, 0 replaced by 1).
  const float* mean = nullptr;
  const float* divisor = nullptr;
};

// Decodes n samples at `in` into `out` on `stream`. The caller has validated the spec
// (DecodeSpec::Validate) and keeps n * channels * plane below 2^31. cudaErrorInvalidValue for a
// dtype pair the kernels do not cover; else the launch's (or the copy's) status.
cudaError_t DecodeSamples(const DecodeArgs& args, const void* in, uint32_t n, void* out,
                          cudaStream_t stream);

// Widens n labels of an integer dtype (decode_dtypes.h's IntegerDTypes) to int64 on `stream`;
// n below 2^31. cudaErrorInvalidValue for another dtype; else the launch's status.
cudaError_t DecodeLabels(DType dtype, const void* in, uint32_t n, int64_t* out,
                         cudaStream_t stream);

}  // namespace rf::cuda
