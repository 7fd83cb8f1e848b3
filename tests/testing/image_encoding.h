// PNG and WebP files for tests, written by the libraries themselves (libpng's write API, libwebp's
// encoders) from pixels a test chose, so a decode can be checked against those pixels: PNG of
// every colour type, bit depth and interlace, WebP lossy and lossless, with or without alpha.
// Links dep::png and dep::webp (rf_testing_images).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace rf::testing {

// A PNG's layout: PNG_COLOR_TYPE_* (0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGBA), its bit
// depth, Adam7 interlacing.
struct PngLayout {
  uint32_t width = 0, height = 0;
  int color_type = 2;
  int bit_depth = 8;
  bool interlaced = false;
};

// A PNG of `layout` whose samples are `samples`: height rows of width pixels, each pixel its
// channels' samples (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA, 1 palette index), each sample one
// uint16_t whatever the depth (taken as is: below 2^bit_depth). A palette image takes `palette`.
// `trns`, where not empty, is written as a tRNS chunk: a palette image's alpha of its first
// entries (one value each), a grey image's transparent value (one) or an RGB image's transparent
// colour (three). Empty on a libpng failure (the test's own mistake), which EXPECTs fail.
std::vector<uint8_t> EncodePng(const PngLayout& layout, const std::vector<uint16_t>& samples,
                               const std::vector<std::array<uint8_t, 3>>& palette = {},
                               const std::vector<uint16_t>& trns = {});

// A WebP of `rgb` (height x width pixels, interleaved RGB; `alpha`, where not empty, one byte a
// pixel: then RGBA is encoded), lossless or lossy at `quality`.
std::vector<uint8_t> EncodeWebp(const std::vector<uint8_t>& rgb, uint32_t width, uint32_t height,
                                bool lossless, float quality = 80,
                                const std::vector<uint8_t>& alpha = {});

}  // namespace rf::testing
