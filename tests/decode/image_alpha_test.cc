// Decoded images with their alpha kept (ImageDecodeSpec::channels 4, the loader's
// image_alpha="keep"): the crop writer's RGBA output is the RGB output of the colour with the
// alpha resized on its own as a grey image, in every dtype and layout; a source without alpha is
// opaque; and each codec's records give it: PNGs with alpha of every kind (grey + alpha, RGBA, 8
// and 16 bits, interlaced, a palette's and a grey or RGB image's tRNS), a lossless WebP with alpha,
// a JPEG (no alpha: its RGB crop and 255).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "decode/image_record.h"
#include "decode/image_spec.h"
#include "decode/jpeg_encode.h"
#include "tests/testing/image_encoding.h"

namespace rf {
namespace {

constexpr uint32_t kSize = 20;

ImageDecodeSpec SpecOf(uint32_t channels, DType dtype, bool nhwc, ImageCrop crop) {
  ImageDecodeSpec s;
  s.size = kSize;
  s.crop = crop;
  s.channels = channels;
  s.output = dtype;
  s.normalize = dtype != DType::kUInt8;
  s.channels_last = nhwc;
  s.seed = 5;
  return s;
}

// Pixel (y, x)'s channel c of a smooth, varied image.
uint8_t Value(uint32_t y, uint32_t x, uint32_t c) {
  return static_cast<uint8_t>((x * (7 + 2 * c) + y * (3 + c) + x * y / (5 + c) + 40 * c) % 256);
}

// An h x w image of `channels` interleaved bytes a pixel.
std::vector<uint8_t> Image(uint32_t h, uint32_t w, uint32_t channels) {
  std::vector<uint8_t> px;
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x)
      for (uint32_t c = 0; c < channels; ++c) px.push_back(Value(y, x, c));
  return px;
}

// Channels [first, first + n) of an interleaved image of `channels`.
std::vector<uint8_t> Channels(const std::vector<uint8_t>& px, uint32_t channels, uint32_t first,
                              uint32_t n) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < px.size(); i += channels)
    out.insert(out.end(), px.begin() + i + first, px.begin() + i + first + n);
  return out;
}

// The crop the writer makes of an h x w image of `channels` bytes a pixel.
std::vector<uint8_t> Crop(const ImageDecodeSpec& spec, const std::vector<uint8_t>& px, uint32_t h,
                          uint32_t w, uint32_t channels, uint64_t index) {
  CropWriter writer(spec);
  writer.Plan(1, index, h, w, 1);
  std::vector<uint8_t> out(spec.OutputSampleBytes());
  const size_t pitch = size_t{w} * channels;
  writer.Write(px.data() + size_t(writer.rows().lo) * pitch, pitch, 0, channels, out.data());
  return out;
}

// The bytes of element (c, y, x) of a sample of `channels`.
const uint8_t* At(const std::vector<uint8_t>& s, const ImageDecodeSpec& spec, uint32_t channels,
                  uint32_t c, uint32_t y, uint32_t x) {
  const size_t e = DTypeSize(spec.output);
  const size_t i = spec.channels_last ? (size_t{y} * kSize + x) * channels + c
                                      : (size_t{c} * kSize + y) * kSize + x;
  return s.data() + i * e;
}

// Sample `rgba` (4 channels) holds `rgb` (the same crop under 3) in its colour channels, bit for
// bit, and in its alpha channel the element of `alpha`'s uint8 pixel (y, x) (a grey crop, one
// byte a pixel).
void ExpectRgbaOf(const std::vector<uint8_t>& rgba, const std::vector<uint8_t>& rgb,
                  const std::vector<uint8_t>& alpha, const ImageDecodeSpec& spec4,
                  const std::string& what) {
  ImageDecodeSpec spec3 = spec4;
  spec3.channels = 3;
  const std::vector<uint8_t> table = ImageOutputTable(spec4);
  const size_t e = DTypeSize(spec4.output);
  size_t wrong = 0;
  for (uint32_t y = 0; y < kSize; ++y) {
    for (uint32_t x = 0; x < kSize; ++x) {
      for (uint32_t c = 0; c < 3; ++c)
        wrong += std::memcmp(At(rgba, spec4, 4, c, y, x), At(rgb, spec3, 3, c, y, x), e) != 0;
      const uint8_t a = alpha[size_t{y} * kSize + x];
      wrong += std::memcmp(At(rgba, spec4, 4, 3, y, x), &table[(3 * 256 + a) * e], e) != 0;
    }
  }
  EXPECT_EQ(wrong, 0u) << what;
}

// The alpha plane's uint8 crop: a grey image's, its first output channel.
std::vector<uint8_t> AlphaCrop(const ImageDecodeSpec& spec4, const std::vector<uint8_t>& alpha,
                               uint32_t h, uint32_t w, uint64_t index) {
  ImageDecodeSpec grey = spec4;
  grey.channels = 3;
  grey.output = DType::kUInt8;
  grey.normalize = false;
  grey.channels_last = false;
  const std::vector<uint8_t> planes = Crop(grey, alpha, h, w, 1, index);
  return std::vector<uint8_t>(planes.begin(), planes.begin() + kSize * kSize);
}

TEST(ImageAlpha, TheRgbaCropIsTheRgbCropWithItsAlphaResizedAsAGreyImage) {
  const uint32_t h = 37, w = 45;
  const std::vector<uint8_t> rgba = Image(h, w, 4);
  const std::vector<uint8_t> rgb = Channels(rgba, 4, 0, 3), alpha = Channels(rgba, 4, 3, 1);
  for (DType dtype : {DType::kUInt8, DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (bool nhwc : {true, false}) {
      for (ImageCrop crop : {ImageCrop::kRandomResized, ImageCrop::kCenter}) {
        ImageDecodeSpec spec4 = SpecOf(4, dtype, nhwc, crop);
        ImageDecodeSpec spec3 = spec4;
        spec3.channels = 3;
        for (uint64_t index : {0, 3, 8}) {
          const std::string what = std::string(DTypeName(dtype)) + (nhwc ? " NHWC" : " NCHW") +
                                   (crop == ImageCrop::kCenter ? " centre" : " random") +
                                   ", sample " + std::to_string(index);
          ExpectRgbaOf(Crop(spec4, rgba, h, w, 4, index), Crop(spec3, rgb, h, w, 3, index),
                       AlphaCrop(spec4, alpha, h, w, index), spec4, what);
        }
      }
    }
  }
}

TEST(ImageAlpha, ASourceWithoutAlphaIsOpaqueAndNormalizedWithTheAlphasOwnStatistics) {
  const uint32_t h = 30, w = 26;
  const std::vector<uint8_t> opaque(size_t{kSize} * kSize, 255);
  for (uint32_t channels : {1u, 3u}) {
    const std::vector<uint8_t> px = Image(h, w, channels);
    for (DType dtype : {DType::kUInt8, DType::kFloat32}) {
      for (bool nhwc : {true, false}) {
        ImageDecodeSpec spec4 = SpecOf(4, dtype, nhwc, ImageCrop::kRandomResized);
        ImageDecodeSpec spec3 = spec4;
        spec3.channels = 3;
        ExpectRgbaOf(Crop(spec4, px, h, w, channels, 2), Crop(spec3, px, h, w, channels, 2), opaque,
                     spec4,
                     std::to_string(channels) + " channels, " + std::string(DTypeName(dtype)));
      }
    }
  }
  // The alpha's default statistics (0 and 255): an opaque pixel is 1.0, ToTensor's.
  ImageDecodeSpec spec4 = SpecOf(4, DType::kFloat32, true, ImageCrop::kCenter);
  const std::vector<uint8_t> out = Crop(spec4, Image(h, w, 3), h, w, 3, 0);
  float a = 0;
  std::memcpy(&a, At(out, spec4, 4, 3, 5, 7), 4);
  EXPECT_EQ(a, 1.0f);
  spec4.mean[3] = 127.5f;
  spec4.stddev[3] = 127.5f;
  std::memcpy(&a, At(Crop(spec4, Image(h, w, 3), h, w, 3, 0), spec4, 4, 3, 5, 7), 4);
  EXPECT_EQ(a, 1.0f);
  spec4.stddev[3] = 0;
  EXPECT_NE(spec4.Validate().message().find("channel 3"), std::string::npos);
}

TEST(ImageAlpha, ASpecOfOtherThanThreeOrFourChannelsIsRefused) {
  for (uint32_t c : {0u, 1u, 2u, 5u}) {
    ImageDecodeSpec s;
    s.channels = c;
    EXPECT_NE(s.Validate().message().find("3 channels (RGB) or 4 (RGBA)"), std::string::npos) << c;
  }
}

// ---- the codecs' records under 4 channels

// Every few crops of `record` under 4 channels equal the writer's of `rgba` (h x w, 4 a pixel).
void ExpectRecordIs(const std::vector<uint8_t>& record, const std::vector<uint8_t>& rgba,
                    uint32_t h, uint32_t w, const std::string& what) {
  for (ImageCrop crop : {ImageCrop::kRandomResized, ImageCrop::kCenter}) {
    const ImageDecodeSpec spec = SpecOf(4, DType::kUInt8, true, crop);
    auto d = ImageRecordDecoder::Create(spec);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    for (uint64_t index : {0, 4, 9}) {
      std::vector<uint8_t> got(spec.OutputSampleBytes());
      ASSERT_EQ((*d)->Decode(record.data(), record.size(), 1, index, got.data()), "") << what;
      const std::vector<uint8_t> want = Crop(spec, rgba, h, w, 4, index);
      size_t wrong[4] = {0, 0, 0, 0};
      for (size_t i = 0; i < want.size(); ++i) wrong[i % 4] += got[i] != want[i];
      EXPECT_EQ(wrong[0] + wrong[1] + wrong[2] + wrong[3], 0u)
          << what << ", sample " << index << ": elements that differ by channel " << wrong[0]
          << ", " << wrong[1] << ", " << wrong[2] << ", " << wrong[3];
    }
  }
}

struct PngAlphaCase {
  std::string what;
  testing::PngLayout layout;
  std::vector<uint16_t> trns;
};

TEST(ImageAlpha, PngsKeepTheirAlphaAsStoredAndTheirTrnsAsAlpha) {
  const uint32_t w = 43, h = 35;
  std::vector<std::array<uint8_t, 3>> palette;
  for (int i = 0; i < 256; ++i)
    palette.push_back({uint8_t(i * 5), uint8_t(255 - i), uint8_t((i * 11) ^ 0x33)});
  std::vector<uint16_t> palette_alpha;
  for (int i = 0; i < 40; ++i) palette_alpha.push_back(static_cast<uint16_t>(i * 6));
  const std::vector<PngAlphaCase> cases = {
      {"grey + alpha, 8 bits", {w, h, 4, 8, false}, {}},
      {"grey + alpha, 16 bits, interlaced", {w, h, 4, 16, true}, {}},
      {"RGBA, 8 bits", {w, h, 6, 8, false}, {}},
      {"RGBA, 16 bits", {w, h, 6, 16, false}, {}},
      {"palette with tRNS", {w, h, 3, 8, false}, palette_alpha},
      // (their values coarse, so that a good share of the pixels are the transparent one)
      {"grey with tRNS", {w, h, 0, 8, false}, {0x60}},
      {"RGB with tRNS", {w, h, 2, 8, false}, {0x80, 0x00, 0x80}},
      {"RGB, no alpha", {w, h, 2, 8, true}, {}},
  };
  for (const PngAlphaCase& c : cases) {
    const int type = c.layout.color_type;
    const bool sixteen = c.layout.bit_depth == 16;
    std::vector<uint16_t> samples;
    std::vector<uint8_t> rgba;  // what PIL's convert("RGBA") reads
    for (uint32_t y = 0; y < h; ++y) {
      for (uint32_t x = 0; x < w; ++x) {
        uint8_t v[4] = {Value(y, x, 0), Value(y, x, 1), Value(y, x, 2), Value(y, x, 3)};
        if (!c.trns.empty() && type != 3) {
          for (uint8_t& e : v) e &= type == 0 ? 0xe0 : 0x80;
        }
        // 16-bit samples whose high byte is the value (their low byte varies too).
        const auto sample = [&](uint8_t b) {
          return static_cast<uint16_t>(sixteen ? b << 8 | (b ^ 0xa5) : b);
        };
        if (type == 3) {
          samples.push_back(v[0]);
          rgba.insert(rgba.end(), palette[v[0]].begin(), palette[v[0]].end());
          rgba.push_back(v[0] < c.trns.size() ? static_cast<uint8_t>(c.trns[v[0]]) : 255);
        } else if (type == 0 || type == 4) {
          samples.push_back(sample(v[0]));
          if (type == 4) samples.push_back(sample(v[3]));
          rgba.insert(rgba.end(), {v[0], v[0], v[0]});
          rgba.push_back(type == 4 ? v[3] : v[0] == c.trns[0] ? 0 : 255);
        } else {
          for (int k = 0; k < (type == 6 ? 4 : 3); ++k) samples.push_back(sample(v[k]));
          rgba.insert(rgba.end(), v, v + 3);
          const bool clear =
              !c.trns.empty() && v[0] == c.trns[0] && v[1] == c.trns[1] && v[2] == c.trns[2];
          rgba.push_back(type == 6 ? v[3] : clear ? 0 : 255);
        }
      }
    }
    const std::vector<uint8_t> png = testing::EncodePng(c.layout, samples, palette, c.trns);
    ASSERT_FALSE(png.empty()) << c.what;
    ExpectRecordIs(png, rgba, h, w, c.what);
  }
}

TEST(ImageAlpha, ALosslessWebpKeepsItsAlphaAndOneWithoutIsOpaque) {
  const uint32_t w = 47, h = 33;
  // (no alpha of 0: libwebp's encoder may change the colour under a transparent pixel)
  std::vector<uint8_t> rgba = Image(h, w, 4);
  for (size_t i = 3; i < rgba.size(); i += 4) rgba[i] |= 1;
  const std::vector<uint8_t> rgb = Channels(rgba, 4, 0, 3), alpha = Channels(rgba, 4, 3, 1);
  ExpectRecordIs(testing::EncodeWebp(rgb, w, h, true, 80, alpha), rgba, h, w, "with alpha");
  std::vector<uint8_t> opaque = rgba;
  for (size_t i = 3; i < opaque.size(); i += 4) opaque[i] = 255;
  ExpectRecordIs(testing::EncodeWebp(rgb, w, h, true), opaque, h, w, "without alpha");
}

TEST(ImageAlpha, AJpegUnderFourChannelsIsItsRgbCropAndOpaque) {
  const uint32_t w = 64, h = 48;
  auto encoder = JpegEncoder::Create();
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  for (uint32_t channels : {1u, 3u}) {
    const std::vector<uint8_t> px = Image(h, w, channels);
    std::vector<uint8_t> jpeg;
    ASSERT_EQ((*encoder)->Encode(px.data(), size_t{w} * channels, h, w, channels, 90, &jpeg), "");
    for (DType dtype : {DType::kUInt8, DType::kBFloat16}) {
      const ImageDecodeSpec spec4 = SpecOf(4, dtype, false, ImageCrop::kRandomResized);
      ImageDecodeSpec spec3 = spec4;
      spec3.channels = 3;
      auto d4 = ImageRecordDecoder::Create(spec4);
      auto d3 = ImageRecordDecoder::Create(spec3);
      ASSERT_TRUE(d4.ok() && d3.ok());
      std::vector<uint8_t> got4(spec4.OutputSampleBytes()), got3(spec3.OutputSampleBytes());
      ASSERT_EQ((*d4)->Decode(jpeg.data(), jpeg.size(), 0, 6, got4.data()), "");
      ASSERT_EQ((*d3)->Decode(jpeg.data(), jpeg.size(), 0, 6, got3.data()), "");
      ExpectRgbaOf(got4, got3, std::vector<uint8_t>(size_t{kSize} * kSize, 255), spec4,
                   std::to_string(channels) + "-channel JPEG, " + std::string(DTypeName(dtype)));
    }
  }
}

}  // namespace
}  // namespace rf
