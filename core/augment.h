// Data augmentation, the math alone: which random transform a training sample gets, and where each
// of its output pixels comes from. One header for the host and the GPU (plain C++ where nvcc does
// not compile it; __host__ __device__ where it does); decode/element.h applies it inside the one
// decode every consumer runs (the CPU and CUDA backends, the library's loader), so all of them
// give the same transform to the same sample, bit for bit.
//
// A sample's transform is a pure function of (seed, epoch, global sample index): Random123's
// Philox4x32-10, keyed by (seed, epoch), counts from the sample's index in the dataset (not its
// slot in a batch). So a resumed run, a different batch size, another rank or the other backend
// all see the same augmented sample. The draws are integers and the geometry integer arithmetic:
// no floating point, hence nothing a compiler's contraction or a GPU's rounding could change.
//
// The transforms, in torchvision's usual order (crop, flip, then erase on the result):
//   crop:P   a random shift dy, dx in [-P, P] (the window an HxW crop of the image padded by P
//            zeros on every side takes): output (y, x) reads input (y + dy, x + dx), 0 outside;
//   flip     with probability 1/2, output column x reads column W-1-x (before the shift);
//   erase:p  with probability p, a rectangle of the output is 0: its area a fraction in
//            [0.02, 0.33) of H*W and its aspect ratio (height/width) in [0.3, 3.3), both uniform,
//            as Zhong et al.'s Random Erasing draws them; a draw that does not fit inside the image
//            is drawn again, up to kEraseAttempts times (then nothing is erased).
// "0" is the decoded output's zero: 0 in normalized space where the decode normalizes (the mean
// pixel), the stored zero otherwise; every channel of the pixel alike.
//
// Which draw feeds what is fixed whatever transforms are on (crop:4 and crop:4,flip shift a
// sample alike): Philox block 0 of the sample gives dy, dx, the flip and the erase decision;
// block 1 + k the k-th erase attempt's area, aspect, row and column.
#pragma once

#include <Random123/philox.h>

#include <cstdint>

#include "core/host_device.h"

namespace rf {

// What to apply: all off (the default) is no augmentation. Made by ParseAugmentSpec
// (core/augment_spec.h); plain data, passed by value to kernels.
struct AugmentParams {
  uint32_t crop_pad = 0;  // P of crop:P; 0: no crop
  uint32_t flip = 0;      // 1: random horizontal flip
  // erase:p as a threshold on a 32-bit draw: erase where draw < erase_threshold, so p * 2^32
  // (2^32 for p = 1); 0: no erase.
  uint64_t erase_threshold = 0;

  RF_HOST_DEVICE bool enabled() const { return crop_pad != 0 || flip != 0 || erase_threshold != 0; }
};

// One sample's transform, in output coordinates.
struct SampleTransform {
  int32_t dy = 0, dx = 0;  // output (y, x) reads input (y + dy, x' + dx)
  bool flip = false;       // x' = W-1-x
  // The erased rectangle: rows [erase_y, erase_y + erase_h), columns [erase_x, erase_x + erase_w);
  // erase_h == 0: none.
  uint32_t erase_y = 0, erase_x = 0, erase_h = 0, erase_w = 0;
};

namespace augment {

constexpr int kEraseAttempts = 10;
// Erase's ranges in fixed point: area fraction in Q32 ([0.02, 0.33) of 2^32), aspect in Q16.
constexpr uint64_t kAreaLoQ32 = 85899346;      // 0.02 * 2^32
constexpr uint64_t kAreaSpanQ32 = 1331439862;  // 0.31 * 2^32
constexpr uint64_t kAspectLoQ16 = 19661;       // 0.3 * 2^16
constexpr uint64_t kAspectSpanQ16 = 196608;    // 3.0 * 2^16

// Block `block` of the Philox stream of sample `index` under (seed, epoch): key (seed low word,
// epoch low word), counter (index low word, index high word, seed high word, block). Epochs past
// 2^32 wrap (a run never gets there).
RF_HOST_DEVICE inline r123::Philox4x32::ctr_type Draws(uint64_t seed, uint64_t epoch,
                                                       uint64_t index, uint32_t block) {
  const r123::Philox4x32::ctr_type ctr = {{static_cast<uint32_t>(index),
                                           static_cast<uint32_t>(index >> 32),
                                           static_cast<uint32_t>(seed >> 32), block}};
  const r123::Philox4x32::key_type key = {
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(epoch)}};
  return r123::Philox4x32()(ctr, key);
}

// An integer uniform in [0, n) from a 32-bit draw (the high word of draw * n: no modulo bias
// worth the name, no division).
RF_HOST_DEVICE inline uint32_t Below(uint32_t draw, uint64_t n) {
  return static_cast<uint32_t>((uint64_t{draw} * n) >> 32);
}

// floor(sqrt(v)), exactly, by the digit-by-digit method.
RF_HOST_DEVICE inline uint32_t ISqrt(uint64_t v) {
  uint64_t root = 0, bit = uint64_t{1} << 62;
  while (bit > v) bit >>= 2;
  while (bit != 0) {
    if (v >= root + bit) {
      v -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  return static_cast<uint32_t>(root);
}

}  // namespace augment

// The transform of sample `index` in epoch `epoch` of a run seeded `seed`, for height x width
// images. A pure function of its arguments.
RF_HOST_DEVICE inline SampleTransform DrawTransform(const AugmentParams& p, uint64_t seed,
                                                    uint64_t epoch, uint64_t index, uint32_t height,
                                                    uint32_t width) {
  SampleTransform t;
  const r123::Philox4x32::ctr_type d = augment::Draws(seed, epoch, index, 0);
  if (p.crop_pad != 0) {
    const uint64_t span = 2 * uint64_t{p.crop_pad} + 1;
    t.dy = static_cast<int32_t>(augment::Below(d.v[0], span)) - static_cast<int32_t>(p.crop_pad);
    t.dx = static_cast<int32_t>(augment::Below(d.v[1], span)) - static_cast<int32_t>(p.crop_pad);
  }
  t.flip = p.flip != 0 && (d.v[2] >> 31) != 0;
  if (d.v[3] >= p.erase_threshold) return t;
  const uint64_t area = uint64_t{height} * width;
  for (uint32_t k = 0; k < augment::kEraseAttempts; ++k) {
    const r123::Philox4x32::ctr_type e = augment::Draws(seed, epoch, index, 1 + k);
    // target = area * fraction, aspect = h / w: h = sqrt(target * aspect), w = sqrt(target /
    // aspect), in integers (target < 2^32 * 0.33, aspect < 2^18 in Q16: no product overflows).
    const uint64_t fraction =
        augment::kAreaLoQ32 + ((uint64_t{e.v[0]} * augment::kAreaSpanQ32) >> 32);
    const uint64_t target = (area * fraction) >> 32;
    const uint64_t aspect =
        augment::kAspectLoQ16 + ((uint64_t{e.v[1]} * augment::kAspectSpanQ16) >> 32);
    const uint32_t h = augment::ISqrt((target * aspect) >> 16);
    const uint32_t w = augment::ISqrt((target << 16) / aspect);
    if (h == 0 || w == 0 || h > height || w > width) continue;
    t.erase_h = h;
    t.erase_w = w;
    t.erase_y = augment::Below(e.v[2], height - h + 1);
    t.erase_x = augment::Below(e.v[3], width - w + 1);
    return t;
  }
  return t;
}

// Where output pixel (y, x) of a height x width sample under `t` comes from: true and
// *src = the input pixel's index in its channel plane (sy * width + sx), or false where the
// output is 0 (crop's padding, or the erased rectangle).
RF_HOST_DEVICE inline bool SourcePixel(const SampleTransform& t, uint32_t height, uint32_t width,
                                       uint32_t y, uint32_t x, uint32_t* src) {
  if (y - t.erase_y < t.erase_h && x - t.erase_x < t.erase_w) return false;  // unsigned: in range
  const int64_t sy = int64_t{y} + t.dy;
  const int64_t sx = int64_t{t.flip ? width - 1 - x : x} + t.dx;
  if (sy < 0 || sy >= height || sx < 0 || sx >= width) return false;
  *src = static_cast<uint32_t>(sy) * width + static_cast<uint32_t>(sx);
  return true;
}

// Where a batch's augmentation comes from, for a decode: the parameters and the run's seed (fixed
// for a run), the epoch and each sample's global index (the batch's). Plain data for kernels:
// `indices` is in the memory the decode runs in (host for the CPU, device-readable for a kernel).
struct AugmentBatch {
  AugmentParams params;
  uint64_t seed = 0, epoch = 0;
  const uint64_t* indices = nullptr;  // n global sample indices; read only where params.enabled()
  // Where set (same memory as `indices`): the n samples' transforms, drawn once for the batch
  // (cuda/augment_transforms.cuh); else the decode draws each sample's where it needs it
  // (decode/element.h's TransformOf).
  const SampleTransform* transforms = nullptr;
};

}  // namespace rf
