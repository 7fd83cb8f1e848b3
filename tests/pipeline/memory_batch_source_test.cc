// MemoryBatchSource and EpochOrder. Every sample's bytes and label encode its index, so each
// delivered sample can be traced back to where it was stored.
#include "pipeline/memory_batch_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "pipeline/epoch_order.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

constexpr uint32_t kSamples = 1000;

// 1000 positional samples of 2x4x4 uint8 with uint16 labels, 1000 classes (so the label is the
// index too). Small chunks so the dataset has many.
std::string MakeDataset(const TempDir& t) {
  return testing::WritePositionalDataset(
      t.File("m.rfd"), kSamples,
      {.channels = 2, .height = 4, .width = 4, .classes = kSamples, .label_dtype = DType::kUInt16});
}

// The sample indices of one epoch from `position`, checking each sample's bytes and label.
std::vector<uint64_t> Drain(BatchSource& src, uint64_t epoch, uint64_t position,
                            std::vector<uint32_t>* sizes = nullptr) {
  std::vector<uint64_t> seen;
  EXPECT_TRUE(src.StartEpoch(epoch, position).ok());
  for (;;) {
    auto b = src.Next();
    EXPECT_TRUE(b.ok());
    if (b->n == 0) break;
    if (sizes) sizes->push_back(b->n);
    const auto* s = static_cast<const uint8_t*>(b->samples);
    const auto* l = static_cast<const uint16_t*>(b->labels);
    for (uint32_t i = 0; i < b->n; ++i) {
      const uint64_t idx = testing::SampleIndex(s + 32 * i);
      EXPECT_EQ(l[i], idx);
      EXPECT_EQ(s[32 * i + 31], static_cast<uint8_t>(idx * 31 + 31));
      seen.push_back(idx);
    }
  }
  return seen;
}

std::unique_ptr<MemoryBatchSource> Load(const std::string& path, BatchSourceOptions o) {
  auto d = Dataset::Open(path);
  EXPECT_TRUE(d.ok());
  EXPECT_GT(d->chunk_count(), 3u);
  auto s = MemoryBatchSource::Load(*d, o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(*s);
}

TEST(EpochOrder, IsAPermutationThatDependsOnSeedAndEpochOnly) {
  const auto a = EpochOrder(5000, 7, 0);
  std::vector<uint64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(EpochOrder(5000, 7, 0), a);
  EXPECT_NE(EpochOrder(5000, 7, 1), a);
  EXPECT_NE(EpochOrder(5000, 8, 0), a);
  EXPECT_NE(EpochOrder(5000, 7ull << 32, 0), EpochOrder(5000, 0, 0));  // both seed halves count
}

TEST(MemoryBatchSource, EveryEpochDeliversEverySampleOnceAndKeepsThePartialBatch) {
  TempDir t;
  BatchSourceOptions o;
  o.batch_size = 64;
  o.seed = 5;
  auto src = Load(MakeDataset(t), o);
  EXPECT_EQ(src->epoch_samples(), kSamples);
  std::vector<uint64_t> first;
  for (uint64_t e = 0; e < 3; ++e) {
    std::vector<uint32_t> sizes;
    auto seen = Drain(*src, e, 0, &sizes);
    ASSERT_EQ(seen.size(), kSamples);
    EXPECT_EQ(seen, EpochOrder(kSamples, 5, e));  // the documented order, nothing else
    ASSERT_EQ(sizes.size(), 16u);                 // 15 x 64 + 40
    EXPECT_EQ(sizes.back(), 40u);
    std::sort(seen.begin(), seen.end());
    for (uint64_t i = 0; i < kSamples; ++i) ASSERT_EQ(seen[i], i);
  }
  EXPECT_NE(Drain(*src, 0, 0), Drain(*src, 1, 0));
}

TEST(MemoryBatchSource, DropLastSkipsThePartialBatch) {
  TempDir t;
  BatchSourceOptions o;
  o.batch_size = 64;
  o.drop_last = true;
  auto src = Load(MakeDataset(t), o);
  EXPECT_EQ(src->epoch_samples(), 960u);
  std::vector<uint32_t> sizes;
  auto seen = Drain(*src, 2, 0, &sizes);
  EXPECT_EQ(seen.size(), 960u);
  EXPECT_EQ(sizes, std::vector<uint32_t>(15, 64));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());  // no sample twice
}

TEST(MemoryBatchSource, SameSeedGivesTheSameOrderInAnotherSource) {
  TempDir t;
  const std::string path = MakeDataset(t);
  BatchSourceOptions o;
  o.batch_size = 100;
  o.seed = 11;
  auto a = Load(path, o);
  auto b = Load(path, o);
  EXPECT_EQ(Drain(*a, 4, 0), Drain(*b, 4, 0));
  o.seed = 12;
  auto c = Load(path, o);
  EXPECT_NE(Drain(*a, 4, 0), Drain(*c, 4, 0));
}

TEST(MemoryBatchSource, ResumingAtAPositionContinuesTheSameOrder) {
  TempDir t;
  const std::string path = MakeDataset(t);
  BatchSourceOptions o;
  o.batch_size = 64;
  o.seed = 3;
  auto whole = Drain(*Load(path, o), 1, 0);
  auto resumed = Drain(*Load(path, o), 1, 320);  // a fresh source, as after a restart
  ASSERT_EQ(resumed.size(), kSamples - 320);
  EXPECT_TRUE(std::equal(resumed.begin(), resumed.end(), whole.begin() + 320));
}

TEST(MemoryBatchSource, UnshuffledDeliversStoredOrder) {
  TempDir t;
  BatchSourceOptions o;
  o.batch_size = 128;
  o.shuffle = false;
  auto seen = Drain(*Load(MakeDataset(t), o), 3, 0);
  ASSERT_EQ(seen.size(), kSamples);
  for (uint64_t i = 0; i < kSamples; ++i) ASSERT_EQ(seen[i], i);
}

TEST(MemoryBatchSource, PositionPastTheEpochIsRefused) {
  TempDir t;
  BatchSourceOptions o;
  o.batch_size = 64;
  o.drop_last = true;
  auto src = Load(MakeDataset(t), o);
  Status st = src->StartEpoch(0, 961);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "epoch position 961 is past the epoch's 960 samples");
}

TEST(MemoryBatchSource, DamagedChunkFailsLoadNamingFileAndChunk) {
  TempDir t;
  const std::string path = MakeDataset(t);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  testing::FlipBit(path, d->chunk(2).entry.offset + 5);
  auto d2 = Dataset::Open(path);
  ASSERT_TRUE(d2.ok());
  auto s = MemoryBatchSource::Load(*d2, BatchSourceOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().ToString().rfind(
                path + ": chunk 2 at byte " + std::to_string(d->chunk(2).entry.offset), 0),
            0u)
      << s.status().ToString();
}

}  // namespace
}  // namespace rf
