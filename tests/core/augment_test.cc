// Augmentation's math (core/augment.h) and its one parser (core/augment_spec.h): the transforms a
// sample gets are a pure function of (seed, epoch, sample index), and each output pixel comes from
// where the transform says, checked against expectations computed here independently.
#include "core/augment.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/augment_spec.h"

namespace rf {
namespace {

AugmentParams Parsed(const std::string& text) {
  Result<AugmentParams> r = ParseAugmentSpec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : AugmentParams{};
}

// Applies `t` to a height x width plane whose pixel (y, x) holds 1 + y * width + x (so 0 means
// "zero filled"), through SourcePixel.
std::vector<uint32_t> Apply(const SampleTransform& t, uint32_t height, uint32_t width) {
  std::vector<uint32_t> out(size_t{height} * width);
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      uint32_t src = 0;
      out[y * width + x] = SourcePixel(t, height, width, y, x, &src) ? 1 + src : 0;
    }
  }
  return out;
}

TEST(ParseAugmentSpec, ReadsEveryTransformInAnyOrder) {
  const AugmentParams p = Parsed("crop:4,flip,erase:0.5");
  EXPECT_EQ(p.crop_pad, 4u);
  EXPECT_EQ(p.flip, 1u);
  EXPECT_EQ(p.erase_threshold, uint64_t{1} << 31);
  EXPECT_TRUE(p.enabled());
  const AugmentParams q = Parsed("erase:1,flip");
  EXPECT_EQ(q.crop_pad, 0u);
  EXPECT_EQ(q.erase_threshold, uint64_t{1} << 32);
  EXPECT_FALSE(Parsed("").enabled());
  EXPECT_FALSE(Parsed("none").enabled());
  EXPECT_EQ(AugmentSpecText(p), "crop:4,flip,erase:0.5");
  EXPECT_EQ(AugmentSpecText(Parsed("flip,crop:2")), "crop:2,flip");
  EXPECT_EQ(AugmentSpecText(AugmentParams{}), "none");
  EXPECT_EQ(Parsed(AugmentSpecText(Parsed("erase:0.25"))).erase_threshold, uint64_t{1} << 30);
}

TEST(ParseAugmentSpec, RefusesBadItemsNamingTheOptionAndTheItem) {
  const struct {
    const char* spec;
    const char* item;
    const char* why;
  } cases[] = {
      {"crop", "'crop'", "whole number from 1 to 1024"},
      {"crop:0", "'crop:0'", "whole number"},
      {"crop:-1", "'crop:-1'", "whole number"},
      {"crop:2.5", "'crop:2.5'", "whole number"},
      {"crop:1025", "'crop:1025'", "from 1 to 1024"},
      {"crop:4x", "'crop:4x'", "whole number"},
      {"erase", "'erase'", "probability in (0, 1]"},
      {"erase:0", "'erase:0'", "probability"},
      {"erase:1.5", "'erase:1.5'", "probability"},
      {"erase:nan", "'erase:nan'", "probability"},
      {"flip:1", "'flip:1'", "takes no argument"},
      {"flip,flip", "'flip'", "given twice"},
      {"crop:4,crop:2", "'crop:2'", "given twice"},
      {"rotate:10", "'rotate:10'", "unknown transform 'rotate'"},
      {"crop:4,", "''", "empty item"},
      {",flip", "''", "empty item"},
      {"Flip", "'Flip'", "unknown transform"},
  };
  for (const auto& c : cases) {
    Result<AugmentParams> r = ParseAugmentSpec(c.spec);
    ASSERT_FALSE(r.ok()) << c.spec;
    const std::string msg = r.status().ToString();
    EXPECT_TRUE(r.status().IsUsage()) << msg;
    EXPECT_NE(msg.find("--augment"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.item), std::string::npos) << c.spec << ": " << msg;
    EXPECT_NE(msg.find(c.why), std::string::npos) << c.spec << ": " << msg;
  }
}

TEST(SourcePixel, CropShiftsAndFillsZerosOutsideTheImage) {
  SampleTransform t;
  t.dy = -1;
  t.dx = 2;
  // 3 x 4 image: pixel (y, x) = 1 + 4y + x. Output (y, x) reads (y - 1, x + 2).
  const std::vector<uint32_t> expected = {
      0, 0, 0, 0,  // row -1: padding
      3, 4, 0, 0,  // row 0, columns 2, 3, then padding
      7, 8, 0, 0,  // row 1
  };
  EXPECT_EQ(Apply(t, 3, 4), expected);
}

TEST(SourcePixel, FlipMirrorsColumnsBeforeTheShift) {
  SampleTransform t;
  t.flip = true;
  EXPECT_EQ(Apply(t, 2, 3), (std::vector<uint32_t>{3, 2, 1, 6, 5, 4}));
  t.dx = 1;  // output x reads column (W-1-x) + 1
  EXPECT_EQ(Apply(t, 2, 3), (std::vector<uint32_t>{0, 3, 2, 0, 6, 5}));
}

TEST(SourcePixel, EraseZeroesItsRectangleOfTheOutput) {
  SampleTransform t;
  t.flip = true;
  t.erase_y = 1;
  t.erase_x = 0;
  t.erase_h = 2;
  t.erase_w = 2;
  const std::vector<uint32_t> expected = {
      3, 2, 1,  //
      0, 0, 4,  // row 1 flipped is 6 5 4; columns 0-1 erased
      0, 0, 7,  // row 2 flipped is 9 8 7
  };
  EXPECT_EQ(Apply(t, 3, 3), expected);
}

TEST(DrawTransform, IsAPureFunctionOfSeedEpochAndSampleIndex) {
  const AugmentParams p = Parsed("crop:4,flip,erase:0.5");
  const auto same = [](const SampleTransform& a, const SampleTransform& b) {
    return a.dy == b.dy && a.dx == b.dx && a.flip == b.flip && a.erase_y == b.erase_y &&
           a.erase_x == b.erase_x && a.erase_h == b.erase_h && a.erase_w == b.erase_w;
  };
  int epoch_differs = 0, seed_differs = 0, index_differs = 0;
  for (uint64_t i = 0; i < 64; ++i) {
    const uint64_t index = i * 1000003 + (uint64_t{1} << 33);  // high index words matter too
    const SampleTransform a = DrawTransform(p, 7, 3, index, 32, 32);
    EXPECT_TRUE(same(a, DrawTransform(p, 7, 3, index, 32, 32)));
    epoch_differs += !same(a, DrawTransform(p, 7, 4, index, 32, 32));
    seed_differs += !same(a, DrawTransform(p, 8, 3, index, 32, 32));
    index_differs += !same(a, DrawTransform(p, 7, 3, index + 1, 32, 32));
  }
  // Random draws: a few coincide, most do not.
  EXPECT_GT(epoch_differs, 56);
  EXPECT_GT(seed_differs, 56);
  EXPECT_GT(index_differs, 56);
}

TEST(DrawTransform, TheSameDrawsFeedACropWhateverElseIsOn) {
  for (uint64_t index = 0; index < 32; ++index) {
    const SampleTransform a = DrawTransform(Parsed("crop:3"), 1, 0, index, 28, 28);
    const SampleTransform b = DrawTransform(Parsed("crop:3,flip,erase:1"), 1, 0, index, 28, 28);
    EXPECT_EQ(a.dy, b.dy);
    EXPECT_EQ(a.dx, b.dx);
    EXPECT_FALSE(a.flip);
    EXPECT_EQ(a.erase_h, 0u);
  }
}

TEST(DrawTransform, DrawsCoverTheirRangesAtTheAskedRates) {
  const AugmentParams p = Parsed("crop:2,flip,erase:0.25");
  const uint32_t h = 32, w = 24;
  std::set<int32_t> dys, dxs;
  int flips = 0, erases = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const SampleTransform t = DrawTransform(p, 42, 1, static_cast<uint64_t>(i), h, w);
    ASSERT_LE(std::abs(t.dy), 2);
    ASSERT_LE(std::abs(t.dx), 2);
    dys.insert(t.dy);
    dxs.insert(t.dx);
    flips += t.flip;
    if (t.erase_h == 0) continue;
    ++erases;
    ASSERT_LE(t.erase_y + t.erase_h, h);
    ASSERT_LE(t.erase_x + t.erase_w, w);
    const double area = static_cast<double>(t.erase_h) * t.erase_w / (h * w);
    // floor(sqrt) of each side: the area falls a little under the drawn fraction, never over.
    ASSERT_LT(area, 0.33 * 1.01) << t.erase_h << "x" << t.erase_w;
    ASSERT_GT(area, 0.005) << t.erase_h << "x" << t.erase_w;
  }
  EXPECT_EQ(dys.size(), 5u);
  EXPECT_EQ(dxs.size(), 5u);
  EXPECT_NEAR(flips / static_cast<double>(n), 0.5, 0.02);
  EXPECT_NEAR(erases / static_cast<double>(n), 0.25, 0.02);
}

TEST(DrawTransform, EraseFitsTinyImagesOrErasesNothing) {
  const AugmentParams p = Parsed("erase:1");
  for (uint64_t i = 0; i < 200; ++i) {
    const SampleTransform t = DrawTransform(p, 1, 0, i, 1, 1);
    EXPECT_EQ(t.erase_h, 0u);  // a 1x1 image: 0.02..0.33 of a pixel rounds to nothing
    const SampleTransform u = DrawTransform(p, 1, 0, i, 8, 8);
    EXPECT_LE(u.erase_y + u.erase_h, 8u);
    EXPECT_LE(u.erase_x + u.erase_w, 8u);
  }
}

TEST(ISqrt, IsTheFloorOfTheSquareRoot) {
  for (uint64_t v : {0ull, 1ull, 2ull, 3ull, 4ull, 15ull, 16ull, 17ull, 1000000ull, 999999ull,
                     (1ull << 40) - 1, 1ull << 40}) {
    const uint64_t r = augment::ISqrt(v);
    EXPECT_LE(r * r, v) << v;
    EXPECT_GT((r + 1) * (r + 1), v) << v;
  }
}

}  // namespace
}  // namespace rf
