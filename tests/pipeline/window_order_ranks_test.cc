// WindowOrder's rank partition (world_size N > 1): over the ranks every epoch visits every sample
// once, plus the documented padding; every rank gets the same number of samples in every epoch;
// a rank reads only its dealt chunks and the shared ones; the order is a function of the seed,
// the epoch and the rank. And world_size 1 is the order from before ranks, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pipeline/order/window_order.h"
#include "tests/pipeline/order_testing.h"

namespace rf {
namespace {

// `chunks` full chunks of `per_chunk` samples, then a short one of `last` samples (none if 0).
std::vector<uint32_t> Layout(uint32_t chunks, uint32_t per_chunk, uint32_t last) {
  std::vector<uint32_t> l(chunks, per_chunk);
  if (last != 0) l.push_back(last);
  return l;
}

uint64_t Total(const std::vector<uint32_t>& layout) {
  return std::accumulate(layout.begin(), layout.end(), uint64_t{0});
}

std::vector<WindowOrder> Ranks(const std::vector<uint32_t>& layout, uint32_t world,
                               OrderSettings o) {
  std::vector<WindowOrder> ranks;
  for (uint32_t r = 0; r < world; ++r) {
    o.rank = r;
    o.world_size = world;
    ranks.emplace_back(layout, o);
  }
  return ranks;
}

// FNV-1a over an order's sample indices.
uint64_t Fingerprint(const std::vector<uint64_t>& order) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t v : order) {
    h ^= v;
    h *= 1099511628211ull;
  }
  return h;
}

// Layouts with chunk counts divisible and not divisible by 2, 3, 4 and 7, with and without a
// short last chunk, and with fewer full chunks than ranks.
const std::vector<std::vector<uint32_t>>& Layouts() {
  static const std::vector<std::vector<uint32_t>> layouts = {
      Layout(84, 13, 0),  // 84 full chunks: divisible by 2, 3, 4 and 7
      Layout(84, 13, 5),  // and a short one
      Layout(29, 17, 0),  // a prime count
      Layout(29, 17, 9), Layout(3, 11, 4), Layout(1, 6, 0), Layout(5, 2, 1),
  };
  return layouts;
}

std::string Name(const std::vector<uint32_t>& layout, uint32_t world, uint64_t epoch) {
  return std::to_string(layout.size()) + " chunks (last " + std::to_string(layout.back()) +
         "), N " + std::to_string(world) + ", epoch " + std::to_string(epoch);
}

TEST(WindowOrder, SingleRankOrderIsUnchangedFromBeforeRanks) {
  // Fingerprints of EpochSamples from the code before ranks existed (f887995).
  std::vector<uint32_t> layout(20, 37);
  layout.push_back(5);
  for (const OrderSettings& o :
       {testing::Order(true, 3, 2, 9), testing::Order(true, 3, 2, 9, 0, 1)}) {
    const WindowOrder order(layout, o);
    EXPECT_EQ(Fingerprint(order.EpochSamples(0)), 0x645d8584601f2ce3u);
    EXPECT_EQ(Fingerprint(order.EpochSamples(3)), 0x8c1953f269201ae5u);
    const std::vector<uint64_t> first = order.EpochSamples(0);
    EXPECT_EQ(std::vector<uint64_t>(first.begin(), first.begin() + 8),
              (std::vector<uint64_t>{273, 289, 608, 621, 290, 295, 281, 264}));
    EXPECT_EQ(order.EpochSampleCount(), 745u);
    EXPECT_EQ(order.epoch_chunk_count(), 21u);
    EXPECT_EQ(order.shared_chunk_count(), 0u);
  }
  const WindowOrder stored(layout, testing::Order(false, 3, 2, 9));
  EXPECT_EQ(Fingerprint(stored.EpochSamples(3)), 0xa761af2f99973c11u);
  OrderSettings defaults;  // W 64, first window 8, seed 1: the training default
  std::vector<uint32_t> big(733, 1364);
  big.push_back(152);
  EXPECT_EQ(Fingerprint(WindowOrder(big, defaults).EpochSamples(0)), 0xd940562932b1a88fu);
}

TEST(WindowOrder, RanksVisitEverySampleOncePerEpochPlusAtMostOnePaddingSampleEach) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    const uint64_t total = Total(layout);
    for (uint32_t world : {2u, 3u, 4u, 7u}) {
      const std::vector<WindowOrder> ranks = Ranks(layout, world, testing::Order(true, 4, 2, 11));
      const uint64_t count = ranks[0].EpochSampleCount();
      // floor(F/N) full chunks each, and ceil(S/N) of the shared stream.
      const uint64_t full = std::count(layout.begin(), layout.end(), layout[0]);
      const uint64_t shared = total - full / world * world * layout[0];
      EXPECT_EQ(count, full / world * layout[0] + (shared + world - 1) / world);
      // The least padding equal counts allow: ceil(T/N) * N - T.
      EXPECT_EQ(count, (total + world - 1) / world);
      for (uint64_t epoch = 0; epoch < 3; ++epoch) {
        const std::string name = Name(layout, world, epoch);
        std::map<uint64_t, int> visits;
        for (const WindowOrder& r : ranks) {
          EXPECT_EQ(r.EpochSampleCount(), count) << name;
          const std::vector<uint64_t> mine = r.EpochSamples(epoch);
          ASSERT_EQ(mine.size(), count) << name << ", rank " << r.rank();
          // No rank sees a sample twice in an epoch: a padding sample is another rank's.
          EXPECT_EQ(std::set<uint64_t>(mine.begin(), mine.end()).size(), mine.size()) << name;
          for (uint64_t s : mine) ++visits[s];
        }
        ASSERT_EQ(visits.size(), total) << name;  // every sample, and nothing else
        EXPECT_EQ(visits.begin()->first, 0u);
        EXPECT_EQ(visits.rbegin()->first, total - 1);
        uint64_t repeats = 0;
        for (const auto& [sample, n] : visits) {
          EXPECT_LE(n, 2) << name << ", sample " << sample;
          repeats += n - 1;
        }
        EXPECT_EQ(repeats, count * world - total) << name;
        EXPECT_LT(repeats, world) << name;
      }
    }
  }
}

TEST(WindowOrder, RanksReadOnlyTheirDealtChunksAndTheSharedOnes) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    const uint64_t chunks = layout.size();
    for (uint32_t world : {2u, 3u, 4u, 7u}) {
      const std::vector<WindowOrder> ranks = Ranks(layout, world, testing::Order(true, 3, 1, 5));
      const uint64_t shared = ranks[0].shared_chunk_count();
      // A dataset's chunks are full but its last: at most N - 1 full ones left over, and it.
      EXPECT_LE(shared, world) << Name(layout, world, 0);
      for (uint64_t epoch = 0; epoch < 3; ++epoch) {
        const std::string name = Name(layout, world, epoch);
        std::vector<uint64_t> shared_chunks;
        std::multiset<uint64_t> read;
        for (const WindowOrder& r : ranks) {
          const std::vector<uint64_t> mine = r.EpochChunks(epoch);
          ASSERT_EQ(mine.size(), r.epoch_chunk_count()) << name;
          EXPECT_EQ(mine.size(), ranks[0].epoch_chunk_count()) << name;
          const std::vector<uint64_t> tail(mine.end() - shared, mine.end());
          if (r.rank() == 0) shared_chunks = tail;
          EXPECT_EQ(tail, shared_chunks) << name << ": every rank reads the same shared chunks";
          for (auto c = mine.begin(); c != mine.end() - shared; ++c) {
            EXPECT_EQ(layout[*c], layout[0]) << name << ": only full chunks are dealt";
            read.insert(*c);
          }
          // The rank's samples come from the chunks it reads (all of its dealt ones; a shared
          // chunk of fewer than N samples may give it none).
          std::set<uint64_t> touched;
          for (uint64_t s : r.EpochSamples(epoch)) touched.insert(s / layout[0]);
          const std::set<uint64_t> reads(mine.begin(), mine.end());
          EXPECT_TRUE(std::includes(reads.begin(), reads.end(), touched.begin(), touched.end()))
              << name;
          for (auto c = mine.begin(); c != mine.end() - shared; ++c) {
            EXPECT_EQ(touched.count(*c), 1u) << name << ", dealt chunk " << *c;
          }
        }
        read.insert(shared_chunks.begin(), shared_chunks.end());
        // Dealt chunks are disjoint; with the shared ones they are the dataset's every chunk.
        std::vector<uint64_t> all(chunks);
        std::iota(all.begin(), all.end(), uint64_t{0});
        EXPECT_EQ(std::vector<uint64_t>(read.begin(), read.end()), all) << name;
      }
    }
  }
}

// Records of any size (JPEG images, documents) fill chunks to a byte size, so their sample counts
// vary and almost no chunk is "full": dealing round-robin among full chunks would share nearly
// every chunk, and every rank would read the whole dataset. These deals are balanced instead.
using testing::Varied;

const std::vector<std::vector<uint32_t>>& VariedLayouts() {
  static const std::vector<std::vector<uint32_t>> layouts = [] {
    std::vector<std::vector<uint32_t>> v = {
        Varied(333, 94, 100, 1),  // 32,000 photographs in 4 MiB chunks, as issue 25 measured
        Varied(200, 1, 60, 2),    // widely varied
        Varied(7, 3, 40, 3),      // fewer chunks than the margin: every chunk shared
    };
    v.push_back(Varied(50, 30, 40, 4));
    v.back().push_back(3);  // a short last chunk
    return v;
  }();
  return layouts;
}

TEST(WindowOrder, VariedChunksAreDealtBalancedAndEachRankReadsAboutItsShare) {
  for (const std::vector<uint32_t>& layout : VariedLayouts()) {
    const uint64_t total = Total(layout), chunks = layout.size();
    std::vector<uint64_t> first(chunks + 1, 0);  // global sample -> chunk
    for (size_t g = 0; g < chunks; ++g) first[g + 1] = first[g] + layout[g];
    const auto chunk_of = [&](uint64_t s) {
      return static_cast<uint64_t>(std::upper_bound(first.begin(), first.end(), s) - first.begin() -
                                   1);
    };
    const uint32_t largest = *std::max_element(layout.begin(), layout.end());
    for (uint32_t world : {2u, 3u, 4u, 7u, 8u}) {
      for (const bool shuffle : {true, false}) {
        const std::vector<WindowOrder> ranks =
            Ranks(layout, world, testing::Order(shuffle, 16, 4, 11));
        const uint64_t count = ranks[0].EpochSampleCount();
        EXPECT_EQ(count, (total + world - 1) / world);  // the least padding equal counts allow
        const uint64_t shared = ranks[0].shared_chunk_count();
        // The shared tail: the fewest chunks holding N * (largest + 1) samples, and fewer than N
        // more; everything where the dataset holds fewer samples.
        std::vector<uint32_t> ascending = layout;
        std::sort(ascending.begin(), ascending.end());
        uint64_t tail = 0, held = 0;
        while (tail < chunks && held < uint64_t{world} * (largest + 1)) held += ascending[tail++];
        EXPECT_GE(shared, tail);
        EXPECT_LT(shared, tail + world);
        if (chunks == 333 && world == 2) {
          EXPECT_LE(ranks[0].epoch_chunk_count(), 166u + 5) << "about half the chunks";
        }
        for (uint64_t epoch = 0; epoch < 3; ++epoch) {
          const std::string name = Name(layout, world, epoch) + (shuffle ? "" : ", stored order");
          std::map<uint64_t, int> visits;
          std::multiset<uint64_t> read;
          std::vector<uint64_t> shared_chunks;
          for (const WindowOrder& r : ranks) {
            const std::vector<uint64_t> mine = r.EpochSamples(epoch);
            ASSERT_EQ(mine.size(), count) << name << ", rank " << r.rank();
            EXPECT_EQ(std::set<uint64_t>(mine.begin(), mine.end()).size(), mine.size()) << name;
            for (uint64_t s : mine) ++visits[s];
            const std::vector<uint64_t> reads = r.EpochChunks(epoch);
            ASSERT_EQ(reads.size(), r.epoch_chunk_count()) << name;
            const std::vector<uint64_t> tail_chunks(reads.end() - shared, reads.end());
            if (r.rank() == 0) shared_chunks = tail_chunks;
            EXPECT_EQ(tail_chunks, shared_chunks) << name;
            read.insert(reads.begin(), reads.end() - shared);
            // Its samples come from the chunks it reads, and every dealt one is trained on.
            std::set<uint64_t> touched;
            for (uint64_t s : mine) touched.insert(chunk_of(s));
            const std::set<uint64_t> has(reads.begin(), reads.end());
            EXPECT_TRUE(std::includes(has.begin(), has.end(), touched.begin(), touched.end()))
                << name;
            for (auto c = reads.begin(); c != reads.end() - shared; ++c) {
              EXPECT_EQ(touched.count(*c), 1u) << name << ", dealt chunk " << *c;
            }
            // Its windows' sample counts add up to its epoch.
            const EpochLayout l = r.Layout(epoch);
            uint64_t windows = 0;
            for (uint64_t w = 0; w < l.window_count(); ++w) {
              const uint64_t n = r.WindowSamples(l, w);
              EXPECT_EQ(r.Window(l, w).size(), n) << name << ", window " << w;
              windows += n;
            }
            EXPECT_EQ(windows, count) << name;
          }
          ASSERT_EQ(visits.size(), total) << name;  // every sample, and nothing else
          uint64_t repeats = 0;
          for (const auto& [sample, n] : visits) {
            EXPECT_LE(n, 2) << name << ", sample " << sample;
            repeats += n - 1;
          }
          EXPECT_EQ(repeats, count * world - total) << name;
          read.insert(shared_chunks.begin(), shared_chunks.end());
          std::vector<uint64_t> all(chunks);
          std::iota(all.begin(), all.end(), uint64_t{0});
          EXPECT_EQ(std::vector<uint64_t>(read.begin(), read.end()), all)
              << name << ": dealt chunks are disjoint, and with the shared ones every chunk";
        }
      }
    }
  }
}

TEST(WindowOrder, RankOrderIsAFunctionOfSeedEpochAndRankAlone) {
  const std::vector<uint32_t> layout = Layout(40, 23, 7);
  const std::vector<WindowOrder> a = Ranks(layout, 3, testing::Order(true, 4, 2, 9));
  const std::vector<WindowOrder> b = Ranks(layout, 3, testing::Order(true, 4, 2, 9));
  const std::vector<WindowOrder> other_seed = Ranks(layout, 3, testing::Order(true, 4, 2, 10));
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(a[r].EpochSamples(2), b[r].EpochSamples(2)) << "rank " << r;
    EXPECT_EQ(a[r].EpochChunks(2), b[r].EpochChunks(2)) << "rank " << r;
    EXPECT_NE(a[r].EpochSamples(2), a[r].EpochSamples(3)) << "rank " << r;
    EXPECT_NE(a[r].EpochChunks(2), a[r].EpochChunks(3)) << "rank " << r;
    EXPECT_NE(a[r].EpochSamples(2), other_seed[r].EpochSamples(2)) << "rank " << r;
  }
}

TEST(WindowOrder, SharedChunksJoinTheLastWindow) {
  // 29 full chunks of 17 and a short one of 9, 4 ranks: 7 dealt each; shared: 1 full + the
  // short one, S = 26 samples, 7 per rank (2 ranks pad). Windows of 1, 3, 3 dealt chunks.
  const std::vector<uint32_t> layout = Layout(29, 17, 9);
  for (const WindowOrder& r : Ranks(layout, 4, testing::Order(true, 3, 1, 3))) {
    EXPECT_EQ(r.epoch_chunk_count(), 9u);
    EXPECT_EQ(r.shared_chunk_count(), 2u);
    EXPECT_EQ(r.EpochSampleCount(), 7u * 17 + 7);
    ASSERT_EQ(r.windows_per_epoch(), 3u);
    EXPECT_EQ(r.WindowChunks(0), 1u);
    EXPECT_EQ(r.WindowChunks(1), 3u);
    EXPECT_EQ(r.WindowChunks(2), 3u + 2);
    EXPECT_EQ(r.max_window_chunks(), 5u);
    const EpochLayout layout = r.Layout(1);
    uint64_t total = 0;
    for (uint64_t w = 0; w < r.windows_per_epoch(); ++w) {
      const auto entries = r.Window(layout, w);
      EXPECT_EQ(entries.size(), r.WindowSamples(layout, w));
      std::set<uint32_t> seen;
      for (const auto& e : entries) {
        ASSERT_LT(e.chunk_in_window, r.WindowChunks(w));
        seen.insert(e.chunk_in_window);
      }
      EXPECT_EQ(seen.size(), r.WindowChunks(w)) << "window " << w;
      total += entries.size();
    }
    EXPECT_EQ(total, r.EpochSampleCount());
  }
}

TEST(WindowOrder, FewerFullChunksThanRanksShareOneWindowOfEverything) {
  // 3 full chunks of 11 and one of 4 over 7 ranks: nothing is dealt, every rank reads all four
  // chunks and takes ceil(37 / 7) = 6 samples of them.
  for (const WindowOrder& r : Ranks(Layout(3, 11, 4), 7, testing::Order(true, 64, 8, 1))) {
    EXPECT_EQ(r.windows_per_epoch(), 1u);
    EXPECT_EQ(r.WindowChunks(0), 4u);
    EXPECT_EQ(r.EpochSampleCount(), 6u);
    EXPECT_EQ(r.EpochSamples(0).size(), 6u);
  }
}

TEST(WindowOrder, ShuffleOffDealsStoredChunksRoundRobinAndSplitsTheRestInStoredOrder) {
  // 10 full chunks of 4 and one of 3, 3 ranks: rank r gets chunks r, r+3, r+6; chunk 9 and
  // chunk 10 are shared (stream: samples 36..42), and rank r takes stream[r], stream[r+3],
  // stream[(r+6) mod 7].
  const std::vector<WindowOrder> ranks = Ranks(Layout(10, 4, 3), 3, testing::Order(false, 2, 1, 0));
  const std::vector<std::vector<uint64_t>> expected = {
      {0, 1, 2, 3, 12, 13, 14, 15, 24, 25, 26, 27, 36, 39, 42},
      {4, 5, 6, 7, 16, 17, 18, 19, 28, 29, 30, 31, 37, 40, 36},
      {8, 9, 10, 11, 20, 21, 22, 23, 32, 33, 34, 35, 38, 41, 37},
  };
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(ranks[r].EpochChunks(4), (std::vector<uint64_t>{r, r + 3, r + 6, 9, 10}))
        << "rank " << r;
    EXPECT_EQ(ranks[r].EpochSamples(4), expected[r]) << "rank " << r;
  }
}

}  // namespace
}  // namespace rf
