// The decode stage of the library loader (pipeline/loader.h): turns a gathered batch of stored
// samples (core/batch.h: n samples, each row-major C x H x W in the dataset's sample dtype, and n
// labels) into what the model takes, as the Python user asked for it:
//
//   samples  in the output dtype (float32, bfloat16, float16, or the stored dtype itself), in
//            NCHW or NHWC (channels last), optionally normalized per channel:
//              x = (float(stored) - mean[c]) / stddev[c]    (in float32, stddev 0 taken as 1)
//            exactly as CpuBackend::LoadBatch computes its input (a true division, not a product
//            with 1/stddev), so a float32 decode equals the CPU backend's input bit for bit; the
//            float32 value is then rounded to nearest even into bfloat16 or float16 (core/dtype.h's
//            FloatToBFloat16 and FloatToHalf). Without normalize a float output holds the stored
//            value (uint8 255 -> 255.0f); an output of the stored dtype itself, without normalize,
//            is the stored bytes (NCHW) or the same elements transposed (NHWC), bit for bit.
//            Augmentation (core/augment.h), where the spec has it on, is fused into the same loop:
//            each output pixel reads the stored pixel its sample's transform says, or is 0 (the
//            output dtype's zero, after normalization) where it says none; the same transform and
//            the same zeros as the training backends' decode.
//   labels   always int64 (what torch's losses take).
//
// The decode itself is decode/'s, the one every consumer runs (decode/element.h): a spec is a
// decode::Plan (ToPlan). DecodeSamplesOnHost below runs it on the caller's thread (the CPU
// loader), CudaBatchDecoder (pipeline/output/cuda_batch_decode.h) on a stream; they agree bit for
// bit for every spec Validate accepts and every input, NaNs included.
//
// Memory: `stored` and `out` are arrays the caller owns, in host memory here; they must not
// overlap. The decode allocates nothing.
// Thread safety: the functions keep no state; a DecodeSpec is read only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/augment.h"
#include "core/batch.h"
#include "core/dtype.h"
#include "core/status.h"
#include "decode/plan.h"

namespace rf {

enum class SampleLayout {
  kNCHW,  // as stored: each sample's channels one after another
  kNHWC,  // channels last: each pixel's channels together
};

struct DecodeSpec {
  DType stored = DType::kUInt8;    // the dataset's sample dtype
  DType output = DType::kFloat32;  // kFloat32, kBFloat16, kFloat16, or `stored` itself
  SampleLayout layout = SampleLayout::kNCHW;
  bool normalize = true;  // (x - mean[c]) / stddev[c] in float32, stddev 0 taken as 1
  uint32_t channels = 1, height = 1, width = 1;
  std::vector<float> mean, stddev;  // per channel; read only where normalize is set
  // Augmentation of every sample (off by default), its draws keyed by `seed` and each batch's
  // epoch and sample indices (core/augment.h).
  AugmentParams augment;
  uint64_t seed = 0;

  // Ok, or why this decode cannot run: a Usage error naming the Python/CLI option to change
  // ("dtype": an output other than a float dtype or the stored one; "normalize": normalize with an
  // integer output, or without one finite mean and stddev per channel; "layout": not a
  // SampleLayout), an InvalidArgument for a stored dtype the decode does not know or a sample
  // without elements.
  Status Validate() const;
  // Bytes of one decoded sample: channels * height * width * DTypeSize(output).
  size_t OutputSampleBytes() const;
  // Channel c's divisor: stddev[c], or 1 where it is 0 (decode/element.h's Divisor, as every
  // decode takes it). Normalize only.
  float divisor(uint32_t c) const { return decode::Divisor(stddev[c]); }
  // This decode as decode/ runs it, its statistics pointing into this spec (host memory).
  decode::Plan ToPlan() const;
  // The augmentation of `batch` (a source's) under this spec: core/batch.h's AugmentationOf.
  Result<AugmentBatch> AugmentFor(const Batch& batch) const {
    return AugmentationOf(batch, augment, seed);
  }
};

// Decodes n samples of `spec` (which Validate accepted) from `stored` (n * C * H * W elements of
// spec.stored) into `out` (n * spec.OutputSampleBytes() bytes), each through its transform where
// `augment` (spec.AugmentFor(batch); host memory) has augmentation on. Neither array need be
// aligned.
void DecodeSamplesOnHost(const DecodeSpec& spec, const void* stored, uint32_t n, void* out,
                         const AugmentBatch& augment = AugmentBatch{});

// Widens n labels of an integer dtype (decode/dtypes.h's IntegerDTypes: uint8, uint16, int32,
// int64) to int64. `labels` need not be aligned. A label_dtype that is no integer dtype (a caller's
// bug: a dataset's label dtype always is one) leaves `out` unwritten.
void DecodeLabelsOnHost(DType label_dtype, const void* labels, uint32_t n, int64_t* out);

}  // namespace rf
