// decode/jpeg_image.h: a JPEG record to model input, against TurboJPEG's own decode of the same
// bytes and a crop and resize computed here, independently, in doubles (torchvision's bilinear:
// PIL's triangle filter widened by the downscale factor, clipped to the crop for training and to
// the image for evaluation). Tolerances: one level of 255 where the decode is at the same DCT
// scale as the reference (float32 against double rounding); against the full-size decode, where
// the decoder took a DCT scale, a mean of at most 1 level and a 99th percentile of 4 (the
// DCT-domain downscale is a different filter; measured on these patterns: a worst mean of 0.4
// and a worst 99th percentile of 2).
#include "decode/jpeg_image.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/testing/jpeg_testing.h"

namespace rf {
namespace {

using testing::MakeJpeg;
using testing::TurboDecode;

// One axis of the reference resample: the weights of output o over source pixels, as PIL's
// precompute_coeffs defines them (triangle of half-width max(step, 1), centre origin + (o + 0.5)
// * step, pixels [lo, hi) only, normalized).
std::vector<std::pair<int64_t, double>> Taps(double origin, double step, uint32_t o, int64_t lo,
                                             int64_t hi) {
  const double widen = std::max(step, 1.0), centre = origin + (o + 0.5) * step;
  std::vector<std::pair<int64_t, double>> taps;
  double sum = 0;
  for (int64_t x = lo; x < hi; ++x) {
    const double w = 1.0 - std::fabs((x + 0.5 - centre) / widen);
    if (w > 0) {
      taps.emplace_back(x, w);
      sum += w;
    }
  }
  for (auto& t : taps) t.second /= sum;
  return taps;
}

// The reference: an RGB (or grey) image of h x w, the crop `b` (as core/resized_crop.h gives it,
// in full-size pixels) at DCT scale h / full_h, resized to size x size, flipped where b says, as
// uint8 NHWC with 3 channels.
std::vector<uint8_t> Reference(const std::vector<uint8_t>& img, uint32_t h, uint32_t w,
                               int channels, uint32_t full_h, uint32_t full_w, const CropBox& b,
                               uint32_t size) {
  const double fy = static_cast<double>(h) / full_h, fx = static_cast<double>(w) / full_w;
  double oy, sy, ox, sx;
  int64_t ylo, yhi, xlo, xhi;
  if (b.resized_height != 0) {  // evaluation: resize the whole image, then crop
    sy = static_cast<double>(full_h) / b.resized_height;
    sx = static_cast<double>(full_w) / b.resized_width;
    oy = b.top * sy;
    ox = b.left * sx;
    ylo = 0, yhi = h, xlo = 0, xhi = w;
  } else {
    sy = static_cast<double>(b.height) / size;
    sx = static_cast<double>(b.width) / size;
    oy = b.top;
    ox = b.left;
    ylo = std::lround(b.top * fy), yhi = std::lround((b.top + b.height) * fy);
    xlo = std::lround(b.left * fx), xhi = std::lround((b.left + b.width) * fx);
  }
  std::vector<uint8_t> out(size_t{size} * size * 3);
  for (uint32_t y = 0; y < size; ++y) {
    const auto ty = Taps(oy * fy, sy * fy, y, ylo, yhi);
    for (uint32_t x = 0; x < size; ++x) {
      const auto tx = Taps(ox * fx, sx * fx, x, xlo, xhi);
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        for (const auto& [yy, wy] : ty) {
          for (const auto& [xx, wx] : tx) {
            v += wy * wx * img[(yy * w + xx) * channels + (channels == 1 ? 0 : c)];
          }
        }
        const uint32_t xo = b.flip ? size - 1 - x : x;
        out[(size_t{y} * size + xo) * 3 + c] =
            static_cast<uint8_t>(std::clamp<long>(std::lround(v), 0, 255));
      }
    }
  }
  return out;
}

ImageDecodeSpec Uint8Nhwc(uint32_t size, ImageCrop crop) {
  ImageDecodeSpec s;
  s.size = size;
  s.crop = crop;
  s.output = DType::kUInt8;
  s.normalize = false;
  s.channels_last = true;
  s.seed = 42;
  return s;
}

struct Diff {
  int max = 0;
  double mean = 0;
  int p99 = 0;
};
Diff Compare(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  std::vector<int> d(a.size());
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d[i] = std::abs(int{a[i]} - int{b[i]});
    sum += d[i];
  }
  std::sort(d.begin(), d.end());
  return {d.back(), sum / d.size(), d[d.size() * 99 / 100]};
}

std::vector<uint8_t> DecodeOne(JpegImageDecoder& dec, const std::vector<uint8_t>& jpeg,
                               uint64_t epoch, uint64_t index, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  const std::string why = dec.Decode(jpeg.data(), jpeg.size(), epoch, index, out.data());
  EXPECT_EQ(why, "");
  return out;
}

TEST(JpegImage, EvaluationCropEqualsTurboJpegsDecodeResizedAndCentreCropped) {
  for (const auto& [h, w] : std::vector<std::pair<uint32_t, uint32_t>>{{375, 500}, {500, 333}}) {
    const std::vector<uint8_t> jpeg = MakeJpeg(h, w);
    const ImageDecodeSpec spec = Uint8Nhwc(224, ImageCrop::kCenter);
    auto dec = JpegImageDecoder::Create(spec);
    ASSERT_TRUE(dec.ok()) << dec.status().ToString();
    const std::vector<uint8_t> got = DecodeOne(**dec, jpeg, 0, 0, spec.OutputSampleBytes());
    EXPECT_EQ((*dec)->last_scale(), 1u);  // 224 of 262 source pixels: no DCT scale
    uint32_t dh = 0, dw = 0;
    const std::vector<uint8_t> full = TurboDecode(jpeg, 1, 3, &dh, &dw);
    const Diff d = Compare(got, Reference(full, dh, dw, 3, h, w, CenterCropOf(h, w, 224), 224));
    EXPECT_LE(d.max, 1) << h << "x" << w;
  }
}

TEST(JpegImage, TrainingCropsEqualTheReferenceAtEachDctScale) {
  // 1200 x 1600 to 96 x 96: crops of 8% to 100% take every DCT scale from 1/8 up.
  const uint32_t h = 1200, w = 1600, size = 96;
  const std::vector<uint8_t> jpeg = MakeJpeg(h, w, 3, 90, TJSAMP_420, 3);
  const ImageDecodeSpec spec = Uint8Nhwc(size, ImageCrop::kRandomResized);
  auto dec = JpegImageDecoder::Create(spec);
  ASSERT_TRUE(dec.ok());
  std::vector<int> scales_seen(9, 0);
  double worst_mean = 0;
  int worst_p99 = 0;
  for (uint64_t index = 0; index < 24; ++index) {
    const std::vector<uint8_t> got = DecodeOne(**dec, jpeg, 1, index, spec.OutputSampleBytes());
    const uint32_t d = (*dec)->last_scale();
    ++scales_seen[d];
    const CropBox b = RandomResizedCropOf(spec.seed, 1, index, h, w);
    // The decoder's scale is the coarsest that keeps the crop at `size` pixels or more.
    EXPECT_GE(std::min(b.height, b.width) / d, size);
    if (d < 8) {
      EXPECT_LT(std::min(b.height, b.width) / (2 * d), size);
    }
    uint32_t dh = 0, dw = 0;
    const std::vector<uint8_t> scaled = TurboDecode(jpeg, d, 3, &dh, &dw);
    const Diff same = Compare(got, Reference(scaled, dh, dw, 3, h, w, b, size));
    EXPECT_LE(same.max, 1) << "index " << index << " at 1/" << d;
    const std::vector<uint8_t> full = TurboDecode(jpeg, 1, 3, &dh, &dw);
    const Diff vs_full = Compare(got, Reference(full, dh, dw, 3, h, w, b, size));
    worst_mean = std::max(worst_mean, vs_full.mean);
    worst_p99 = std::max(worst_p99, vs_full.p99);
  }
  EXPECT_GT(scales_seen[1] + scales_seen[2], 0);
  EXPECT_GT(scales_seen[4] + scales_seen[8], 0);
  EXPECT_LE(worst_mean, 1.0);
  EXPECT_LE(worst_p99, 4);
  std::printf("against the full-size decode: worst mean %.3f, worst 99th percentile %d levels\n",
              worst_mean, worst_p99);
}

TEST(JpegImage, CropEdgesOfSharpColourAreTheFullDecodes) {
  // Saturated colour blocks, 4:2:0: chroma upsampled at a decoded region's edge differs from the
  // whole image's (by up to a quarter of the range) unless the region reaches past what the
  // resample reads.
  const uint32_t h = 375, w = 500;
  const std::vector<uint8_t> jpeg = MakeJpeg(h, w, 3, 95, TJSAMP_420, 0, /*sharp=*/true);
  for (ImageCrop crop : {ImageCrop::kRandomResized, ImageCrop::kCenter}) {
    const ImageDecodeSpec spec = Uint8Nhwc(112, crop);
    auto dec = JpegImageDecoder::Create(spec);
    ASSERT_TRUE(dec.ok());
    for (uint64_t index = 0; index < 40; ++index) {
      const std::vector<uint8_t> got = DecodeOne(**dec, jpeg, 0, index, spec.OutputSampleBytes());
      const uint32_t d = (*dec)->last_scale();
      uint32_t dh = 0, dw = 0;
      const std::vector<uint8_t> whole = TurboDecode(jpeg, d, 3, &dh, &dw);
      const CropBox b = CropFor(spec, 0, index, h, w);
      EXPECT_LE(Compare(got, Reference(whole, dh, dw, 3, h, w, b, 112)).max, 1)
          << "index " << index << " at 1/" << d << (crop == ImageCrop::kCenter ? ", centre" : "");
    }
  }
}

TEST(JpegImage, FlippedCropsMirrorTheReference) {
  const std::vector<uint8_t> jpeg = MakeJpeg(240, 320);
  const ImageDecodeSpec spec = Uint8Nhwc(64, ImageCrop::kRandomResized);
  auto dec = JpegImageDecoder::Create(spec);
  ASSERT_TRUE(dec.ok());
  uint32_t dh = 0, dw = 0;
  const std::vector<uint8_t> full = TurboDecode(jpeg, 1, 3, &dh, &dw);
  int flipped = 0;
  for (uint64_t index = 0; index < 16; ++index) {
    const CropBox b = RandomResizedCropOf(spec.seed, 0, index, 240, 320);
    const std::vector<uint8_t> got = DecodeOne(**dec, jpeg, 0, index, spec.OutputSampleBytes());
    if ((*dec)->last_scale() != 1) continue;
    flipped += b.flip;
    EXPECT_LE(Compare(got, Reference(full, dh, dw, 3, 240, 320, b, 64)).max, 1) << index;
  }
  EXPECT_GT(flipped, 0);
}

TEST(JpegImage, GreyJpegsBecomeThreeEqualChannels) {
  const std::vector<uint8_t> jpeg = MakeJpeg(200, 300, 1);
  const ImageDecodeSpec spec = Uint8Nhwc(128, ImageCrop::kCenter);
  auto dec = JpegImageDecoder::Create(spec);
  ASSERT_TRUE(dec.ok());
  const std::vector<uint8_t> got = DecodeOne(**dec, jpeg, 0, 0, spec.OutputSampleBytes());
  for (size_t p = 0; p < got.size(); p += 3) {
    ASSERT_EQ(got[p], got[p + 1]);
    ASSERT_EQ(got[p], got[p + 2]);
  }
  uint32_t dh = 0, dw = 0;
  const std::vector<uint8_t> grey = TurboDecode(jpeg, 1, 1, &dh, &dw);
  EXPECT_LE(
      Compare(got, Reference(grey, dh, dw, 1, 200, 300, CenterCropOf(200, 300, 128), 128)).max, 1);
}

TEST(JpegImage, EveryDtypeAndLayoutIsTheUint8ImageNormalized) {
  const std::vector<uint8_t> jpeg = MakeJpeg(180, 240);
  ImageDecodeSpec base = Uint8Nhwc(48, ImageCrop::kRandomResized);
  auto dec8 = JpegImageDecoder::Create(base);
  ASSERT_TRUE(dec8.ok());
  const std::vector<uint8_t> pixels = DecodeOne(**dec8, jpeg, 2, 9, base.OutputSampleBytes());
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (bool last : {false, true}) {
      ImageDecodeSpec s = base;
      s.output = dt;
      s.normalize = true;
      s.channels_last = last;
      auto dec = JpegImageDecoder::Create(s);
      ASSERT_TRUE(dec.ok());
      const std::vector<uint8_t> got = DecodeOne(**dec, jpeg, 2, 9, s.OutputSampleBytes());
      const size_t n = size_t{48} * 48;
      for (size_t p = 0; p < n; ++p) {
        for (int c = 0; c < 3; ++c) {
          const float want = (static_cast<float>(pixels[p * 3 + c]) - s.mean[c]) / s.stddev[c];
          const size_t at = last ? p * 3 + c : c * n + p;
          if (dt == DType::kFloat32) {
            float v;
            std::memcpy(&v, &got[at * 4], 4);
            ASSERT_EQ(v, want) << p << " " << c;
          } else {
            uint16_t v;
            std::memcpy(&v, &got[at * 2], 2);
            ASSERT_EQ(v, dt == DType::kBFloat16 ? FloatToBFloat16(want) : FloatToHalf(want));
          }
        }
      }
    }
  }
}

TEST(JpegImage, TheSameKeyGivesTheSamePixelsInAnotherDecoder) {
  const std::vector<uint8_t> jpeg = MakeJpeg(300, 400);
  const ImageDecodeSpec spec = Uint8Nhwc(64, ImageCrop::kRandomResized);
  auto a = JpegImageDecoder::Create(spec);
  auto b = JpegImageDecoder::Create(spec);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<uint8_t> big = MakeJpeg(900, 700, 3, 80, TJSAMP_444, 1);
  DecodeOne(**b, big, 0, 1, spec.OutputSampleBytes());  // b's buffers grown by another image
  EXPECT_EQ(DecodeOne(**a, jpeg, 4, 17, spec.OutputSampleBytes()),
            DecodeOne(**b, jpeg, 4, 17, spec.OutputSampleBytes()));
  EXPECT_NE(DecodeOne(**a, jpeg, 4, 17, spec.OutputSampleBytes()),
            DecodeOne(**a, jpeg, 5, 17, spec.OutputSampleBytes()));
}

TEST(JpegImage, BadRecordsAreRefusedNamingWhy) {
  const std::vector<uint8_t> jpeg = MakeJpeg(120, 160);
  const ImageDecodeSpec spec = Uint8Nhwc(32, ImageCrop::kCenter);
  auto dec = JpegImageDecoder::Create(spec);
  ASSERT_TRUE(dec.ok());
  std::vector<uint8_t> out(spec.OutputSampleBytes());
  auto decode = [&](const std::vector<uint8_t>& bytes) {
    return (*dec)->Decode(bytes.data(), bytes.size(), 0, 0, out.data());
  };
  // Truncated in its scan: libjpeg-turbo's warning is an error here.
  std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + jpeg.size() / 2);
  EXPECT_NE(decode(cut).find("Premature end of JPEG file"), std::string::npos) << decode(cut);
  // A damaged table: the first DQT segment's length byte made absurd.
  std::vector<uint8_t> bad_table = jpeg;
  for (size_t p = 2; p + 3 < bad_table.size(); ++p) {
    if (bad_table[p] == 0xff && bad_table[p + 1] == 0xdb) {
      bad_table[p + 4] = 0x7f;  // precision and table id: table 15 of 16-bit precision
      break;
    }
  }
  EXPECT_NE(decode(bad_table).find("libjpeg-turbo: "), std::string::npos) << decode(bad_table);
  // Not a JPEG at all.
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0, 0, 13};
  EXPECT_EQ(decode(png), "no JPEG start-of-image marker");
  // A header that declares 65535 x 65535: refused from the frame header, before the decode (and
  // its allocation).
  std::vector<uint8_t> huge = jpeg;
  for (size_t p = 2; p + 8 < huge.size(); ++p) {
    if (huge[p] == 0xff && huge[p + 1] == 0xc0) {
      huge[p + 5] = huge[p + 6] = huge[p + 7] = huge[p + 8] = 0xff;
      break;
    }
  }
  EXPECT_EQ(decode(huge),
            "a frame header of 65535x65535 pixels, more than max_image_side 16384 a side");
  // A 2-component frame (grey, colour and CMYK are decoded; not 2).
  std::vector<uint8_t> two = jpeg;
  for (size_t p = 2; p + 9 < two.size(); ++p) {
    if (two[p] == 0xff && two[p + 1] == 0xc0) {
      two[p + 9] = 2;
      break;
    }
  }
  EXPECT_NE(decode(two).find("a JPEG of 2 components"), std::string::npos) << decode(two);
  // A lossless frame (SOF3) and 12-bit samples: named from the frame header.
  std::vector<uint8_t> lossless = jpeg, twelve = jpeg;
  for (size_t p = 2; p + 9 < jpeg.size(); ++p) {
    if (jpeg[p] == 0xff && jpeg[p + 1] == 0xc0) {
      lossless[p + 1] = 0xc3;
      twelve[p + 4] = 12;
      break;
    }
  }
  EXPECT_EQ(decode(lossless), "a lossless JPEG (SOF3): libjpeg-turbo does not decode it");
  EXPECT_EQ(decode(twelve), "12-bit samples: only 8-bit JPEGs are decoded");
  // Each refusal left the decoder usable.
  EXPECT_EQ(decode(jpeg), "");
}

TEST(ImageDecodeSpec, RefusesWhatItCannotWriteNamingTheOption) {
  ImageDecodeSpec s;
  EXPECT_TRUE(s.Validate().ok());
  s.size = 0;
  EXPECT_NE(s.Validate().message().find("image_size"), std::string::npos);
  s = ImageDecodeSpec{};
  s.output = DType::kInt32;
  EXPECT_NE(s.Validate().message().find("float32, bfloat16, float16 or uint8"), std::string::npos);
  s = ImageDecodeSpec{};
  s.output = DType::kUInt8;
  EXPECT_NE(s.Validate().message().find("normalize needs a float dtype"), std::string::npos);
  s = ImageDecodeSpec{};
  s.stddev[1] = 0;
  EXPECT_NE(s.Validate().message().find("std above 0"), std::string::npos);
}

}  // namespace
}  // namespace rf
