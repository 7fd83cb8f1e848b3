// ringfeed-convert images --max-side N --quality Q: an image above N a side stored resized to N
// on its longer side as a baseline JPEG, at the quality asked (a PNG or WebP too); one within N
// byte for byte, whatever its kind (progressive, CMYK, extended, arithmetic-coded JPEG, PNG,
// WebP), with --max-side or without; 12-bit, lossless, truncated and undecodable files refused
// naming the file, nothing written; the options' bad values usage errors naming the option. The
// stored records are read back through TurboJPEG (their header: size, baseline, subsampling).
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

// clang-format off
#include <jpeglib.h>
// clang-format on

#include "tests/testing/image_encoding.h"
#include "tests/testing/jpeg_testing.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"
#include "tests/tools/image_testing.h"

namespace rf {
namespace {

using testing::BadImage;
using testing::Convert;
using testing::FailsWith;
using testing::FilesIn;
using testing::FrameMarker;
using testing::Jpeg;
using testing::MakeJpeg;
using testing::Record;
using testing::Records;
using testing::TempDir;
using testing::WriteAll;
namespace fs = std::filesystem;

struct Header {
  int width = 0, height = 0, subsamp = -1;
};

Header ReadHeader(const std::vector<uint8_t>& jpeg) {
  Header h;
  int colorspace = 0;
  tjhandle t = tjInitDecompress();
  EXPECT_EQ(tjDecompressHeader3(t, jpeg.data(), jpeg.size(), &h.width, &h.height, &h.subsamp,
                                &colorspace),
            0)
      << tjGetErrorStr2(t);
  tjDestroy(t);
  return h;
}

// An arithmetic-coded JPEG (SOF9), through libjpeg itself (TurboJPEG 2.1 writes Huffman only).
std::vector<uint8_t> ArithmeticJpeg(uint32_t h, uint32_t w) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  c.arith_code = TRUE;
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(size_t{w} * 3);
  while (c.next_scanline < h) {
    for (uint32_t x = 0; x < w; ++x)
      for (int k = 0; k < 3; ++k)
        row[x * 3 + k] = testing::PatternValue(c.next_scanline, x, h, w, k, 2);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<uint8_t> out(buf, buf + size);
  std::free(buf);
  return out;
}

// `j` with its frame header's marker made `marker` (a baseline JPEG read as SOF1 decodes the
// same; as SOF3 it is a lossless JPEG no one decodes).
std::vector<uint8_t> WithFrameMarker(std::vector<uint8_t> j, uint8_t marker) {
  size_t at = 0;
  EXPECT_EQ(FrameMarker(j, &at), 0xc0);
  j[at + 1] = marker;
  return j;
}

// A tree of one class, "c", holding `files` (name, bytes) in name order.
void MakeTree(const std::string& root,
              const std::vector<std::pair<std::string, std::vector<uint8_t>>>& files) {
  fs::create_directories(root + "/c");
  for (const auto& [name, bytes] : files) WriteAll(root + "/c/" + name, bytes);
}

TEST(ImagesReencode, ALargeImageIsStoredResizedToMaxSideAndASmallOneByteForByte) {
  TempDir t;
  const std::vector<uint8_t> wide = MakeJpeg(400, 600, 3, 92, TJSAMP_420, 1),
                             small = MakeJpeg(80, 100, 3, 92, TJSAMP_444, 2),
                             tall = MakeJpeg(700, 300, 3, 92, TJSAMP_420, 3),
                             grey = MakeJpeg(500, 300, 1, 92, TJSAMP_GRAY, 4),
                             edge = MakeJpeg(256, 200, 3, 92, TJSAMP_420, 5);
  MakeTree(t.File("tree"), {{"a-wide.jpg", wide},
                            {"b-small.jpg", small},
                            {"c-tall.jpg", tall},
                            {"d-grey.jpg", grey},
                            {"e-edge.jpg", edge}});
  std::string out;
  const Status st = Convert({"images", t.File("tree"), "-o", t.File("d.rfd"), "--max-side", "256",
                             "--threads", "3", "--keep-order"},
                            &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::vector<Record> r = Records(t.File("d.rfd"));
  ASSERT_EQ(r.size(), 5u);
  struct Want {
    int width, height, subsamp;
  };
  // 600x400 -> 256x170.7; 300x700 -> 109.7x256; 300x500 -> 153.6x256.
  const Want want[] = {{256, 171, TJSAMP_420},
                       {100, 80, TJSAMP_444},
                       {110, 256, TJSAMP_420},
                       {154, 256, TJSAMP_GRAY},
                       {200, 256, TJSAMP_420}};
  for (size_t i = 0; i < r.size(); ++i) {
    const Header h = ReadHeader(r[i].bytes);
    EXPECT_EQ(h.width, want[i].width) << i;
    EXPECT_EQ(h.height, want[i].height) << i;
    EXPECT_EQ(h.subsamp, want[i].subsamp) << i;
    EXPECT_EQ(FrameMarker(r[i].bytes), 0xc0) << i;
  }
  EXPECT_EQ(r[1].bytes, small);  // within 256: its own bytes
  EXPECT_EQ(r[4].bytes, edge);   // 256 exactly: within
  EXPECT_NE(out.find("5 images (5 JPEG; image/jpeg) of 1 classes"), std::string::npos) << out;
  EXPECT_NE(out.find("re-encoded 3 images above --max-side 256 at quality 90: resized to 256 "
                     "pixels on the longer side, as baseline JPEGs\n"),
            std::string::npos)
      << out;
}

TEST(ImagesReencode, ALowerQualityStoresFewerBytesAndTheSameInputTheSameBytes) {
  TempDir t;
  const std::vector<uint8_t> big = MakeJpeg(480, 640, 3, 95, TJSAMP_420, 6),
                             small = MakeJpeg(40, 60, 3, 95, TJSAMP_420, 7);
  MakeTree(t.File("tree"), {{"big.jpg", big}, {"small.jpg", small}});
  const auto convert = [&](const std::string& name, const std::string& quality,
                           const std::string& threads) {
    const Status st =
        Convert({"images", t.File("tree"), "--keep-order", "-o", t.File(name), "--max-side", "300",
                 "--quality", quality, "--threads", threads, "-q"});
    EXPECT_TRUE(st.ok()) << st.ToString();
    return Records(t.File(name));
  };
  const std::vector<Record> q90 = convert("a.rfd", "90", "1"), again = convert("b.rfd", "90", "4"),
                            q40 = convert("c.rfd", "40", "2");
  ASSERT_EQ(q90.size(), 2u);
  ASSERT_EQ(again.size(), 2u);
  ASSERT_EQ(q40.size(), 2u);
  EXPECT_EQ(q90[0].bytes, again[0].bytes);  // the same bytes, whatever the thread count
  EXPECT_LT(q40[0].bytes.size() * 10, q90[0].bytes.size() * 7) << q40[0].bytes.size();
  EXPECT_EQ(ReadHeader(q40[0].bytes).width, 300);
  EXPECT_EQ(q90[1].bytes, small);
  EXPECT_EQ(q40[1].bytes, small);
}

// Progressive, CMYK, extended and arithmetic-coded JPEGs, PNGs and WebPs: the decoders take each
// as it is, so each is stored byte for byte, with --max-side (within it) or without.
TEST(ImagesReencode, EveryKindTheDecodersTakeIsStoredAsItIsWithMaxSideOrWithout) {
  TempDir t;
  const std::vector<uint8_t> baseline = Jpeg(48, 32, 3);
  std::vector<uint16_t> grey(40 * 30);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<uint16_t>(i % 251);
  const std::vector<uint8_t> rgb(30 * 20 * 3, 140);
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> files = {
      {"a-arith.jpg", ArithmeticJpeg(30, 50)},
      {"b-cmyk.jpg", Jpeg(48, 32, 3, 0, TJPF_CMYK)},
      {"c-extended.jpg", WithFrameMarker(baseline, 0xc1)},
      {"d-progressive.jpg", Jpeg(40, 36, 3, TJFLAG_PROGRESSIVE)},
      {"e-baseline.jpg", baseline},
      {"f-grey.png", testing::EncodePng({40, 30, 0, 8, false}, grey)},
      {"g-photo.webp", testing::EncodeWebp(rgb, 30, 20, false)}};
  MakeTree(t.File("tree"), files);
  for (const bool max_side : {true, false}) {
    std::vector<std::string> args = {"images", t.File("tree"), "-o", t.File("d.rfd"),
                                     "--keep-order"};
    if (max_side) args.insert(args.end(), {"--max-side", "64"});
    std::string out;
    const Status st = Convert(args, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const std::vector<Record> r = Records(t.File("d.rfd"), "image/*");
    ASSERT_EQ(r.size(), files.size());
    for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i].bytes, files[i].second) << i;
    EXPECT_NE(out.find("7 images (5 JPEG (1 progressive, 1 CMYK), 1 PNG, 1 WebP; image/*)"),
              std::string::npos)
        << out;
    if (max_side) {
      EXPECT_NE(out.find("re-encoded no image: each is within --max-side 64 pixels a side, "
                         "stored as it is\n"),
                std::string::npos)
          << out;
    }
  }
}

// A PNG or WebP above --max-side: decoded by its own decoder, resized, stored as a baseline JPEG.
TEST(ImagesReencode, PngsAndWebpsAboveMaxSideAreStoredAsResizedBaselineJpegs) {
  TempDir t;
  std::vector<uint16_t> px;
  std::vector<uint8_t> rgb;
  for (uint32_t y = 0; y < 120; ++y)
    for (uint32_t x = 0; x < 200; ++x)
      for (int c = 0; c < 3; ++c) {
        px.push_back(static_cast<uint16_t>((x + y * c) % 256));
        rgb.push_back(static_cast<uint8_t>((x * c + y) % 256));
      }
  std::vector<uint8_t> alpha(200 * 120, 128);
  MakeTree(t.File("tree"), {{"a.png", testing::EncodePng({200, 120, 2, 8, true}, px)},
                            {"b.webp", testing::EncodeWebp(rgb, 200, 120, true, 80, alpha)},
                            {"c.jpg", Jpeg(40, 30, 3)}});
  std::string out;
  ASSERT_TRUE(Convert({"images", t.File("tree"), "--keep-order", "-o", t.File("d.rfd"),
                       "--max-side", "100"},
                      &out)
                  .ok());
  const std::vector<Record> r = Records(t.File("d.rfd"));  // all JPEGs now: image/jpeg
  ASSERT_EQ(r.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(FrameMarker(r[i].bytes), 0xc0) << i;
    EXPECT_EQ(ReadHeader(r[i].bytes).width, 100) << i;
    EXPECT_EQ(ReadHeader(r[i].bytes).height, 60) << i;
  }
  EXPECT_NE(out.find("3 images (3 JPEG; image/jpeg)"), std::string::npos) << out;
  EXPECT_NE(out.find("re-encoded 2 images above --max-side 100"), std::string::npos) << out;
}

TEST(ImagesReencode, WebDatasetImagesAreReencodedToo) {
  TempDir t;
  std::vector<uint8_t> tar;
  const std::vector<uint8_t> big = MakeJpeg(300, 200, 3), small = MakeJpeg(20, 30, 3);
  testing::TarMember(&tar, "a.jpg", big);
  testing::TarMember(&tar, "a.cls", {'1'});
  testing::TarMember(&tar, "b.jpg", small);
  testing::TarMember(&tar, "b.cls", {'0'});
  tar.resize(tar.size() + 1024);
  WriteAll(t.File("s.tar"), tar);
  ASSERT_TRUE(
      Convert({"images", t.File("s.tar"), "-o", t.File("w.rfd"), "--max-side", "100", "-q"}).ok());
  const std::vector<Record> r = Records(t.File("w.rfd"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(ReadHeader(r[0].bytes).height, 100);
  EXPECT_EQ(ReadHeader(r[0].bytes).width, 67);  // 200 * 100 / 300 = 66.7
  EXPECT_EQ(r[0].label, 1);
  EXPECT_EQ(r[1].bytes, small);
}

TEST(ImagesReencode, WhatNoDecoderTakesIsRefusedNamingTheFileAndNothingIsWritten) {
  const std::vector<uint8_t> good = Jpeg(48, 32, 3), big = MakeJpeg(200, 300, 3);
  std::vector<uint8_t> twelve = good;
  size_t sof = 0;
  ASSERT_EQ(FrameMarker(good, &sof), 0xc0);
  twelve[sof + 4] = 12;  // precision
  // The first 40% of the scan, then its end-of-image marker: libjpeg meets the marker in the
  // scan's data.
  std::vector<uint8_t> corrupt(big.begin(), big.begin() + big.size() * 2 / 5);
  corrupt.push_back(0xff);
  corrupt.push_back(0xd9);
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
  const std::vector<BadImage> cases = {
      {"png.jpg", png, "PNG: truncated: the data ends inside the IHDR chunk"},
      {"png.png", png, "PNG: truncated: the data ends inside the IHDR chunk"},
      {"twelve.jpg", twelve, "12-bit samples: only 8-bit JPEGs are stored"},
      {"lossless.jpg", WithFrameMarker(good, 0xc3),
       "a lossless JPEG (SOF3): libjpeg-turbo does not decode it"},
      {"cut.jpg", std::vector<uint8_t>(big.begin(), big.begin() + big.size() / 2),
       "truncated: no end-of-image marker after the scan"},
      {"corrupt.jpg", corrupt,
       "its re-encode failed: libjpeg-turbo: Corrupt JPEG data: premature end of data segment"},
  };
  for (const BadImage& c : cases) {
    TempDir t;
    MakeTree(t.File("tree"), {{"a.jpg", big}, {c.name, c.bytes}, {"z.jpg", good}});
    const Status st = Convert({"images", t.File("tree"), "--keep-order", "-o", t.File("d.rfd"),
                               "--max-side", "64", "-q"});
    EXPECT_TRUE(FailsWith(
        st, "1 image refused, nothing written: " + t.File("tree/c/") + c.name + ": " + c.fragment))
        << c.name;
    EXPECT_EQ(st.ToString().find('\n'), std::string::npos);
    EXPECT_FALSE(st.IsUsage());  // a data error: exit 1
    EXPECT_EQ(FilesIn(t.path()), std::vector<std::string>{"tree"}) << c.name;  // no temporaries
  }
}

TEST(ImagesReencode, MaxSideQualityAndThreadsOutOfRangeAreUsageErrorsNamingTheOption) {
  TempDir t;
  MakeTree(t.File("tree"), {{"a.jpg", MakeJpeg(40, 30, 3)}});
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--max-side", "0"}, "images: --max-side must be a whole number from 1 to 65535, got 0"},
      {{"--max-side", "65536"},
       "images: --max-side must be a whole number from 1 to 65535, got 65536"},
      {{"--max-side", "64", "--quality", "0"},
       "images: --quality must be a whole number from 1 to 100, got 0"},
      {{"--max-side", "64", "--quality", "101"},
       "images: --quality must be a whole number from 1 to 100, got 101"},
      {{"--quality", "80"}, "--quality is the quality of a re-encode: give --max-side too"},
      {{"--max-side", "20000"},
       "--max-side 20000 is more than --max-image-side 16384, which every stored image must be "
       "within: raise --max-image-side"},
      {{"--max-side", "64", "--threads", "1025"},
       "images: --threads must be a whole number from 0 to 1024, got 1025"},
      {{"--max-side", "-1"}, "images: --max-side must be a whole number from 1 to 65535, got '-1'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"images", t.File("tree"), "-o", t.File("d.rfd"), "-q"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const Status st = Convert(args);
    EXPECT_TRUE(testing::FailsWithUsage(st, c.message));
    EXPECT_FALSE(fs::exists(t.File("d.rfd"))) << c.message;
  }
  // The guard raised with it: 20000 a side is allowed.
  EXPECT_TRUE(Convert({"images", t.File("tree"), "--keep-order", "-o", t.File("d.rfd"), "-q",
                       "--max-side", "20000", "--max-image-side", "20000"})
                  .ok());
}

}  // namespace
}  // namespace rf
