// PlanReduceBuckets (kernels/reduce_buckets.h): the buckets cover the flat gradient exactly once,
// in backward order, never more than asked, and the merge rule picks the buckets it states.
#include "kernels/reduce_buckets.h"

#include <gtest/gtest.h>

#include <vector>

namespace rf {
namespace {

// The flat layout the CUDA backend uses: each tensor on a 64-float boundary.
std::vector<size_t> Offsets(const ModelConfig& c, size_t* padded) {
  std::vector<size_t> offsets;
  size_t at = 0;
  for (const ParamShape& s : ParameterShapes(c)) {
    offsets.push_back(at);
    at += (s.count() + 63) / 64 * 64;
  }
  *padded = at;
  return offsets;
}

std::vector<std::pair<size_t, size_t>> Spans(const std::vector<ReduceBucket>& buckets) {
  std::vector<std::pair<size_t, size_t>> s;
  for (const ReduceBucket& b : buckets) s.emplace_back(b.first_unit, b.last_unit);
  return s;
}

TEST(PlanReduceBuckets, CoverTheGradientOnceInBackwardOrderWithinTheCount) {
  for (bool bn : {false, true}) {
    for (const std::vector<uint32_t>& conv :
         std::vector<std::vector<uint32_t>>{{8}, {32, 64, 128}, {16, 16, 32, 64}}) {
      ModelConfig c;
      c.conv = conv;
      c.batch_norm = bn;
      ASSERT_TRUE(c.Validate().ok());
      size_t padded = 0;
      const std::vector<size_t> offsets = Offsets(c, &padded);
      const size_t units = ReduceUnitCount(c);
      ASSERT_EQ(units, conv.size() + 2);
      for (uint32_t max = 0; max <= units + 2; ++max) {
        SCOPED_TRACE("bn " + std::to_string(bn) + ", blocks " + std::to_string(conv.size()) +
                     ", max " + std::to_string(max));
        const std::vector<ReduceBucket> buckets = PlanReduceBuckets(c, offsets, padded, max);
        ASSERT_FALSE(buckets.empty());
        if (max > 0) {
          EXPECT_EQ(buckets.size(), std::min<size_t>(max, units));
        }
        std::vector<int> covered(padded, 0);
        size_t next_unit = 0, bytes = 0;
        for (const ReduceBucket& b : buckets) {
          EXPECT_EQ(b.first_unit, next_unit);
          EXPECT_LE(b.first_unit, b.last_unit);
          next_unit = b.last_unit + 1;
          EXPECT_LE(b.ranges.size(), 2u);
          size_t floats = 0;
          for (const GradientRange& r : b.ranges) {
            ASSERT_LE(r.offset + r.count, padded);
            for (size_t i = r.offset; i < r.offset + r.count; ++i) ++covered[i];
            floats += r.count;
          }
          EXPECT_EQ(b.bytes, floats * 4);
          bytes += b.bytes;
        }
        EXPECT_EQ(next_unit, units);
        EXPECT_EQ(bytes, padded * 4);
        for (size_t i = 0; i < padded; ++i) ASSERT_EQ(covered[i], 1) << "float " << i;
      }
    }
  }
}

TEST(PlanReduceBuckets, OneBucketIsTheWholeBufferAndTheDefaultModelsBucketsAreTheRulesOnes) {
  ModelConfig c;  // conv 32, 64, 128 on 3x32x32, hidden 256, 10 classes
  c.batch_norm = true;
  size_t padded = 0;
  const std::vector<size_t> offsets = Offsets(c, &padded);
  const std::vector<ReduceBucket> one = PlanReduceBuckets(c, offsets, padded, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].ranges, (std::vector<GradientRange>{{0, padded}}));

  // Units in backward order: fc2 (10.5 KB), fc1 (2 MiB), conv2 (289 KiB), conv1 (74 KB), conv0
  // (4 KB). Auto: fc2 (under 64 KiB) joins fc1; conv0, under it too, stays alone as the last.
  using S = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(Spans(PlanReduceBuckets(c, offsets, padded, 0)), (S{{0, 1}, {2, 2}, {3, 3}, {4, 4}}));
  EXPECT_EQ(Spans(PlanReduceBuckets(c, offsets, padded, 5)),
            (S{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}));
  EXPECT_EQ(Spans(PlanReduceBuckets(c, offsets, padded, 4)), (S{{0, 0}, {1, 1}, {2, 2}, {3, 4}}));
  EXPECT_EQ(Spans(PlanReduceBuckets(c, offsets, padded, 2)), (S{{0, 1}, {2, 4}}));
  // Merged by the smallest-first rule: conv1 + conv0, their filters and biases (tensors 0-3, one
  // run) and their scales (one run after fc2).
  const std::vector<ReduceBucket> three = PlanReduceBuckets(c, offsets, padded, 3);
  ASSERT_EQ(Spans(three), (S{{0, 1}, {2, 2}, {3, 4}}));
  ASSERT_EQ(three[2].ranges.size(), 2u);
  EXPECT_EQ(three[2].ranges[0].offset, 0u);
  EXPECT_EQ(three[2].ranges[0].count, offsets[4]);
  EXPECT_EQ(three[2].ranges[1].offset, offsets[10]);
  EXPECT_EQ(three[2].ranges[1].count, offsets[12] - offsets[10]);
}

TEST(PlanReduceBuckets, AutoKeepsTheLastLayerAloneAndJoinsSmallLayersToTheNext) {
  ModelConfig c;
  c.conv = {8, 8, 256};  // conv0 and conv1 under 64 KiB, conv2 over it
  size_t padded = 0;
  const std::vector<size_t> offsets = Offsets(c, &padded);
  using S = std::vector<std::pair<size_t, size_t>>;
  // fc2 joins fc1; conv1 (under 64 KiB, not the last) joins conv0, the last.
  EXPECT_EQ(Spans(PlanReduceBuckets(c, offsets, padded, 0)), (S{{0, 1}, {2, 2}, {3, 4}}));
}

}  // namespace
}  // namespace rf
