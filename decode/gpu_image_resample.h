// The resize of decoded images' crops to the output square on the GPU, fused with the flip, the
// normalization, the output dtype and the layout: the GPU image decoder's last step (pipeline/
// nvjpeg_image_decoder.cc), after nvJPEG has decoded each JPEG whole, as interleaved RGB, into
// device memory.
//
// The filter, the rounding and the output elements are decode/image_resample.h's, computed the
// same way and in the same order (for each output pixel: each source column's vertical sum over
// its rows, then the horizontal sum of those; the taps' weights are ResampleAxis::Build's,
// computed per output in double and used in float32; the pixel rounded and clamped once; the
// normalization a true division), so that a GPU decode and a CPU decode of the same crop differ
// only where their JPEG decoders' pixels do, and where the CPU decoded at a DCT scale (1/2, 1/4,
// 1/8) that the GPU, which resamples the full-size image, does not use.
//
// Host launcher only (this header compiles as plain C++): no allocation, no synchronization.
// Thread safety: none beyond the stream's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rf::decode {

// One axis of a crop in the decoded image's pixels (decode/jpeg_image.h's CropAxisWindow):
// output o centres on origin + (o + 0.5) * step, its taps clipped to [lo, hi).
struct GpuAxis {
  double origin = 0, step = 1;
  int32_t lo = 0, hi = 1;
};

// One image of a batch: its decoded RGB at area + offset (rows of `pitch` bytes, 3 bytes a
// pixel), the output sample it becomes, and its crop.
struct GpuCrop {
  uint64_t offset = 0;
  uint32_t pitch = 0;
  uint32_t slot = 0;
  GpuAxis rows, cols;
  uint32_t flip = 0;
};

// The output of every image: size x size x channels elements a sample, NHWC or NCHW; channels 3
// (RGB) or 4 (RGBA: the decoded JPEGs have no alpha, so the fourth is 255's element, an opaque
// pixel); elements uint8 (the pixel), float32, bfloat16 or float16 (the pixel, or (pixel -
// mean[c]) / stddev[c] with normalize, rounded to nearest even into the 2-byte types).
struct GpuImageOutput {
  enum Element : uint32_t { kUInt8, kFloat32, kBFloat16, kFloat16 };
  Element element = kFloat32;
  uint32_t size = 0;
  uint32_t channels = 3;
  bool channels_last = false;
  bool normalize = false;
  float mean[4] = {0, 0, 0, 0}, stddev[4] = {1, 1, 1, 1};
};

// Queues on `stream` the crops `crops[0, n)` (device memory) of the images in `area` (device
// memory) into `out` (device memory, aligned to its element; sample s at s x the sample's
// bytes). Every crop's rows and columns lie within its image. The launch's status.
cudaError_t ResampleCropsOnGpu(const uint8_t* area, const GpuCrop* crops, uint32_t n,
                               const GpuImageOutput& o, void* out, cudaStream_t stream);

}  // namespace rf::decode
