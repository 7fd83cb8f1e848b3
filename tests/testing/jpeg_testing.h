// JPEGs for tests, made with libjpeg-turbo's TurboJPEG compressor from smooth patterns that
// encode their own position (red grows with x, green with y, blue a slow wave of both): photos'
// smoothness rather than noise, and a misplaced crop shows; and datasets of them (image/jpeg
// records). Header-only; links dep::turbojpeg and rf_io.
#pragma once

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset_writer.h"

namespace rf::testing {

// The pattern's value at (y, x) of an h x w image, channel c (0 red, 1 green, 2 blue), shifted
// by `seed` so that two images differ.
inline uint8_t PatternValue(uint32_t y, uint32_t x, uint32_t h, uint32_t w, int c, uint32_t seed) {
  double v = 0;
  switch (c) {
    case 0:
      v = 20 + 215.0 * x / w;
      break;
    case 1:
      v = 20 + 215.0 * y / h;
      break;
    default:
      v = 128 + 90 * std::sin(0.031 * x + 0.017 * y + seed) * std::cos(0.023 * y - 0.011 * x);
  }
  return static_cast<uint8_t>(std::lround(std::fmin(255, std::fmax(0, v + (seed % 7)))));
}

// Sharp colour: blocks of 5 x 7 pixels, each one of 8 saturated colours by its place, so the
// chroma changes at almost every column an edge of a crop can fall on (where a decode of part of
// the image upsamples its chroma differently from a decode of the whole).
inline uint8_t BlockValue(uint32_t y, uint32_t x, int c) {
  const uint32_t colour = (y / 7 * 3 + x / 5) % 8;
  return (colour >> c) & 1 ? 230 : 25;
}

// An h x w JPEG of `channels` (1: grey, 3: colour) of the pattern (or, `sharp`, of BlockValue's
// blocks), baseline, at `quality`, with `subsampling` (TJSAMP_420, TJSAMP_444, ...; grey takes
// TJSAMP_GRAY whatever is given).
inline std::vector<uint8_t> MakeJpeg(uint32_t h, uint32_t w, int channels = 3, int quality = 92,
                                     int subsampling = TJSAMP_420, uint32_t seed = 0,
                                     bool sharp = false) {
  std::vector<uint8_t> pixels(size_t{h} * w * channels);
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        pixels[(size_t{y} * w + x) * channels + c] = sharp ? BlockValue(y, x, channels == 1 ? 1 : c)
                                                     : channels == 1
                                                         ? PatternValue(y, x, h, w, 2, seed)
                                                         : PatternValue(y, x, h, w, c, seed);
      }
    }
  }
  tjhandle t = tjInitCompress();
  EXPECT_NE(t, nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(t, pixels.data(), static_cast<int>(w), 0, static_cast<int>(h),
                             channels == 1 ? TJPF_GRAY : TJPF_RGB, &jpeg, &size,
                             channels == 1 ? TJSAMP_GRAY : subsampling, quality, 0);
  EXPECT_EQ(rc, 0) << tjGetErrorStr2(t);
  std::vector<uint8_t> out(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(t);
  return out;
}

// TurboJPEG's own decode of `jpeg` at 1/denom of its size, as RGB (grey as grey when
// `channels` is 1); *h, *w set to the decoded size.
inline std::vector<uint8_t> TurboDecode(const std::vector<uint8_t>& jpeg, uint32_t denom,
                                        int channels, uint32_t* h, uint32_t* w) {
  tjhandle t = tjInitDecompress();
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  EXPECT_EQ(
      tjDecompressHeader3(t, jpeg.data(), jpeg.size(), &width, &height, &subsamp, &colorspace), 0);
  *w = (static_cast<uint32_t>(width) + denom - 1) / denom;
  *h = (static_cast<uint32_t>(height) + denom - 1) / denom;
  std::vector<uint8_t> out(size_t{*h} * *w * channels);
  EXPECT_EQ(tjDecompress2(t, jpeg.data(), jpeg.size(), out.data(), static_cast<int>(*w), 0,
                          static_cast<int>(*h), channels == 1 ? TJPF_GRAY : TJPF_RGB, 0),
            0)
      << tjGetErrorStr2(t);
  tjDestroy(t);
  return out;
}

// The second byte of a JPEG's first frame header marker (c0 baseline, c1 extended, c2
// progressive, c9 arithmetic-coded, ...), *at where its ff is; 0 where there is none.
inline uint8_t FrameMarker(const std::vector<uint8_t>& j, size_t* at = nullptr) {
  for (size_t i = 2; i + 1 < j.size(); ++i) {
    const uint8_t m = j[i + 1];
    if (j[i] == 0xff && m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
      if (at != nullptr) *at = i;
      return m;
    }
  }
  return 0;
}

// n JPEGs of sizes from 40 to 199 pixels a side (landscape and portrait), every seventh grey,
// each its own pattern: JPEG i's size and content are functions of i.
inline std::vector<std::vector<uint8_t>> MakeJpegs(uint32_t n) {
  std::vector<std::vector<uint8_t>> out;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t h = 40 + (i * 37) % 160, w = 40 + (i * 53 + 11) % 160;
    out.push_back(MakeJpeg(h, w, i % 7 == 3 ? 1 : 3, 85 + i % 10, TJSAMP_420, i));
  }
  return out;
}

// A dataset of `jpegs` as image records at `path`, labels i % `classes`, chunks of about
// `chunk_bytes` (so several), compressed with `codec`, with `class_names` (as ImageFolder's
// classes; none where empty, else `classes` of them).
inline Status WriteJpegDataset(const std::string& path,
                               const std::vector<std::vector<uint8_t>>& jpegs, uint32_t classes = 5,
                               uint64_t chunk_bytes = 16384, CodecSpec codec = {},
                               const std::vector<std::string>& class_names = {}) {
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kBytes;
  spec.media_type = "image/jpeg";
  spec.num_classes = classes;
  spec.class_names = class_names;
  WriterOptions o;
  o.chunk_bytes = chunk_bytes;
  o.codec = codec;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> w, DatasetWriter::Create(path, spec, o));
  for (size_t i = 0; i < jpegs.size(); ++i) {
    const uint64_t offsets[2] = {0, jpegs[i].size()};
    const uint8_t label = static_cast<uint8_t>(i % classes);
    RF_RETURN_IF_ERROR(w->AppendRecords(jpegs[i].data(), offsets, &label, 1));
  }
  return w->Finish();
}

}  // namespace rf::testing
