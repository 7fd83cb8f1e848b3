// The CPU loader's augmentation (OutputOptions::augment): every decoded batch equals a reference
// built here sample by sample from each sample's stored bytes and its transform's draws (shift,
// flip, erased rectangle), in every output kind; a restart mid-epoch delivers the same augmented
// batches as the uninterrupted loader; a bad spec is a Usage error naming --augment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/augment.h"
#include "core/augment_spec.h"
#include "pipeline/loader.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::PositionalSample;
using testing::TempDir;

constexpr uint32_t kChannels = 3, kHeight = 6, kWidth = 5, kPlane = kHeight * kWidth;
constexpr uint64_t kSamples = 300;

std::string WriteImages(TempDir& dir) {
  testing::PositionalDatasetOptions po;
  po.channels = kChannels;
  po.height = kHeight;
  po.width = kWidth;
  return testing::WritePositionalDataset(dir.File("d.rfd"), kSamples, po);
}

// The shared host options, with `augment`, batches of 16 and the header's normalization on.
LoaderOptions Options(const std::string& path, const std::string& augment) {
  LoaderOptions o = testing::HostOptions(path, 16);
  o.pipeline.order.seed = 23;
  o.output.normalize = true;
  o.output.augment = augment;
  return o;
}

std::unique_ptr<Loader> Open(const LoaderOptions& o) { return testing::OpenLoader(o); }

// A sample's value at output (c, y, x) under its transform t, as a float before any
// normalization, in *v; false where the output is zero filled.
bool ReferencePixel(const uint8_t* stored, const SampleTransform& t, uint32_t c, int y, int x,
                    float* v) {
  const int h = kHeight, w = kWidth;
  if (y >= static_cast<int>(t.erase_y) && y < static_cast<int>(t.erase_y + t.erase_h) &&
      x >= static_cast<int>(t.erase_x) && x < static_cast<int>(t.erase_x + t.erase_w)) {
    return false;
  }
  const int sy = y + t.dy, sx = (t.flip ? w - 1 - x : x) + t.dx;
  if (sy < 0 || sy >= h || sx < 0 || sx >= w) return false;
  *v = static_cast<float>(stored[c * kPlane + sy * w + sx]);
  return true;
}

// Checks every element of every batch of epoch `epoch` from `position` against the reference;
// returns the batches' bytes, back to back.
std::vector<uint8_t> CheckEpoch(Loader& l, uint64_t epoch, uint64_t position,
                                const AugmentParams& p, bool* transformed) {
  std::vector<uint8_t> bytes;
  const LoaderOptions& o = l.options();
  const format::Header& h = l.dataset().header();
  EXPECT_TRUE(l.StartEpoch(epoch, position).ok());
  for (;;) {
    Result<std::shared_ptr<LoadedBatch>> b = l.Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || *b == nullptr) break;
    const LoadedBatch& batch = **b;
    EXPECT_EQ(batch.epoch(), epoch);
    const size_t sample_bytes = size_t{kChannels} * kPlane * DTypeSize(o.output.dtype);
    const auto* out = static_cast<const uint8_t*>(batch.samples());
    bytes.insert(bytes.end(), out, out + batch.size() * sample_bytes);
    for (uint32_t j = 0; j < batch.size(); ++j) {
      uint8_t stored[kChannels * kPlane];
      PositionalSample(batch.indices()[j], stored, sizeof stored);
      const SampleTransform t =
          DrawTransform(p, o.pipeline.order.seed, epoch, batch.indices()[j], kHeight, kWidth);
      *transformed = *transformed || t.dy != 0 || t.dx != 0 || t.flip || t.erase_h != 0;
      for (uint32_t c = 0; c < kChannels; ++c) {
        for (int y = 0; y < static_cast<int>(kHeight); ++y) {
          for (int x = 0; x < static_cast<int>(kWidth); ++x) {
            float v = 0.f;
            const bool read = ReferencePixel(stored, t, c, y, x, &v);
            const size_t pixel = static_cast<size_t>(y) * kWidth + x;
            const size_t at = o.output.layout == SampleLayout::kNCHW
                                  ? (size_t{j} * kChannels + c) * kPlane + pixel
                                  : (size_t{j} * kPlane + pixel) * kChannels + c;
            if (o.output.dtype == DType::kUInt8) {
              EXPECT_EQ(out[at], read ? static_cast<uint8_t>(v) : 0)
                  << "sample " << batch.indices()[j] << " c " << c << " y " << y << " x " << x;
              continue;
            }
            if (read && o.output.normalize) {
              v = (v - h.mean[c]) / (h.stddev[c] == 0.f ? 1.f : h.stddev[c]);
            }
            if (o.output.dtype == DType::kFloat32) {
              float got;
              std::memcpy(&got, out + at * 4, 4);
              EXPECT_EQ(got, v) << "sample " << batch.indices()[j] << " c " << c << " y " << y
                                << " x " << x;
            } else {
              uint16_t got;
              std::memcpy(&got, out + at * 2, 2);
              EXPECT_EQ(got, FloatToBFloat16(v))
                  << "sample " << batch.indices()[j] << " c " << c << " y " << y << " x " << x;
            }
          }
        }
      }
      if (::testing::Test::HasFailure()) return bytes;  // the first wrong sample is enough
    }
  }
  return bytes;
}

TEST(LoaderAugment, EveryBatchEqualsTheReferenceBuiltSampleBySample) {
  TempDir dir;
  const std::string path = WriteImages(dir);
  struct Case {
    DType dtype;
    SampleLayout layout;
    bool normalize;
  };
  for (const Case& k : {Case{DType::kFloat32, SampleLayout::kNCHW, false},
                        Case{DType::kFloat32, SampleLayout::kNCHW, true},
                        Case{DType::kBFloat16, SampleLayout::kNHWC, true},
                        Case{DType::kUInt8, SampleLayout::kNCHW, false},
                        Case{DType::kUInt8, SampleLayout::kNHWC, false}}) {
    for (const char* spec : {"crop:2", "flip", "erase:0.7", "crop:1,flip,erase:0.5"}) {
      SCOPED_TRACE(std::string(spec) + " " + std::string(DTypeName(k.dtype)) +
                   (k.layout == SampleLayout::kNHWC ? " NHWC" : " NCHW") +
                   (k.normalize ? " normalized" : ""));
      LoaderOptions o = Options(path, spec);
      o.output.dtype = k.dtype;
      o.output.layout = k.layout;
      o.output.normalize = k.normalize;
      auto l = Open(o);
      ASSERT_NE(l, nullptr);
      bool transformed = false;
      Result<AugmentParams> p = ParseAugmentSpec(spec);
      ASSERT_TRUE(p.ok());
      CheckEpoch(*l, 1, 0, *p, &transformed);
      EXPECT_TRUE(transformed);
    }
  }
}

TEST(LoaderAugment, ARestartMidEpochDeliversTheUninterruptedBatches) {
  TempDir dir;
  const std::string path = WriteImages(dir);
  const LoaderOptions o = Options(path, "crop:2,flip,erase:0.5");
  Result<AugmentParams> parsed = ParseAugmentSpec("crop:2,flip,erase:0.5");
  ASSERT_TRUE(parsed.ok());
  const AugmentParams p = *parsed;
  auto whole = Open(o), resumed = Open(o);
  ASSERT_NE(whole, nullptr);
  ASSERT_NE(resumed, nullptr);
  bool transformed = false;
  const std::vector<uint8_t> all = CheckEpoch(*whole, 2, 0, p, &transformed);
  const uint64_t position = 5 * 16;
  const std::vector<uint8_t> tail = CheckEpoch(*resumed, 2, position, p, &transformed);
  const size_t sample_bytes = size_t{kChannels} * kPlane * sizeof(float);
  ASSERT_EQ(tail.size(), all.size() - position * sample_bytes);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), all.begin() + position * sample_bytes));
  EXPECT_TRUE(transformed);
}

TEST(LoaderAugment, WithoutAugmentTheDecodeIsUnchanged) {
  TempDir dir;
  const std::string path = WriteImages(dir);
  auto plain = Open(Options(path, "")), none = Open(Options(path, "none"));
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(none, nullptr);
  bool transformed = false;
  EXPECT_EQ(CheckEpoch(*plain, 0, 0, AugmentParams{}, &transformed),
            CheckEpoch(*none, 0, 0, AugmentParams{}, &transformed));
  EXPECT_FALSE(transformed);
}

TEST(LoaderAugment, ABadSpecIsAUsageErrorNamingTheOption) {
  TempDir dir;
  const std::string path = WriteImages(dir);
  Result<std::unique_ptr<Loader>> l = Loader::Open(Options(path, "crop:4,rotate"));
  ASSERT_FALSE(l.ok());
  EXPECT_TRUE(l.status().IsUsage());
  EXPECT_NE(l.status().message().find("--augment: 'rotate': unknown transform"), std::string::npos)
      << l.status().ToString();
}

}  // namespace
}  // namespace rf
