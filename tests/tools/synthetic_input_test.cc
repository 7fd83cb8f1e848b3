#include "tools/convert/synthetic_input.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "io/dataset.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::ReadAll;
using testing::TempDir;

Status Generate(const TempDir& t, const std::string& name, const std::string& threads,
                const std::string& seed = "42", const std::string& order = "random") {
  return Convert({"synthetic", "--samples", "3001",   "--shape",      "3,8,8",
                  "--classes", "10",        "--seed", seed,           "--threads",
                  threads,     "--order",   order,    "--chunk-size", "16KiB",
                  "--shards",  "2",         "-o",     t.File(name),   "--quiet"});
}

TEST(Synthetic, SameSeedIsByteIdenticalWhateverTheThreadCount) {
  TempDir t;
  ASSERT_TRUE(Generate(t, "one.rfd", "1").ok());
  ASSERT_TRUE(Generate(t, "four.rfd", "4").ok());
  ASSERT_TRUE(Generate(t, "other.rfd", "4", "43").ok());
  for (const char* shard : {"-00000-of-00002.rfd", "-00001-of-00002.rfd"}) {
    const auto one = ReadAll(t.File(std::string("one") + shard));
    EXPECT_GT(one.size(), 16384u);
    EXPECT_EQ(one, ReadAll(t.File(std::string("four") + shard)));
    EXPECT_NE(one, ReadAll(t.File(std::string("other") + shard)));
  }
  auto d = Dataset::Open(t.File("one.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->sample_count(), 3001u);
  EXPECT_EQ(d->header().num_classes, 10u);
}

TEST(Synthetic, RandomLabelsAreBalancedWithinTenPercent) {
  convert::SyntheticOptions o;
  o.samples = 20000;
  o.seed = 5;
  std::vector<int> count(10);
  for (uint64_t i = 0; i < o.samples; ++i) ++count[convert::SyntheticLabel(o, i)];
  for (int c = 0; c < 10; ++c) EXPECT_NEAR(count[c], 2000, 200) << "class " << c;
}

TEST(Synthetic, SortedOrderRunsThroughTheClassesInEqualRuns) {
  convert::SyntheticOptions o;
  o.samples = 1000;
  o.sorted = true;
  for (uint64_t i = 0; i < o.samples; ++i) EXPECT_EQ(convert::SyntheticLabel(o, i), i / 100);
}

// Samples resemble their own class's template more than any other: nearest-template
// classification of generated samples is near perfect, so the labels are learnable.
TEST(Synthetic, SamplesAreNearestToTheirOwnClassTemplate) {
  convert::SyntheticOptions o;
  o.samples = 500;
  o.channels = 3;
  o.height = o.width = 16;
  o.threads = 2;
  const uint64_t elems = 3 * 16 * 16;
  std::vector<std::vector<uint8_t>> templates(o.classes, std::vector<uint8_t>(elems));
  for (uint32_t c = 0; c < o.classes; ++c) convert::SyntheticTemplate(o, c, templates[c].data());
  for (uint32_t a = 0; a < o.classes; ++a) {
    for (uint32_t b = a + 1; b < o.classes; ++b) EXPECT_NE(templates[a], templates[b]);
  }
  auto source = convert::MakeSyntheticSource(o);
  ASSERT_TRUE(source.ok());
  uint64_t right = 0, seen = 0;
  for (;;) {
    auto b = (*source)->Next(64);
    ASSERT_TRUE(b.ok());
    if (b->count == 0) break;
    for (uint64_t i = 0; i < b->count; ++i, ++seen) {
      const uint8_t* s = b->samples + i * elems;
      // A sample is 96/256 template plus 160/256 noise of mean 127.5.
      int64_t best = -1, best_d = 0;
      for (uint32_t c = 0; c < o.classes; ++c) {
        int64_t dist = 0;
        for (uint64_t k = 0; k < elems; ++k) {
          dist += std::llabs(256 * s[k] - (96 * templates[c][k] + 160 * 127));
        }
        if (best < 0 || dist < best_d) best = c, best_d = dist;
      }
      right += best == b->labels[i];
    }
  }
  EXPECT_EQ(seen, o.samples);
  EXPECT_GT(right, o.samples * 95 / 100);
}

}  // namespace
}  // namespace rf
