// The crops of decoded images (image records), the math alone: which part of an image a
// training sample's output shows (torchvision's RandomResizedCrop, with a random horizontal
// flip), or an evaluation sample's (Resize(size / 0.875) then CenterCrop(size)). One header for
// the host and the GPU (plain C++ where nvcc does not compile it, __host__ __device__ where it
// does), so that a CPU decode and a GPU decode of the same sample pick the same crop, and their
// pixels differ only by their decoders' and resamplers' rounding.
//
// A sample's crop is a pure function of (seed, epoch, global sample index) and the image's size,
// keyed as core/augment.h keys the tensors' augmentation (augment::Draws: Philox4x32-10 keyed by
// seed and epoch, counting from the sample's index), in blocks that augmentation does not use:
// block kFlipBlock gives the flip, block kCropBlock + k the k-th try. So a resumed run, another
// batch size, another rank or another decoder all see the same crop.
//
// RandomResizedCrop (torchvision.transforms.RandomResizedCrop.get_params, scale (0.08, 1), ratio
// (3/4, 4/3)), try k = 0..9 from block kCropBlock + k's four draws v0..v3:
//   scale  = 0.08 + 0.92 * v0 / 2^32                           uniform in [0.08, 1)
//   ratio  = exp(log(3/4) + (log(4/3) - log(3/4)) * v1 / 2^32)  log-uniform in [3/4, 4/3)
//   w = round(sqrt(H * W * scale * ratio)), h = round(sqrt(H * W * scale / ratio))
//   if 0 < w <= W and 0 < h <= H: top = floor(v2 * (H - h + 1) / 2^32),
//                                 left = floor(v3 * (W - w + 1) / 2^32), done
// and where no try fits, the centre crop of the whole image with its aspect ratio clamped to
// [3/4, 4/3]. The flip: block kFlipBlock's v0 >= 2^31 (probability 1/2).
// The arithmetic is integer (fixed point: the scale and the ratio in Q32, the ratio's exp a
// Taylor series, 128-bit products, exact integer square roots), so no compiler's contraction or
// GPU's rounding can change a crop. It equals the formulas above in real arithmetic but where a
// side's square root lies within about 1e-5 of a half-integer (the rounding may then go the
// other way: the tests count how often), and Python's round-half-even is taken as half-up.
//
// Evaluation (torchvision: Resize(int(size / 0.875)) then CenterCrop(size)): the shorter side
// is resized to R = floor(size / 0.875) (256 for 224), the longer to floor(R * long / short);
// the centre size x size of that, its top at round((RH - size) / 2) (half to even, as Python's
// round), likewise its left. No draw: the same for every epoch.
#pragma once

#include <cstdint>

#include "core/augment.h"
#include "core/host_device.h"

namespace rf {

// Where an image's output comes from: rows [top, top + height) and columns [left, left +
// width) of the image (in its own pixels; for evaluation, of the resized image, whose size is
// resized_height x resized_width), flipped or not.
struct CropBox {
  uint32_t top = 0, left = 0, height = 0, width = 0;
  bool flip = false;
  // Evaluation only: the size the whole image is resized to before the crop (0: no resize; the
  // box is in the image's own pixels).
  uint32_t resized_height = 0, resized_width = 0;
};

namespace crop {

// The Philox blocks of a sample's draws (core/augment.h's tensor augmentation uses blocks 0 to
// 10).
constexpr uint32_t kFlipBlock = 16;
constexpr uint32_t kCropBlock = 17;
constexpr int kTries = 10;
// The scale's range in Q32: [0.08, 1).
constexpr uint64_t kScaleLoQ32 = 343597383;     // floor(0.08 * 2^32)
constexpr uint64_t kScaleSpanQ32 = 3951369912;  // floor(0.92 * 2^32)
// log(3/4) and log(4/3) - log(3/4) in Q32 (signed): round(-0.28768207245178090 * 2^32) and
// round(0.57536414490356180 * 2^32).
constexpr int64_t kLogRatioLoQ32 = -1235585093;
constexpr uint64_t kLogRatioSpanQ32 = 2471170186;

// 128-bit products (GCC's and Clang's, and nvcc's in device code; __extension__ keeps
// -Wpedantic quiet).
__extension__ using U128 = unsigned __int128;

// exp(t) for |t| < 0.3 in Q32 (t in Q32, signed), by its Taylor series to the 12th power: exact
// to about 1e-9 relative, integer only. Every product stays below 2^63 (|t| < 2^31 and each
// term below 2^33).
RF_HOST_DEVICE inline uint64_t ExpQ32(int64_t t) {
  int64_t sum = int64_t{1} << 32, term = int64_t{1} << 32;
  for (int64_t k = 1; k <= 12; ++k) {
    term = (term * t) / (int64_t{1} << 32) / k;  // truncates toward 0 for either sign
    sum += term;
  }
  return static_cast<uint64_t>(sum);
}

// round(sqrt(v4 / 4)) from v4 = floor(4x): floor((floor(sqrt(4x)) + 1) / 2), which is
// floor(sqrt(x) + 1/2).
RF_HOST_DEVICE inline uint32_t RoundSqrtOfQuarter(uint64_t v4) {
  return (augment::ISqrt(v4) + 1) >> 1;
}

// Python's round(v / 2) of an integer v >= 0 (half to even).
RF_HOST_DEVICE inline uint32_t HalfRoundEven(uint32_t v) {
  const uint32_t half = v >> 1;
  return (v & 1) != 0 && (half & 1) != 0 ? half + 1 : half;
}

}  // namespace crop

// The training crop of sample `index` in epoch `epoch` of a run seeded `seed`, for a height x
// width image (each side 1 to 65535): RandomResizedCrop's box and the flip, as the header
// comment says. A pure function of its arguments.
RF_HOST_DEVICE inline CropBox RandomResizedCropOf(uint64_t seed, uint64_t epoch, uint64_t index,
                                                  uint32_t height, uint32_t width) {
  CropBox b;
  b.flip = (augment::Draws(seed, epoch, index, crop::kFlipBlock).v[0] >> 31) != 0;
  const uint64_t area = uint64_t{height} * width;  // < 2^32
  for (int k = 0; k < crop::kTries; ++k) {
    const r123::Philox4x32::ctr_type d =
        augment::Draws(seed, epoch, index, crop::kCropBlock + static_cast<uint32_t>(k));
    const uint64_t scale = crop::kScaleLoQ32 + ((uint64_t{d.v[0]} * crop::kScaleSpanQ32) >> 32);
    const int64_t log_ratio =
        crop::kLogRatioLoQ32 +
        static_cast<int64_t>((uint64_t{d.v[1]} * crop::kLogRatioSpanQ32) >> 32);
    const uint64_t ratio = crop::ExpQ32(log_ratio);      // Q32, below 2^33
    const crop::U128 target = crop::U128{area} * scale;  // the target area in Q32, below 2^64
    // 4 * target * ratio = target * ratio / 2^62 (below 2^35); 4 * target / ratio = target * 4 /
    // ratio (below 2^35).
    const uint32_t w = crop::RoundSqrtOfQuarter(static_cast<uint64_t>((target * ratio) >> 62));
    const uint32_t h = crop::RoundSqrtOfQuarter(static_cast<uint64_t>((target << 2) / ratio));
    if (w == 0 || h == 0 || w > width || h > height) continue;
    b.height = h;
    b.width = w;
    b.top = augment::Below(d.v[2], height - h + 1);
    b.left = augment::Below(d.v[3], width - w + 1);
    return b;
  }
  // No try fits: the centre crop, its ratio w / h clamped to [3/4, 4/3].
  uint32_t w = width, h = height;
  if (uint64_t{4} * width < uint64_t{3} * height) {  // W / H < 3/4: h = round(W / (3/4))
    h = static_cast<uint32_t>((uint64_t{8} * width + 3) / 6);
  } else if (uint64_t{3} * width > uint64_t{4} * height) {  // W / H > 4/3: w = round(H * 4/3)
    w = static_cast<uint32_t>((uint64_t{8} * height + 3) / 6);
  }
  b.height = h;
  b.width = w;
  b.top = (height - h) / 2;
  b.left = (width - w) / 2;
  return b;
}

// The evaluation crop of a height x width image for outputs of size x size (size >= 1): the
// resized image's size and the centre box in it, as the header comment says.
RF_HOST_DEVICE inline CropBox CenterCropOf(uint32_t height, uint32_t width, uint32_t size) {
  CropBox b;
  // floor(size / 0.875) = floor(8 * size / 7).
  const uint32_t r = static_cast<uint32_t>((uint64_t{8} * size) / 7);
  if (height <= width) {
    b.resized_height = r;
    b.resized_width = static_cast<uint32_t>(uint64_t{r} * width / height);
  } else {
    b.resized_width = r;
    b.resized_height = static_cast<uint32_t>(uint64_t{r} * height / width);
  }
  b.height = b.width = size;
  b.top = crop::HalfRoundEven(b.resized_height - size);
  b.left = crop::HalfRoundEven(b.resized_width - size);
  return b;
}

}  // namespace rf
