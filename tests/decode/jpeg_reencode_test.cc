// decode/jpeg_reencode.h and jpeg_encode.h: a JPEG decoded whole, resized and encoded again as a
// baseline JPEG. Checked through TurboJPEG (a separate reader of the same library): the output's
// header (baseline, 4:2:0 or grey, its size) and pixels, against the smooth pattern the input
// was made of, sampled at each output pixel's centre (tests/testing/jpeg_testing.h: a resize of
// a smooth image is close to the image's own values there; the tolerances hold the JPEG
// round trips and the filter's averaging).
#include "decode/jpeg_reencode.h"

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "decode/jpeg_encode.h"
#include "tests/testing/jpeg_testing.h"

namespace rf {
namespace {

using testing::FrameMarker;
using testing::MakeJpeg;
using testing::PatternValue;
using testing::TurboDecode;

struct Header {
  int width = 0, height = 0, subsamp = -1, colorspace = -1;
};

Header ReadHeader(const std::vector<uint8_t>& jpeg) {
  Header h;
  tjhandle t = tjInitDecompress();
  EXPECT_EQ(tjDecompressHeader3(t, jpeg.data(), jpeg.size(), &h.width, &h.height, &h.subsamp,
                                &h.colorspace),
            0)
      << tjGetErrorStr2(t);
  tjDestroy(t);
  return h;
}

std::unique_ptr<JpegReencoder> Reencoder() {
  Result<std::unique_ptr<JpegReencoder>> r = JpegReencoder::Create();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(*r);
}

// The mean and the largest absolute difference of the decoded `out` (h x w, `channels`) from
// the pattern of an H x W image (seed) at each output pixel's centre.
struct Error {
  double mean = 0;
  int largest = 0;
};
Error AgainstPattern(const std::vector<uint8_t>& out, uint32_t h, uint32_t w, int channels,
                     uint32_t H, uint32_t W, uint32_t seed) {
  Error e;
  double sum = 0;
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      const auto sy = static_cast<uint32_t>(std::floor((y + 0.5) * H / h));
      const auto sx = static_cast<uint32_t>(std::floor((x + 0.5) * W / w));
      for (int c = 0; c < channels; ++c) {
        const int want = PatternValue(sy, sx, H, W, channels == 1 ? 2 : c, seed);
        const int d = std::abs(int{out[(size_t{y} * w + x) * channels + c]} - want);
        sum += d;
        e.largest = std::max(e.largest, d);
      }
    }
  }
  e.mean = sum / (static_cast<double>(h) * w * channels);
  return e;
}

TEST(FitWithin, TheLongerSideBecomesMaxSideAndTheShorterIsRoundedToNearest) {
  EXPECT_EQ(FitWithin(1000, 500, 224), (ImageSize{224, 112}));
  EXPECT_EQ(FitWithin(500, 1000, 224), (ImageSize{112, 224}));
  EXPECT_EQ(FitWithin(300, 150, 101), (ImageSize{101, 51}));  // 50.5 rounds up
  EXPECT_EQ(FitWithin(300, 149, 101), (ImageSize{101, 50}));  // 50.16
  EXPECT_EQ(FitWithin(3, 1000, 224), (ImageSize{1, 224}));    // at least 1
  EXPECT_EQ(FitWithin(224, 224, 224), (ImageSize{224, 224}));
  EXPECT_EQ(FitWithin(100, 80, 224), (ImageSize{100, 80}));  // within: its own
  EXPECT_EQ(FitWithin(65535, 65535, 1), (ImageSize{1, 1}));
}

TEST(JpegEncoder, WritesABaselineJfifOf420OrGreyThatDecodesToThePixels) {
  Result<std::unique_ptr<JpegEncoder>> enc = JpegEncoder::Create();
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  for (int channels : {3, 1}) {
    const uint32_t h = 61, w = 83;  // not multiples of the MCU
    std::vector<uint8_t> px(size_t{h} * w * channels);
    for (uint32_t y = 0; y < h; ++y)
      for (uint32_t x = 0; x < w; ++x)
        for (int c = 0; c < channels; ++c)
          px[(size_t{y} * w + x) * channels + c] =
              PatternValue(y, x, h, w, channels == 1 ? 2 : c, 5);
    std::vector<uint8_t> jpeg;
    ASSERT_EQ((*enc)->Encode(px.data(), size_t{w} * channels, h, w, channels, 90, &jpeg), "");
    EXPECT_EQ(FrameMarker(jpeg), 0xc0);
    EXPECT_EQ(jpeg[6], 'J');  // APP0 "JFIF" right after the start-of-image marker
    const Header hd = ReadHeader(jpeg);
    EXPECT_EQ(hd.width, 83);
    EXPECT_EQ(hd.height, 61);
    EXPECT_EQ(hd.subsamp, channels == 1 ? TJSAMP_GRAY : TJSAMP_420);
    uint32_t dh = 0, dw = 0;
    const std::vector<uint8_t> back = TurboDecode(jpeg, 1, channels, &dh, &dw);
    const Error e = AgainstPattern(back, h, w, channels, h, w, 5);
    EXPECT_LT(e.mean, 1.5) << channels;
    EXPECT_LE(e.largest, 12) << channels;
  }
}

TEST(JpegEncoder, TheSamePixelsGiveTheSameBytesAndALowerQualityFewer) {
  const uint32_t h = 120, w = 160;
  uint32_t dh = 0, dw = 0;
  const std::vector<uint8_t> px = TurboDecode(MakeJpeg(h, w, 3, 95), 1, 3, &dh, &dw);
  std::vector<uint8_t> a, b, low;
  Result<std::unique_ptr<JpegEncoder>> one = JpegEncoder::Create(), two = JpegEncoder::Create();
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ((*one)->Encode(px.data(), w * 3, h, w, 3, 90, &a), "");
  ASSERT_EQ((*two)->Encode(px.data(), w * 3, h, w, 3, 90, &b), "");
  EXPECT_EQ(a, b);
  ASSERT_EQ((*one)->Encode(px.data(), w * 3, h, w, 3, 90, &b), "");  // reused: the same again
  EXPECT_EQ(a, b);
  ASSERT_EQ((*one)->Encode(px.data(), w * 3, h, w, 3, 30, &low), "");
  EXPECT_LT(low.size(), a.size());
}

TEST(JpegReencoder, ALargeImageIsResizedToTheTargetThroughADctScale) {
  const uint32_t H = 400, W = 600, seed = 3;
  const std::vector<uint8_t> in = MakeJpeg(H, W, 3, 95, TJSAMP_420, seed);
  auto r = Reencoder();
  struct Case {
    uint32_t max_side, scale;
  };
  // 150: 1/4 gives 150x100 exactly, no resample; 200: 1/2 gives 300x200, resampled to 200x133;
  // 500: the full size, resampled.
  for (const Case& c : {Case{150, 4}, Case{200, 2}, Case{500, 1}}) {
    const ImageSize size = FitWithin(H, W, c.max_side);
    std::vector<uint8_t> out;
    ASSERT_EQ(r->Reencode(in.data(), in.size(), size, 90, &out), "") << c.max_side;
    EXPECT_EQ(r->last_scale(), c.scale) << c.max_side;
    const Header hd = ReadHeader(out);
    EXPECT_EQ(FrameMarker(out), 0xc0);
    EXPECT_EQ(hd.subsamp, TJSAMP_420);
    EXPECT_EQ(static_cast<uint32_t>(hd.width), size.width) << c.max_side;
    EXPECT_EQ(static_cast<uint32_t>(hd.height), size.height) << c.max_side;
    uint32_t dh = 0, dw = 0;
    const std::vector<uint8_t> px = TurboDecode(out, 1, 3, &dh, &dw);
    const Error e = AgainstPattern(px, dh, dw, 3, H, W, seed);
    EXPECT_LT(e.mean, 2.0) << c.max_side;
    EXPECT_LE(e.largest, 16) << c.max_side;
  }
}

TEST(JpegReencoder, GreyStaysGreyAndTheOutputIsAFunctionOfItsInputs) {
  const std::vector<uint8_t> in = MakeJpeg(300, 200, 1, 90, TJSAMP_GRAY, 9);
  auto a = Reencoder(), b = Reencoder();
  std::vector<uint8_t> x, y, low;
  const ImageSize size = FitWithin(300, 200, 97);
  ASSERT_EQ(a->Reencode(in.data(), in.size(), size, 85, &x), "");
  ASSERT_EQ(b->Reencode(in.data(), in.size(), size, 85, &y), "");
  EXPECT_EQ(x, y);
  EXPECT_EQ(ReadHeader(x).subsamp, TJSAMP_GRAY);
  EXPECT_EQ(ReadHeader(x).height, 97);
  EXPECT_EQ(ReadHeader(x).width, 65);  // 200 * 97 / 300 = 64.67
  ASSERT_EQ(a->Reencode(in.data(), in.size(), size, 20, &low), "");
  EXPECT_LT(low.size(), x.size());
}

// A progressive JPEG is made baseline at its own size.
TEST(JpegReencoder, AProgressiveJpegBecomesBaselineAtItsOwnSize) {
  const uint32_t h = 90, w = 70;
  std::vector<uint8_t> px(size_t{h} * w * 3);
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) px[(size_t{y} * w + x) * 3 + c] = PatternValue(y, x, h, w, c, 1);
  tjhandle t = tjInitCompress();
  unsigned char* j = nullptr;
  unsigned long n = 0;
  ASSERT_EQ(
      tjCompress2(t, px.data(), w, 0, h, TJPF_RGB, &j, &n, TJSAMP_420, 95, TJFLAG_PROGRESSIVE), 0);
  const std::vector<uint8_t> in(j, j + n);
  tjFree(j);
  tjDestroy(t);
  ASSERT_EQ(FrameMarker(in), 0xc2);
  std::vector<uint8_t> out;
  auto r = Reencoder();
  ASSERT_EQ(r->Reencode(in.data(), in.size(), {h, w}, 95, &out), "");
  EXPECT_EQ(FrameMarker(out), 0xc0);
  uint32_t dh = 0, dw = 0;
  const std::vector<uint8_t> back = TurboDecode(out, 1, 3, &dh, &dw);
  EXPECT_EQ(dh, h);
  EXPECT_EQ(dw, w);
  EXPECT_LT(AgainstPattern(back, h, w, 3, h, w, 1).mean, 1.5);
}

// TurboJPEG writes CMYK as YCCK with an Adobe marker, the inks as given: read as Adobe's
// inverted inks, (200, 100, 50, 255) is RGB (200, 100, 50).
TEST(JpegReencoder, ACmykJpegBecomesRgbByAdobesInvertedInks) {
  const uint32_t h = 32, w = 48;
  std::vector<uint8_t> cmyk(size_t{h} * w * 4);
  for (size_t i = 0; i < cmyk.size(); i += 4) {
    cmyk[i] = 200;
    cmyk[i + 1] = 100;
    cmyk[i + 2] = 50;
    cmyk[i + 3] = 255;
  }
  tjhandle t = tjInitCompress();
  unsigned char* j = nullptr;
  unsigned long n = 0;
  ASSERT_EQ(tjCompress2(t, cmyk.data(), w, 0, h, TJPF_CMYK, &j, &n, TJSAMP_444, 95, 0), 0);
  const std::vector<uint8_t> in(j, j + n);
  tjFree(j);
  tjDestroy(t);
  std::vector<uint8_t> out;
  auto r = Reencoder();
  ASSERT_EQ(r->Reencode(in.data(), in.size(), {h, w}, 95, &out), "");
  const Header hd = ReadHeader(out);
  EXPECT_EQ(hd.colorspace, TJCS_YCbCr);
  uint32_t dh = 0, dw = 0;
  const std::vector<uint8_t> back = TurboDecode(out, 1, 3, &dh, &dw);
  for (size_t i = 0; i < back.size(); i += 3) {
    ASSERT_NEAR(back[i], 200, 3) << i;
    ASSERT_NEAR(back[i + 1], 100, 3) << i;
    ASSERT_NEAR(back[i + 2], 50, 3) << i;
  }
}

TEST(JpegReencoder, ATruncatedOrCorruptJpegIsRefusedWithLibjpegsMessage) {
  const std::vector<uint8_t> in = MakeJpeg(200, 300, 3, 90);
  auto r = Reencoder();
  std::vector<uint8_t> out;
  const std::vector<uint8_t> cut(in.begin(), in.begin() + in.size() / 2);
  EXPECT_EQ(r->Reencode(cut.data(), cut.size(), {100, 150}, 90, &out),
            "libjpeg-turbo: Premature end of JPEG file");
  const std::vector<uint8_t> none = {0x89, 'P', 'N', 'G', 0, 0, 0, 0};
  EXPECT_EQ(r->Reencode(none.data(), none.size(), {1, 1}, 90, &out),
            "libjpeg-turbo: Not a JPEG file: starts with 0x89 0x50");
  // The re-encoder still works after both.
  ASSERT_EQ(r->Reencode(in.data(), in.size(), {100, 150}, 90, &out), "");
  EXPECT_EQ(ReadHeader(out).width, 150);
}

TEST(JpegReencoder, AHugeProgressiveHeaderIsRefusedBeforeItsDecode) {
  // A progressive JPEG's frame and scan headers declaring 65000 x 65000 pixels, 3 components:
  // its coefficients alone would take 24 GiB.
  const uint32_t h = 16, w = 16;
  std::vector<uint8_t> px(size_t{h} * w * 3, 128);
  tjhandle t = tjInitCompress();
  unsigned char* j = nullptr;
  unsigned long n = 0;
  ASSERT_EQ(
      tjCompress2(t, px.data(), w, 0, h, TJPF_RGB, &j, &n, TJSAMP_444, 90, TJFLAG_PROGRESSIVE), 0);
  std::vector<uint8_t> in(j, j + n);
  tjFree(j);
  tjDestroy(t);
  size_t at = 0;
  ASSERT_EQ(FrameMarker(in, &at), 0xc2);
  in[at + 5] = 0xfd;  // height 65000 = 0xfde8
  in[at + 6] = 0xe8;
  in[at + 7] = 0xfd;  // width
  in[at + 8] = 0xe8;
  auto r = Reencoder();
  std::vector<uint8_t> out;
  const std::string why = r->Reencode(in.data(), in.size(), {224, 224}, 90, &out);
  EXPECT_EQ(why.rfind("a 65000x65000 image whose decode needs ", 0), 0u) << why;
  EXPECT_NE(why.find("more than the 4096 MiB an image may take"), std::string::npos) << why;
}

}  // namespace
}  // namespace rf
