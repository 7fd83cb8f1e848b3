// core/resized_crop.h: the training crop against a plain double re-implementation of
// torchvision's RandomResizedCrop.get_params fed the same uniform draws, its invariants (inside
// the image, the area and ratio ranges), its keying, and the evaluation crop against
// torchvision's Resize + CenterCrop arithmetic.
#include "core/resized_crop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

namespace rf {
namespace {

struct Box {
  int64_t top, left, height, width;
};

// torchvision.transforms.RandomResizedCrop.get_params, written from its source in doubles, with
// the uniform draws taken from the same Philox blocks: u = draw / 2^32. `near_half` counts the
// sides whose square root lay within 1e-5 of a half-integer (where the fixed point may round
// the other way).
Box TorchvisionGetParams(uint64_t seed, uint64_t epoch, uint64_t index, int64_t height,
                         int64_t width, int* near_half) {
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(3.0 / 4.0), log_hi = std::log(4.0 / 3.0);
  for (uint32_t k = 0; k < 10; ++k) {
    const auto d = augment::Draws(seed, epoch, index, crop::kCropBlock + k);
    const double u0 = d.v[0] / 4294967296.0, u1 = d.v[1] / 4294967296.0;
    const double target_area = area * (0.08 + (1.0 - 0.08) * u0);
    const double aspect_ratio = std::exp(log_lo + (log_hi - log_lo) * u1);
    const double sw = std::sqrt(target_area * aspect_ratio);
    const double sh = std::sqrt(target_area / aspect_ratio);
    for (double s : {sw, sh}) {
      if (std::fabs(s - std::floor(s) - 0.5) < 1e-5) ++*near_half;
    }
    const int64_t w = std::llround(sw), h = std::llround(sh);
    if (0 < w && w <= width && 0 < h && h <= height) {
      // torch.randint(0, height - h + 1): the draw scaled to the range.
      const int64_t i = static_cast<int64_t>(std::floor(d.v[2] / 4294967296.0 * (height - h + 1)));
      const int64_t j = static_cast<int64_t>(std::floor(d.v[3] / 4294967296.0 * (width - w + 1)));
      return {i, j, h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int64_t w = width, h = height;
  if (in_ratio < 3.0 / 4.0) {
    h = std::llround(w / (3.0 / 4.0));
  } else if (in_ratio > 4.0 / 3.0) {
    w = std::llround(h * (4.0 / 3.0));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

TEST(RandomResizedCrop, ChoosesTorchvisionsBoxFromTheSameDraws) {
  const std::vector<std::pair<uint32_t, uint32_t>> sizes = {
      {375, 500}, {500, 375}, {224, 224}, {1, 1000}, {1000, 1}, {17, 23}, {4000, 3000}, {65535, 3}};
  int differ = 0, near_half = 0, fallbacks = 0;
  for (const auto& [h, w] : sizes) {
    for (uint64_t index = 0; index < 4000; ++index) {
      const CropBox got = RandomResizedCropOf(7, 3, index, h, w);
      const Box want = TorchvisionGetParams(7, 3, index, h, w, &near_half);
      const bool same = got.top == want.top && got.left == want.left && got.height == want.height &&
                        got.width == want.width;
      differ += !same;
      // Any difference is a side one pixel off, at a half-integer square root.
      if (!same) {
        EXPECT_LE(std::llabs(int64_t{got.height} - want.height), 1)
            << h << "x" << w << " " << index;
        EXPECT_LE(std::llabs(int64_t{got.width} - want.width), 1) << h << "x" << w << " " << index;
      }
      if (uint64_t{got.height} * got.width * 100 < uint64_t{h} * w * 8) ++fallbacks;
    }
  }
  // 32,000 crops: a difference needs a square root within 1e-5 of a half-integer.
  EXPECT_LE(differ, near_half) << differ << " crops differ, " << near_half << " near-halves";
  EXPECT_LE(differ, 2);
  std::printf("%d of %zu crops differ from the double re-implementation (%d near-halves)\n", differ,
              sizes.size() * 4000, near_half);
  EXPECT_GT(fallbacks, 0);  // the 1x1000 and 1000x1 images fall back to the centre crop
}

TEST(RandomResizedCrop, LiesInsideTheImageWithinTheScaleAndRatioRanges) {
  for (const auto& [h, w] : std::vector<std::pair<uint32_t, uint32_t>>{
           {375, 500}, {333, 500}, {500, 500}, {64, 48}, {2048, 1536}}) {
    for (uint64_t index = 0; index < 5000; ++index) {
      const CropBox b = RandomResizedCropOf(11, 0, index, h, w);
      ASSERT_GE(b.height, 1u);
      ASSERT_GE(b.width, 1u);
      ASSERT_LE(b.top + b.height, h);
      ASSERT_LE(b.left + b.width, w);
      EXPECT_EQ(b.resized_height, 0u);
      // Area within [0.08, 1] of the image's, give or take the sides' rounding (half a pixel
      // each); the ratio w/h within [3/4, 4/3] likewise.
      const double area = static_cast<double>(h) * w;
      EXPECT_GE((b.height + 0.5) * (b.width + 0.5), 0.08 * area) << index;
      EXPECT_LE((b.height - 0.5) * (b.width - 0.5), area) << index;
      EXPECT_GE((b.width + 0.5) / (b.height - 0.5), 0.75) << index;
      EXPECT_LE((b.width - 0.5) / (b.height + 0.5), 4.0 / 3.0) << index;
    }
  }
}

TEST(RandomResizedCrop, IsAFunctionOfSeedEpochAndIndexAlone) {
  int same_epoch_differs = 0, flips = 0;
  for (uint64_t index = 0; index < 2000; ++index) {
    const CropBox a = RandomResizedCropOf(5, 2, index, 375, 500);
    const CropBox b = RandomResizedCropOf(5, 2, index, 375, 500);
    EXPECT_TRUE(a.top == b.top && a.left == b.left && a.height == b.height && a.width == b.width &&
                a.flip == b.flip);
    const CropBox c = RandomResizedCropOf(5, 3, index, 375, 500);
    same_epoch_differs += a.top != c.top || a.height != c.height;
    flips += a.flip;
  }
  EXPECT_GT(same_epoch_differs, 1900);  // another epoch, another crop
  EXPECT_NEAR(flips, 1000, 120);        // p = 1/2: within 5 standard deviations
}

TEST(RandomResizedCrop, FallsBackToTheCentreCropWithItsRatioClamped) {
  // No try can fit a 1-pixel-high image: torchvision's fallback, ratio clamped to 4/3.
  const CropBox wide = RandomResizedCropOf(1, 0, 0, 1, 1000);
  EXPECT_EQ(wide.height, 1u);
  EXPECT_EQ(wide.width, 1u);  // round(1 * 4/3)
  EXPECT_EQ(wide.left, 499u);
  const CropBox tall = RandomResizedCropOf(1, 0, 0, 999, 2);
  EXPECT_EQ(tall.width, 2u);
  EXPECT_EQ(tall.height, 3u);  // round(2 / (3/4)) = round(2.67)
  EXPECT_EQ(tall.top, 498u);
}

TEST(CenterCrop, IsTorchvisionsResizeThenCenterCrop) {
  // 500 wide, 375 high, size 224: Resize(256) makes 341x256; CenterCrop(224) at top
  // round(16.0) = 16, left round(58.5) = 58 (half to even).
  CropBox b = CenterCropOf(375, 500, 224);
  EXPECT_EQ(b.resized_height, 256u);
  EXPECT_EQ(b.resized_width, 341u);
  EXPECT_EQ(b.top, 16u);
  EXPECT_EQ(b.left, 58u);
  EXPECT_EQ(b.height, 224u);
  EXPECT_EQ(b.width, 224u);
  // Portrait, and a half that rounds up to even: 500 high, 333 wide, size 32 -> R 36 (floor of
  // 32 / 0.875 = 36.57), 54 x 36; top round(11.0) = 11, left round(2.0) = 2.
  b = CenterCropOf(500, 333, 32);
  EXPECT_EQ(b.resized_width, 36u);
  EXPECT_EQ(b.resized_height, 54u);
  EXPECT_EQ(b.top, 11u);
  EXPECT_EQ(b.left, 2u);
  // 7 high, 10 wide, size 4: R 4, 5 x 4; left round(0.5) = 0 (even), top 0.
  b = CenterCropOf(7, 10, 4);
  EXPECT_EQ(b.resized_width, 5u);
  EXPECT_EQ(b.left, 0u);
  // 9 wide: left round(1.5) = 2 (even).
  b = CenterCropOf(4, 9, 4);
  EXPECT_EQ(b.resized_width, 9u);
  EXPECT_EQ(b.left, 2u);
  EXPECT_FALSE(b.flip);
}

}  // namespace
}  // namespace rf
