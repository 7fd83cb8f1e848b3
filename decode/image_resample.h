// The resize of a decoded image's crop to the output square, fused with the flip, the
// normalization, the output dtype and the layout: what every decoded JPEG goes through on the
// host (decode/jpeg_image.h); and the resize of a whole image that ringfeed-convert re-encodes
// (decode/jpeg_reencode.h).
//
// The filter is torchvision's bilinear (PIL's, and torchvision's tensor resize with antialias):
// a triangle filter, widened by the downscale factor so that a shrink averages every source
// pixel under an output pixel. One axis at a time (ResampleAxis): output pixel o of `out`
// centres on source coordinate origin + (o + 0.5) * step (source pixel k spans [k, k + 1)), its
// taps are the source pixels within max(step, 1) of it, clipped to [clip_lo, clip_hi) (the crop
// box, as torchvision crops before it resizes; the whole image for evaluation, which resizes
// before it crops), each weighted by 1 - |distance| / max(step, 1), the weights summing to 1.
// Both axes are applied in float32 (rows first, then columns), and the result rounded to
// nearest and clamped to 0..255 once, as PIL's and ToTensor's uint8 image would hold it; the
// output element is then that value x as uint8, (x - mean[c]) / std[c] in float32 (a true
// division, as every decode of the project normalizes) or x itself as float32, or lut[c][x] for
// a 2-byte dtype (bfloat16 or float16: the float32 value rounded to nearest even).
//
// Speed: the vertical pass, the rounding and the normalization run in AVX2 where the CPU has it
// (target_clones; the x86-64 baseline otherwise), the horizontal pass a pixel's three or four
// channels in one SSE vector.
//
// Memory: the taps and the row buffers are the caller's (ResampleScratch, reused across images:
// nothing is allocated once they have grown to the largest image). Thread safety: none per
// scratch; one scratch a thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rf::decode {

// The taps of one axis: output o reads source pixels first[o] .. first[o] + taps - 1 with
// weights weights[o * taps + k] (the same count for every output: the shorter ones end in
// weights of 0, whose pixels still lie in [lo, hi + taps)).
struct ResampleAxis {
  std::vector<int32_t> first;
  std::vector<float> weights;
  int32_t taps = 0;
  int32_t lo = 0, hi = 0;  // the source pixels any output reads with a weight: [lo, hi)

  // The taps of `out` outputs, as the header says. clip_lo < clip_hi; step > 0.
  void Build(double origin, double step, uint32_t out, int32_t clip_lo, int32_t clip_hi);

 private:
  std::vector<int32_t> count_;  // Build's scratch: each output's taps, and their weights
  std::vector<double> all_;
};

// Scratch a thread reuses from image to image.
struct ResampleScratch {
  ResampleAxis rows, cols;
  std::vector<float> row;     // one output row's vertical pass: columns lo..hi + taps, interleaved
  std::vector<float> pixels;  // its horizontal pass, in output order, planar or interleaved
  std::vector<float> spread;  // a grey row interleaved into the output's channels (NHWC)
  std::vector<float> opaque;  // a row of 255s: the alpha plane of a source without alpha (NCHW)
  std::vector<float> mean, stddev;  // each element's statistics along a row (float32 outputs)
  std::vector<uint8_t> rounded;
};

// Where the output goes: a height x width image of `channels` channels at `out` (aligned to its
// element): 3 (RGB) or 4 (RGBA: the source's alpha where it has one, else 255, an opaque pixel),
// channels last (NHWC) or planar (NCHW), flipped (output column x written at width - 1 - x) or
// not; each element of `element_bytes`: 1 the uint8 pixel, 4 float32 (normalized with mean and
// stddev or not), 2 looked up in `lut` (channels x 256 values, channel by channel). The crops of
// decoded records are squares (height = width = the image size); a re-encode's resize is not.
// `keep_grey`: a grey source is written as one channel (height x width uint8 pixels; uint8 and 3
// channels only) instead of three equal ones.
struct ResampleOutput {
  void* out = nullptr;
  uint32_t element_bytes = 4;
  uint32_t channels = 3;
  bool normalize = false;
  float mean[4] = {0, 0, 0, 0}, stddev[4] = {1, 1, 1, 1};
  const void* lut = nullptr;
  uint32_t height = 0, width = 0;
  bool channels_last = false;
  bool flip = false;
  bool keep_grey = false;
};

// Resamples a decoded region through scratch.rows and scratch.cols (built for o.height and o.width)
// into `o`. The region holds source rows scratch.rows.lo .. scratch.rows.hi - 1 (and more, after)
// and source columns from `col0` on: source pixel (y, x) at src + (y - rows.lo) * pitch + (x -
// col0) * channels, channels 1 (grey: copied to the three colour channels, each through its own
// lut), 3 (interleaved RGB) or 4 (interleaved RGBA; o.channels 4 only). Each channel is resampled
// on its own (straight alpha, as torchvision's tensor resize does, not premultiplied as PIL's
// resize of an RGBA image is): the colour channels' elements do not depend on o.channels or on
// whether the source had alpha. Requires col0 <= cols.lo and cols.hi <= the region's columns.
void ResampleInto(const uint8_t* src, size_t pitch, int32_t col0, uint32_t channels,
                  ResampleScratch& scratch, const ResampleOutput& o);

}  // namespace rf::decode
