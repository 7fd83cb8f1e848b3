// CudaBatchDecoder: the batch decode of pipeline/output/batch_decode.h on the GPU, for the library
// loader's CUDA device. Decode queues, on the caller's stream, the decode of a gathered batch in
// device memory into the caller's output buffers (decode/gpu_decode.cuh: the one decode's
// kernel); its result equals DecodeSamplesOnHost's and DecodeLabelsOnHost's bit for bit, for every
// spec Validate accepts and every input, NaNs included.
//
// Memory: Create validates the spec and copies the per-channel means and stddevs into a small
// device buffer of its own, on the current device; Decode allocates nothing and never waits for the
// GPU, so it can be captured in a CUDA graph. The decoder must outlive the work queued with it.
//
// Thread safety: Decode reads the decoder only; any thread may call it, on any stream of the
// device the decoder was made on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "core/dtype.h"
#include "core/status.h"
#include "cuda/handles.h"
#include "pipeline/output/batch_decode.h"

namespace rf {

class CudaBatchDecoder {
 public:
  // For batches of up to max_batch samples. The spec's Validate error where it refuses it;
  // InvalidArgument for max_batch 0; Aborted where a device buffer cannot be made.
  static Result<std::unique_ptr<CudaBatchDecoder>> Create(const DecodeSpec& spec,
                                                          uint32_t max_batch);

  const DecodeSpec& spec() const { return spec_; }

  // Queues, on `stream`, the decode of n samples at `stored` (device memory, n * C * H * W
  // elements of spec().stored) into `out` (n * spec().OutputSampleBytes() bytes), and the
  // widening of n labels of `label_dtype` at `labels` into `labels_out`. Every array is device
  // memory aligned to its element size; `out` overlaps neither input. InvalidArgument for a
  // label dtype that is no integer dtype, a missing array, more than max_batch samples or a batch
  // of 2^31 elements or more;
  // Aborted for a failed launch. n = 0 queues nothing. Where `augment` (spec().AugmentFor(batch);
  // its indices in device memory) has augmentation on, each sample goes through its transform
  // inside the same kernel (the batch's transforms drawn just before, once a sample).
  Status Decode(const void* stored, const void* labels, DType label_dtype, uint32_t n, void* out,
                int64_t* labels_out, cudaStream_t stream,
                const AugmentBatch& augment = AugmentBatch{}) const;

 private:
  CudaBatchDecoder() = default;

  DecodeSpec spec_;
  uint32_t max_batch_ = 0;
  cuda::DeviceBuffer norm_;  // normalize only: the C means, then the C divisors
  // Where the spec has augmentation on: a batch's SampleTransforms (cuda/augment_transforms.cuh),
  // max_batch of them, written by each decode and read by its kernel (decodes on one stream
  // follow each other; on different streams they would need a buffer each: the loader has one).
  cuda::DeviceBuffer transforms_;
};

}  // namespace rf
