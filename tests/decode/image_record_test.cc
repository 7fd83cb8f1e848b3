// Image records of every codec (decode/image_record.h) against the pixels they hold: a PNG of each
// colour type, bit depth and interlace, and a lossless WebP, decode to exactly the crop that
// CropWriter makes of the pixels the test encoded (as PIL's convert("RGB") reads them); a lossy
// WebP's region decode is its whole decode's; a progressive JPEG is its baseline twin's; a CMYK
// JPEG is TurboJPEG's CMYK through PIL's conversion. Then bad records: bombs refused from their
// headers, truncated and damaged files of each codec named, data of no codec named.
#include "decode/image_record.h"

#include <gtest/gtest.h>
#include <turbojpeg.h>
#include <webp/decode.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "decode/png_image.h"
#include "decode/webp_image.h"
#include "tests/testing/image_encoding.h"

namespace rf {
namespace {

using testing::EncodePng;
using testing::EncodeWebp;
using testing::PngLayout;

ImageDecodeSpec Spec(ImageCrop crop, uint32_t size = 24) {
  ImageDecodeSpec s;
  s.size = size;
  s.crop = crop;
  s.output = DType::kUInt8;
  s.normalize = false;
  s.channels_last = true;
  s.seed = 11;
  return s;
}

// A smooth, varied value in 0..top for channel c of pixel (y, x).
uint16_t Wave(uint32_t y, uint32_t x, int c, uint32_t top) {
  const uint32_t v = (x * (3 + c) + y * (5 - c) + (x * y) / (7 + c)) % (2 * top + 2);
  return static_cast<uint16_t>(v > top ? 2 * top + 1 - v : v);
}

// The crop of `pixels` (h x w, `channels` 1 or 3 a pixel, 8 bits) that CropWriter makes for
// sample `index` of `epoch`: what every codec's decode of those pixels must write.
std::vector<uint8_t> Expected(const ImageDecodeSpec& spec, const std::vector<uint8_t>& pixels,
                              uint32_t h, uint32_t w, uint32_t channels, uint64_t epoch,
                              uint64_t index) {
  CropWriter writer(spec);
  writer.Plan(epoch, index, h, w, 1);
  std::vector<uint8_t> out(spec.OutputSampleBytes());
  const size_t pitch = size_t{w} * channels;
  writer.Write(pixels.data() + size_t(writer.rows().lo) * pitch, pitch, 0, channels, out.data());
  return out;
}

std::vector<uint8_t> Decoded(ImageRecordDecoder& d, const std::vector<uint8_t>& record,
                             uint64_t epoch, uint64_t index, std::string* why) {
  std::vector<uint8_t> out(d.spec().OutputSampleBytes());
  *why = d.Decode(record.data(), record.size(), epoch, index, out.data());
  return out;
}

// Every crop of a few samples of both crops: the decode of `record` equals the crop of `pixels`.
void ExpectCropsOf(const std::vector<uint8_t>& record, const std::vector<uint8_t>& pixels,
                   uint32_t h, uint32_t w, uint32_t channels, const std::string& what) {
  for (ImageCrop crop : {ImageCrop::kRandomResized, ImageCrop::kCenter}) {
    const ImageDecodeSpec spec = Spec(crop);
    auto d = ImageRecordDecoder::Create(spec);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    for (uint64_t index : {0, 1, 7, 99}) {
      std::string why;
      const std::vector<uint8_t> got = Decoded(**d, record, 2, index, &why);
      ASSERT_EQ(why, "") << what;
      EXPECT_EQ(got, Expected(spec, pixels, h, w, channels, 2, index))
          << what << ", sample " << index << (crop == ImageCrop::kCenter ? ", centre" : "");
    }
  }
}

// ---- PNG

struct PngCase {
  int color_type, bit_depth;
  bool interlaced;
};

TEST(PngRecords, EveryColourTypeDepthAndInterlaceDecodesToItsPixelsAsPilReadsThem) {
  const uint32_t w = 53, h = 41;
  std::vector<std::array<uint8_t, 3>> palette;
  for (int i = 0; i < 256; ++i)
    palette.push_back({uint8_t(i * 7), uint8_t(255 - i), uint8_t((i * 13) ^ 0x5a)});
  const std::vector<PngCase> cases = {
      {0, 1, false}, {0, 2, false}, {0, 4, true},   {0, 8, false}, {0, 16, false},
      {2, 8, false}, {2, 8, true},  {2, 16, false}, {3, 1, false}, {3, 4, false},
      {3, 8, true},  {4, 8, false}, {4, 16, true},  {6, 8, false}, {6, 16, false},
  };
  for (const PngCase& c : cases) {
    const std::string what = "colour type " + std::to_string(c.color_type) + ", " +
                             std::to_string(c.bit_depth) + " bits" +
                             (c.interlaced ? ", interlaced" : "");
    const PngLayout layout{w, h, c.color_type, c.bit_depth, c.interlaced};
    const int stored = c.color_type == 2 ? 3 : c.color_type == 4 ? 2 : c.color_type == 6 ? 4 : 1;
    const uint32_t top = (1u << c.bit_depth) - 1;
    const uint32_t out_channels = c.color_type == 0 || c.color_type == 4 ? 1 : 3;
    std::vector<uint16_t> samples;
    std::vector<uint8_t> pixels;  // what PIL's convert("RGB") reads (grey kept as one channel)
    for (uint32_t y = 0; y < h; ++y) {
      for (uint32_t x = 0; x < w; ++x) {
        for (int k = 0; k < stored; ++k) samples.push_back(Wave(y, x, k, top));
        const uint16_t* s = &samples[samples.size() - stored];
        if (c.color_type == 3) {
          const auto& p = palette[s[0]];
          pixels.insert(pixels.end(), p.begin(), p.end());
          continue;
        }
        for (uint32_t k = 0; k < out_channels; ++k) {
          const uint32_t v = s[k];
          pixels.push_back(static_cast<uint8_t>(c.bit_depth == 16  ? v >> 8
                                                : c.bit_depth == 8 ? v
                                                                   : v * 255 / top));
        }
      }
    }
    const std::vector<std::array<uint8_t, 3>> colours(
        palette.begin(), palette.begin() + std::min<size_t>(palette.size(), size_t{top} + 1));
    const std::vector<uint8_t> png = EncodePng(layout, samples, colours);
    ASSERT_FALSE(png.empty());
    ImageHeader header;
    ASSERT_EQ(ReadImageHeader(png.data(), png.size(), 16384, &header), "") << what;
    EXPECT_EQ(header.codec, ImageCodec::kPng);
    EXPECT_EQ(header.width, w);
    EXPECT_EQ(header.height, h);
    EXPECT_EQ(header.kind.find(std::to_string(c.bit_depth) + "-bit"), 0u) << header.kind;
    EXPECT_EQ(header.kind.find("interlaced") != std::string::npos, c.interlaced) << header.kind;
    ExpectCropsOf(png, pixels, h, w, out_channels, what);
  }
}

// ---- WebP

std::vector<uint8_t> Rgb(uint32_t h, uint32_t w) {
  std::vector<uint8_t> rgb;
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) rgb.push_back(static_cast<uint8_t>(Wave(y, x, c, 255)));
  return rgb;
}

TEST(WebpRecords, ALosslessWebpDecodesToItsPixelsWithOrWithoutAlpha) {
  const uint32_t w = 61, h = 47;
  const std::vector<uint8_t> rgb = Rgb(h, w);
  std::vector<uint8_t> alpha(size_t{w} * h);
  // Never 0: under a transparent pixel libwebp's encoder may change the colour.
  for (size_t i = 0; i < alpha.size(); ++i) alpha[i] = static_cast<uint8_t>(1 + i * 31 % 255);
  const std::vector<uint8_t> plain = EncodeWebp(rgb, w, h, true);
  const std::vector<uint8_t> with_alpha = EncodeWebp(rgb, w, h, true, 80, alpha);
  ImageHeader header;
  ASSERT_EQ(ReadImageHeader(with_alpha.data(), with_alpha.size(), 16384, &header), "");
  EXPECT_EQ(header.codec, ImageCodec::kWebp);
  EXPECT_EQ(header.kind, "lossless with alpha");
  ExpectCropsOf(plain, rgb, h, w, 3, "lossless");
  ExpectCropsOf(with_alpha, rgb, h, w, 3, "lossless, alpha dropped");
}

TEST(WebpRecords, ALossyWebpsRegionDecodeIsItsWholeDecode) {
  // Chroma upsampling treats a region's edges as the image's: the margin keeps the pixels the
  // crop reads those of the whole decode, for crops at every offset.
  const uint32_t w = 97, h = 83;
  const std::vector<uint8_t> webp = EncodeWebp(Rgb(h, w), w, h, false, 60);
  int width = 0, height = 0;
  uint8_t* whole = WebPDecodeRGB(webp.data(), webp.size(), &width, &height);
  ASSERT_NE(whole, nullptr);
  const std::vector<uint8_t> pixels(whole, whole + size_t{w} * h * 3);
  WebPFree(whole);
  for (ImageCrop crop : {ImageCrop::kRandomResized, ImageCrop::kCenter}) {
    const ImageDecodeSpec spec = Spec(crop, 16);
    auto d = ImageRecordDecoder::Create(spec);
    ASSERT_TRUE(d.ok());
    for (uint64_t index = 0; index < 60; ++index) {
      std::string why;
      const std::vector<uint8_t> got = Decoded(**d, webp, 0, index, &why);
      ASSERT_EQ(why, "");
      ASSERT_EQ(got, Expected(spec, pixels, h, w, 3, 0, index)) << "sample " << index;
    }
  }
}

// ---- JPEG: progressive and CMYK

std::vector<uint8_t> TurboJpeg(const std::vector<uint8_t>& px, int w, int h, int pf, int sub,
                               int flags) {
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, px.data(), w, 0, h, pf, &out, &size, sub, 88, flags), 0);
  std::vector<uint8_t> jpeg(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  return jpeg;
}

TEST(JpegRecords, AProgressiveJpegDecodesAsItsBaselineTwin) {
  // The same coefficients, entropy-coded in one scan or several: the same pixels.
  const int w = 120, h = 90;
  const std::vector<uint8_t> rgb = Rgb(h, w);
  for (int sub : {TJSAMP_420, TJSAMP_444, TJSAMP_422}) {
    const std::vector<uint8_t> base = TurboJpeg(rgb, w, h, TJPF_RGB, sub, 0);
    const std::vector<uint8_t> prog = TurboJpeg(rgb, w, h, TJPF_RGB, sub, TJFLAG_PROGRESSIVE);
    ImageHeader header;
    ASSERT_EQ(ReadImageHeader(prog.data(), prog.size(), 16384, &header), "");
    EXPECT_EQ(header.kind, "progressive");
    for (ImageCrop crop : {ImageCrop::kRandomResized, ImageCrop::kCenter}) {
      auto d = ImageRecordDecoder::Create(Spec(crop, 32));
      ASSERT_TRUE(d.ok());
      for (uint64_t index : {0, 3, 5}) {
        std::string a, b;
        const std::vector<uint8_t> x = Decoded(**d, base, 1, index, &a);
        const std::vector<uint8_t> y = Decoded(**d, prog, 1, index, &b);
        ASSERT_EQ(a, "");
        ASSERT_EQ(b, "");
        EXPECT_EQ(x, y) << "subsampling " << sub << ", sample " << index;
      }
    }
  }
}

TEST(JpegRecords, ACmykJpegBecomesRgbAsPilConvertsIt) {
  const int w = 64, h = 48;
  std::vector<uint8_t> cmyk;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 4; ++c) cmyk.push_back(static_cast<uint8_t>(Wave(y, x, c, 255)));
  const std::vector<uint8_t> jpeg = TurboJpeg(cmyk, w, h, TJPF_CMYK, TJSAMP_444, 0);
  // TurboJPEG's own decode to CMYK, then PIL's CMYK;I to RGB: c k / 255, rounded as MULDIV255.
  tjhandle tj = tjInitDecompress();
  std::vector<uint8_t> back(size_t{w} * h * 4);
  ASSERT_EQ(tjDecompress2(tj, jpeg.data(), jpeg.size(), back.data(), w, 0, h, TJPF_CMYK, 0), 0);
  tjDestroy(tj);
  std::vector<uint8_t> rgb;
  for (size_t i = 0; i < back.size(); i += 4) {
    for (int c = 0; c < 3; ++c) {
      const uint32_t t = uint32_t{back[i + c]} * back[i + 3] + 128;
      rgb.push_back(static_cast<uint8_t>((t + (t >> 8)) >> 8));
    }
  }
  ImageHeader header;
  ASSERT_EQ(ReadImageHeader(jpeg.data(), jpeg.size(), 16384, &header), "");
  EXPECT_EQ(header.kind, "CMYK baseline");
  ExpectCropsOf(jpeg, rgb, h, w, 3, "CMYK");
}

// ---- bad records

std::string DecodeWhy(const std::vector<uint8_t>& record, uint32_t max_side = 16384) {
  ImageDecodeSpec spec = Spec(ImageCrop::kCenter);
  spec.max_side = max_side;
  auto d = ImageRecordDecoder::Create(spec);
  EXPECT_TRUE(d.ok());
  std::vector<uint8_t> out(spec.OutputSampleBytes());
  return (*d)->Decode(record.data(), record.size(), 0, 0, out.data());
}

void Be32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  for (int i = 0; i < 4; ++i) v[at + i] = static_cast<uint8_t>(x >> (24 - 8 * i));
}

TEST(ImageRecordBadInput, BombsAreRefusedFromTheirHeadersBeforeAnyAllocation) {
  // A small PNG whose IHDR declares 100000 x 100000.
  std::vector<uint16_t> one(16 * 16 * 3, 9);
  std::vector<uint8_t> png = EncodePng({16, 16, 2, 8, false}, one);
  Be32(png, 16, 100000);
  Be32(png, 20, 100000);
  EXPECT_EQ(DecodeWhy(png),
            "PNG: an IHDR of 100000x100000 pixels, more than max_image_side 16384 a side");
  // A lossless WebP whose VP8L header declares 16384 x 16384 (its 14-bit sides less one, from
  // bit 0 and bit 14 of the word after the 0x2f signature), with a max_image_side of 4096.
  const std::vector<uint8_t> rgb(32 * 32 * 3, 77);
  std::vector<uint8_t> webp = EncodeWebp(rgb, 32, 32, true);
  ASSERT_EQ(std::string(webp.begin() + 12, webp.begin() + 16), "VP8L");
  ASSERT_EQ(webp[20], 0x2f);
  uint32_t bits = 0;
  for (int i = 0; i < 4; ++i) bits |= uint32_t{webp[21 + i]} << (8 * i);
  bits = (bits & ~0x0fffffffu) | 16383u | (16383u << 14);
  for (int i = 0; i < 4; ++i) webp[21 + i] = static_cast<uint8_t>(bits >> (8 * i));
  EXPECT_EQ(DecodeWhy(webp, 4096),
            "WebP: a WebP of 16384x16384 pixels, more than max_image_side 4096 a side");
  // A JPEG frame of 65535 x 65535.
  std::vector<uint8_t> jpeg = {0xff, 0xd8, 0xff, 0xc0, 0, 11,   8, 0xff,
                               0xff, 0xff, 0xff, 1,    1, 0x11, 0};
  EXPECT_EQ(DecodeWhy(jpeg),
            "JPEG: a frame header of 65535x65535 pixels, more than max_image_side 16384 a side");
}

TEST(ImageRecordBadInput, TruncatedAndDamagedFilesOfEachCodecAreNamed) {
  const uint32_t w = 64, h = 64;
  const std::vector<uint8_t> rgb = Rgb(h, w);
  std::vector<uint16_t> samples(rgb.begin(), rgb.end());
  const std::vector<uint8_t> png = EncodePng({w, h, 2, 8, false}, samples);
  const std::vector<uint8_t> webp = EncodeWebp(rgb, w, h, false);
  const std::vector<uint8_t> lossless = EncodeWebp(rgb, w, h, true);
  ASSERT_EQ(DecodeWhy(png), "");
  ASSERT_EQ(DecodeWhy(webp), "");
  const auto half = [](const std::vector<uint8_t>& v) {
    return std::vector<uint8_t>(v.begin(), v.begin() + v.size() / 2);
  };
  EXPECT_EQ(DecodeWhy(half(png)).rfind("PNG: libpng: ", 0), 0u) << DecodeWhy(half(png));
  EXPECT_EQ(DecodeWhy(half(webp)).rfind("WebP: a RIFF size of ", 0), 0u) << DecodeWhy(half(webp));
  // The IHDR's CRC damaged; a byte of the image data's start flipped (libpng checks a chunk's CRC
  // where it reads to the chunk's end: damage is found where the decode reads, as a JPEG's).
  std::vector<uint8_t> flipped = png, crc = png;
  crc[29] ^= 0x01;
  EXPECT_EQ(DecodeWhy(crc), "PNG: libpng: IHDR: CRC error");
  size_t idat = 0;
  for (size_t p = 8; p + 8 < png.size() && idat == 0;
       p += 12 + (size_t{png[p]} << 24 | size_t{png[p + 1]} << 16 | size_t{png[p + 2]} << 8 |
                  png[p + 3]))
    if (std::string(png.begin() + p + 4, png.begin() + p + 8) == "IDAT") idat = p + 8;
  ASSERT_NE(idat, 0u);
  flipped[idat + 3] ^= 0xff;
  EXPECT_EQ(DecodeWhy(flipped).rfind("PNG: libpng: ", 0), 0u) << DecodeWhy(flipped);
  // A lossless WebP's bitstream cut short with its RIFF size made to fit: libwebp's own error.
  std::vector<uint8_t> cut = half(lossless);
  const uint32_t riff = static_cast<uint32_t>(cut.size() - 8);
  for (int i = 0; i < 4; ++i) cut[4 + i] = static_cast<uint8_t>(riff >> (8 * i));
  EXPECT_EQ(DecodeWhy(cut).rfind("WebP: ", 0), 0u) << DecodeWhy(cut);
  // Data of no codec.
  EXPECT_EQ(DecodeWhy({}), "an empty record");
  const std::string gif = "GIF89a....";
  EXPECT_EQ(DecodeWhy(std::vector<uint8_t>(gif.begin(), gif.end())),
            "GIF data: JPEG, PNG and WebP are decoded");
  EXPECT_EQ(DecodeWhy({0x3c, 0x68, 0x74, 0x6d, 0x6c}),
            "not an image: it starts with bytes 3c 68 74 6d");
  // An animated WebP: a VP8X header (a lossy image with alpha has one) with its animation flag.
  std::vector<uint8_t> animated = EncodeWebp(rgb, w, h, false, 80, std::vector<uint8_t>(w * h, 9));
  ASSERT_EQ(std::string(animated.begin() + 12, animated.begin() + 16), "VP8X");
  animated[20] |= 0x02;
  EXPECT_EQ(DecodeWhy(animated), "WebP: an animated WebP: only still images are decoded");
  // Each refusal left the decoder usable: a good record after bad ones decodes.
  ImageDecodeSpec spec = Spec(ImageCrop::kCenter);
  auto d = ImageRecordDecoder::Create(spec);
  ASSERT_TRUE(d.ok());
  std::vector<uint8_t> out(spec.OutputSampleBytes());
  const std::vector<const std::vector<uint8_t>*> records = {&flipped, &cut, &png, &webp, &lossless};
  for (const std::vector<uint8_t>* r : records) {
    (*d)->Decode(r->data(), r->size(), 0, 0, out.data());
  }
  EXPECT_EQ((*d)->Decode(png.data(), png.size(), 0, 0, out.data()), "");
}

}  // namespace
}  // namespace rf
