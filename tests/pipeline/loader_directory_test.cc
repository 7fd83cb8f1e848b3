// The loader over a directory of datasets (io/dataset.h: the parts concatenated in name order,
// each part's short last chunk in the middle), exactly as over one file: each epoch is the order
// WindowOrder computes from the directory's chunk sample counts, a start at any position (across
// a part boundary) continues the uninterrupted order, each rank reads its own chunks and the
// ranks cover every sample, and a damaged chunk is named by its part's file, chunk and offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "pipeline/loader.h"
#include "pipeline/order/window_order.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::HostOptions;
using testing::TempDir;

constexpr uint64_t kSamples = 100 + 250 + 37 + 200;
constexpr size_t kElems = 64;  // 1x8x8 samples, 63 a 4 KiB chunk

// Four parts holding samples 0-99, 100-349 (2 shards), 350-386 and 387-586: chunks of 63, 37,
// 63 x 3, 61, 37, 63 x 3, 11.
void WriteParts(const TempDir& t) {
  uint64_t first = 0;
  for (const auto& [name, n, shards] :
       {std::tuple{"part-00000.rfd", 100, 1}, std::tuple{"part-00001.rfd", 250, 2},
        std::tuple{"part-00002.rfd", 37, 1}, std::tuple{"part-00003.rfd", 200, 1}}) {
    testing::WritePositionalDataset(
        t.File(name), n,
        {.shards = static_cast<uint32_t>(shards), .chunk_bytes = 4096, .first_sample = first});
    first += n;
  }
}

std::vector<uint32_t> ChunkCounts(const std::string& path) {
  Result<Dataset> d = Dataset::Open(path);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? d->ChunkSampleCounts() : std::vector<uint32_t>{};
}

TEST(LoaderDirectory, EachEpochIsTheOrderOfItsChunkSampleCounts) {
  TempDir t;
  WriteParts(t);
  const std::vector<uint32_t> counts = ChunkCounts(t.path());
  ASSERT_EQ(counts, (std::vector<uint32_t>{63, 37, 63, 63, 63, 61, 37, 63, 63, 63, 11}));
  for (ShuffleMode shuffle : {ShuffleMode::kWindow, ShuffleMode::kNone}) {
    LoaderOptions o = HostOptions(t.path(), 24);
    o.pipeline.order.shuffle = shuffle;
    auto l = testing::OpenLoader(o);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->dataset().part_count(), 4u);
    const WindowOrder order(counts, o.pipeline.order);
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      ASSERT_TRUE(l->StartEpoch(epoch, 0).ok());
      std::vector<uint64_t> seen = testing::DrainDecodedEpoch(*l, kElems);
      EXPECT_EQ(seen, order.EpochSamples(epoch)) << "epoch " << epoch;
      std::sort(seen.begin(), seen.end());
      ASSERT_EQ(seen.size(), kSamples);
      for (uint64_t i = 0; i < kSamples; ++i) ASSERT_EQ(seen[i], i);
    }
  }
}

TEST(LoaderDirectory, AStartAcrossAPartBoundaryContinuesTheUninterruptedOrder) {
  TempDir t;
  WriteParts(t);
  for (ShuffleMode shuffle : {ShuffleMode::kNone, ShuffleMode::kWindow}) {
    LoaderOptions o = HostOptions(t.path(), 10);
    o.pipeline.order.shuffle = shuffle;
    auto whole = testing::OpenLoader(o);
    ASSERT_NE(whole, nullptr);
    ASSERT_TRUE(whole->StartEpoch(1, 0).ok());
    const std::vector<uint64_t> order = testing::DrainDecodedEpoch(*whole, kElems);
    ASSERT_EQ(order.size(), kSamples);
    // In stored order, part 1 starts at 100, part 2 at 350 and part 3 at 387.
    for (uint64_t position : {uint64_t{90}, uint64_t{100}, uint64_t{103}, uint64_t{350},
                              uint64_t{380}, uint64_t{390}}) {
      SCOPED_TRACE(position);
      auto resumed = testing::OpenLoader(o);
      ASSERT_NE(resumed, nullptr);
      ASSERT_TRUE(resumed->StartEpoch(1, position).ok());
      const std::vector<uint64_t> rest = testing::DrainDecodedEpoch(*resumed, kElems);
      ASSERT_EQ(rest.size(), kSamples - position);
      EXPECT_TRUE(std::equal(rest.begin(), rest.end(), order.begin() + position));
    }
  }
}

// Each rank trains on its share of WindowOrder's partition and reads only the chunks that share
// comes from (its dealt chunks and the shared ones: every part's short last chunk among them).
TEST(LoaderDirectory, EachRankReadsOnlyItsChunksAndTheRanksCoverEverySample) {
  TempDir t;
  WriteParts(t);
  auto d = Dataset::Open(t.path());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  constexpr uint32_t kWorld = 3;
  std::vector<uint64_t> all;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    SCOPED_TRACE(rank);
    LoaderOptions o = HostOptions(t.path(), 16);
    o.pipeline.order.rank = rank;
    o.pipeline.order.world_size = kWorld;
    o.epochs = 1;  // the read plan: one epoch's chunks
    auto l = testing::OpenLoader(o);
    ASSERT_NE(l, nullptr);
    const WindowOrder order(d->ChunkSampleCounts(), o.pipeline.order);
    ASSERT_TRUE(l->StartEpoch(0, 0).ok());
    const std::vector<uint64_t> seen = testing::DrainDecodedEpoch(*l, kElems);
    EXPECT_EQ(seen, order.EpochSamples(0));
    all.insert(all.end(), seen.begin(), seen.end());
    uint64_t bytes = 0;
    for (uint64_t c : order.EpochChunks(0)) bytes += d->chunk(c).entry.stored_bytes;
    EXPECT_EQ(l->stats().bytes_read, bytes);
    EXPECT_LT(bytes, d->total_bytes() * 2 / 3);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), kSamples);  // every sample, the padding repeats aside
}

TEST(LoaderDirectory, ACorruptChunkInAPartFailsNamingItsFileChunkAndOffset) {
  TempDir t;
  WriteParts(t);
  uint64_t offset = 0;
  {
    auto d = Dataset::Open(t.path());
    ASSERT_TRUE(d.ok());
    const ChunkLocation& c = d->chunk(d->part(3).first_chunk + 2);
    ASSERT_EQ(d->shard_path(c.shard), t.File("part-00003.rfd"));
    offset = c.entry.offset;
    testing::FlipBit(t.File("part-00003.rfd"), offset + 10, 1);
  }
  LoaderOptions o = HostOptions(t.path(), 32);
  o.pipeline.order.shuffle = ShuffleMode::kNone;
  auto l = testing::OpenLoader(o);
  ASSERT_NE(l, nullptr);
  const Status error = testing::FirstErrorOfEpoch(*l);
  ASSERT_FALSE(error.ok()) << "the corrupt chunk was delivered";
  EXPECT_EQ(error.ToString().rfind(
                t.File("part-00003.rfd") + ": chunk 2 at byte " + std::to_string(offset) + ": ", 0),
            0u)
      << error.ToString();
}

}  // namespace
}  // namespace rf
