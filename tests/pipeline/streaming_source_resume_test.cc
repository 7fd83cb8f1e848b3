// StreamingSource over a resumed epoch (options.order.resumed): it delivers the resumed epoch's
// WindowOrder exactly, and the next epoch's, one plan running on from one into the other; a rank
// reads only the old windows its share comes from; epoch_samples() is the started epoch's; a
// batch over many small pieces of large old windows finds staging for all of them.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/sources/streaming_source.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

// 3001 positional samples in chunks of 63 (4096 bytes): 47 full chunks and one of 40.
constexpr uint64_t kSamples = 3001;

StreamingOptions Options(uint32_t batch, uint64_t epochs, uint32_t rank, uint32_t world) {
  StreamingOptions o;
  o.order.batch_size = batch;
  o.order.shuffle_window = 4;
  o.order.seed = 7;
  o.order.rank = rank;
  o.order.world_size = world;
  o.epochs = epochs;
  o.ring_slots = 4;
  o.pin = PinMode::kOff;
  o.feeder.reader.mode = IoMode::kBuffered;  // temp directories may be on tmpfs (no O_DIRECT)
  // A wait that cannot end (a batch needing more staging than there is) fails after 10 s.
  auto polls = std::make_shared<int>(0);
  o.poll = [polls] {
    return ++*polls > 100 ? Status::Aborted("waited 10 s for chunks") : Status::Ok();
  };
  return o;
}

std::unique_ptr<StreamingSource> Source(const Dataset& d, const StreamingOptions& o) {
  auto s = StreamingSource::Create(
      d, o, [](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
        RF_ASSIGN_OR_RETURN(auto staging, HostChunkStaging::Create(l));
        return std::unique_ptr<ChunkStaging>(std::move(staging));
      });
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// Drains the current epoch, checking each sample's bytes against the source's own record.
std::vector<uint64_t> DrainEpoch(StreamingSource& s) {
  std::vector<uint64_t> seen;
  for (;;) {
    Result<Batch> b = s.Next();
    if (!b.ok()) {
      ADD_FAILURE() << b.status().ToString();
      break;
    }
    if (b->n == 0) break;
    for (uint32_t i = 0; i < b->n; ++i) {
      const uint64_t index = testing::SampleIndex(static_cast<const uint8_t*>(b->samples) + i * 64);
      EXPECT_EQ(s.batch_samples()[i], index);
      seen.push_back(index);
    }
  }
  return seen;
}

uint64_t Bytes(const Dataset& d, const std::vector<uint64_t>& chunks) {
  uint64_t n = 0;
  for (uint64_t c : chunks) n += d.chunk(c).entry.stored_bytes;
  return n;
}

// The windows of stretch 0's ranks (world n0) that hold each sample at or after p0: an upper
// bound on what a rank resuming after them needs to read.
std::map<uint64_t, std::set<std::pair<uint32_t, uint64_t>>> OldWindows(
    const Dataset& d, const OrderSettings& base, uint64_t epoch, uint32_t n0, uint64_t p0,
    std::map<std::pair<uint32_t, uint64_t>, std::vector<uint64_t>>* chunks) {
  std::map<uint64_t, std::set<std::pair<uint32_t, uint64_t>>> out;
  for (uint32_t r = 0; r < n0; ++r) {
    OrderSettings o = base;
    o.rank = r;
    o.world_size = n0;
    o.resumed.stretches.clear();
    const WindowOrder order(d.ChunkSampleCounts(), o);
    WindowCursor c(order);
    c.Start(epoch, 0);
    WindowCursor::Sample s;
    for (uint64_t pos = 0; c.Step(&s); ++pos) {
      const auto key = std::pair{r, c.window()};
      const uint64_t start = c.layout().WindowStart(c.window());
      (*chunks)[key] = std::vector<uint64_t>(
          c.epoch_chunks().begin() + start,
          c.epoch_chunks().begin() + start + c.layout().WindowChunks(c.window()));
      if (pos >= p0) out[order.GlobalSample(s.chunk, s.sample)].insert(key);
    }
  }
  return out;
}

TEST(StreamingSource, ResumedEpochAndTheNextDeliverTheirOrderReadingOnlyTheOldWindowsNeeded) {
  TempDir t;
  auto d = Dataset::Open(
      testing::WritePositionalDataset(t.File("f.rfd"), kSamples, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  const uint64_t epoch = 2;
  // Stretch 0: 3 ranks of 1001 samples each (15 chunks dealt, 2 full and the short one shared:
  // 166 samples, 56 each, so 2 ranks pad, in their last window, which starts at 756). Stopped at
  // the start, inside a window, at the last window's start.
  for (uint64_t p0 : {0u, 300u, 756u}) {
    for (uint32_t world : {2u, 5u}) {
      std::vector<uint64_t> all;
      for (uint32_t rank = 0; rank < world; ++rank) {
        const std::string name = "p0 " + std::to_string(p0) + ", rank " + std::to_string(rank) +
                                 " of " + std::to_string(world);
        StreamingOptions o = Options(50, epoch + 1, rank, world);
        o.order.resumed.epoch = epoch;
        o.order.resumed.stretches = {{3, p0}};
        // The plan ends with the resumed epoch: what it reads is that epoch's.
        auto s = Source(*d, o);
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->StartEpoch(epoch, 0).ok()) << name;
        const uint64_t left = 3 * (1001 - p0) - 2;  // the padding left out
        EXPECT_EQ(s->epoch_samples(), (left + world - 1) / world) << name;
        const std::vector<uint64_t> seen = DrainEpoch(*s);
        EXPECT_EQ(seen, s->order().EpochSamples(epoch)) << name;
        all.insert(all.end(), seen.begin(), seen.end());
        // Each chunk of the plan once, and at most the old windows holding the rank's samples.
        EXPECT_EQ(s->bytes_read(), Bytes(*d, s->order().EpochChunks(epoch))) << name;
        std::map<std::pair<uint32_t, uint64_t>, std::vector<uint64_t>> window_chunks;
        const auto holders = OldWindows(*d, o.order, epoch, 3, p0, &window_chunks);
        std::set<std::pair<uint32_t, uint64_t>> touched;
        for (uint64_t sample : seen)
          touched.insert(holders.at(sample).begin(), holders.at(sample).end());
        uint64_t bound = 0;
        for (const auto& w : touched) bound += Bytes(*d, window_chunks.at(w));
        EXPECT_LE(s->bytes_read(), bound) << name;
        if (p0 > 0) {
          EXPECT_LT(s->bytes_read(), d->total_bytes()) << name;
        }
      }
      // Over the ranks: every entry the first stretch left, once, and padding to equal counts.
      const std::set<uint64_t> distinct(all.begin(), all.end());
      EXPECT_EQ(distinct.size(), 3 * (1001 - p0) - 2);
      EXPECT_LT(all.size() - distinct.size(), world);
    }
  }
}

TEST(StreamingSource, APlanRunsOnFromTheResumedEpochIntoAnOrdinaryOne) {
  TempDir t;
  auto d = Dataset::Open(
      testing::WritePositionalDataset(t.File("f.rfd"), kSamples, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  for (uint32_t rank = 0; rank < 2; ++rank) {
    StreamingOptions o = Options(64, 4, rank, 2);
    o.order.resumed.epoch = 2;
    o.order.resumed.stretches = {{3, 450}, {4, 100}};
    auto s = Source(*d, o);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->epoch_samples(), 1501u) << "epoch 0's, before any StartEpoch";
    ASSERT_TRUE(s->StartEpoch(2, 0).ok());
    const uint64_t resumed = s->order().EpochSampleCount(2);
    EXPECT_EQ(s->epoch_samples(), resumed);
    EXPECT_LT(resumed, 1501u);
    EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(2)) << "rank " << rank;
    ASSERT_TRUE(s->StartEpoch(3, 0).ok());
    EXPECT_EQ(s->epoch_samples(), 1501u);
    EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(3)) << "rank " << rank;
    // One plan: each chunk of the two epochs read once (a restart would read some twice).
    EXPECT_EQ(s->bytes_read(),
              Bytes(*d, s->order().EpochChunks(2)) + Bytes(*d, s->order().EpochChunks(3)));
    // The resumed epoch's position is checked against its own count.
    Status past = s->StartEpoch(2, resumed + 1);
    EXPECT_TRUE(past.IsInvalidArgument());
    EXPECT_EQ(past.message(), "epoch position " + std::to_string(resumed + 1) +
                                  " is past the epoch's " + std::to_string(resumed) + " samples");
    // Resumed again mid-way at the same world size (the same stretches): the same order's rest.
    ASSERT_TRUE(s->StartEpoch(2, 100).ok());
    const std::vector<uint64_t> order = s->order().EpochSamples(2);
    EXPECT_EQ(DrainEpoch(*s), std::vector<uint64_t>(order.begin() + 100, order.end()));
  }
}

TEST(StreamingSource, ABatchOverManySmallOldWindowsGetsStagingForAll) {
  TempDir t;
  auto d = Dataset::Open(
      testing::WritePositionalDataset(t.File("f.rfd"), kSamples, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  // 8 old ranks: 5 chunks dealt to each, and 8 shared (481 samples, 61 each), so each one's last
  // window holds 9 chunks (1 dealt) for 124 samples. Stopped where the last windows start, they
  // leave 8 such windows (less 7 padding entries) to the one new rank: a batch of 512 takes
  // samples from 6 of them, 54 chunks held at once, more than three of the largest windows and a
  // batch's spill (27 + 10): with that many slots the batch would wait forever for its last one.
  const uint32_t batch = 512;
  StreamingOptions o = Options(batch, 1, 0, 1);
  o.order.resumed.stretches = {{8, 4 * 63}};
  auto s = Source(*d, o);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->order().Layout(0).window_count(), 8u);
  EXPECT_EQ(s->order().max_window_chunks(), 9u);
  EXPECT_GT(s->order().ResumedBatchSpanChunks(batch), 3u * 9 + 10);
  EXPECT_GE(StreamingSource::StagingSlots(s->order(), batch),
            s->order().ResumedBatchSpanChunks(batch));
  ASSERT_TRUE(s->StartEpoch(0, 0).ok());
  const std::vector<uint64_t> seen = DrainEpoch(*s);
  EXPECT_EQ(seen.size(), 8u * 124 - 7);
  EXPECT_EQ(seen, s->order().EpochSamples(0));
}

TEST(StreamingSource, AResumedEpochWithNothingLeftEndsAtOnceAndTheNextFollows) {
  TempDir t;
  auto d = Dataset::Open(
      testing::WritePositionalDataset(t.File("f.rfd"), kSamples, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  StreamingOptions o = Options(64, 0, 1, 2);
  o.order.resumed.epoch = 5;
  o.order.resumed.stretches = {{3, 1001}};
  auto s = Source(*d, o);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->StartEpoch(5, 0).ok());
  EXPECT_EQ(s->epoch_samples(), 0u);
  EXPECT_TRUE(DrainEpoch(*s).empty());
  ASSERT_TRUE(s->StartEpoch(6, 0).ok());
  EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(6));
}

}  // namespace
}  // namespace rf
