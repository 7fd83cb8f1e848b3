// WindowOrder's node partition (OrderSettings::node_ranks L, pipeline/order/world_order.h): each
// machine of L consecutive ranks reads the same part of the dataset every epoch, shuffled within
// it, and the rules of the global partition hold: over the ranks every epoch visits every sample
// once plus the documented padding, every rank gets the same count, and the order is a function
// of the seed, the epoch and the rank. An epoch begun under it resumes at another world size with
// every sample it left visited once. And what a machine's shared cache is told its ranks read
// (MachineChunks), under either partition: their chunks interleaved.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pipeline/order/window_order.h"
#include "tests/pipeline/order_testing.h"

namespace rf {
namespace {

using testing::Varied;

// Full chunks and a short last one (round-robin deals), and records of varied sizes (balanced).
const std::vector<std::vector<uint32_t>>& Layouts() {
  static const std::vector<std::vector<uint32_t>> layouts = [] {
    std::vector<uint32_t> full(84, 13);
    std::vector<uint32_t> short_last(29, 17);
    short_last.push_back(9);
    return std::vector<std::vector<uint32_t>>{full, short_last, Varied(333, 94, 100, 1),
                                              Varied(200, 1, 60, 2)};
  }();
  return layouts;
}

struct World {
  uint32_t ranks, per_node;
};
const std::vector<World>& Worlds() {
  static const std::vector<World> w = {{4, 2}, {6, 3}, {6, 2}, {8, 4}, {4, 1}, {3, 1}};
  return w;
}

std::vector<WindowOrder> Ranks(const std::vector<uint32_t>& layout, World w, OrderSettings o) {
  std::vector<WindowOrder> ranks;
  o.world_size = w.ranks;
  o.node_ranks = w.per_node;
  for (uint32_t r = 0; r < w.ranks; ++r) {
    o.rank = r;
    ranks.emplace_back(layout, o);
  }
  return ranks;
}

std::string Name(const std::vector<uint32_t>& layout, World w, uint64_t epoch) {
  return std::to_string(layout.size()) + " chunks, N " + std::to_string(w.ranks) + ", L " +
         std::to_string(w.per_node) + ", epoch " + std::to_string(epoch);
}

// The chunks node k's ranks read in `epoch` apart from the shared ones (each rank's epoch
// chunks but its last shared_chunk_count()).
std::set<uint64_t> NodeChunks(const std::vector<WindowOrder>& ranks, World w, uint32_t node,
                              uint64_t epoch) {
  std::set<uint64_t> out;
  for (uint32_t j = 0; j < w.per_node; ++j) {
    const WindowOrder& r = ranks[node * w.per_node + j];
    const std::vector<uint64_t> mine = r.EpochChunks(epoch);
    out.insert(mine.begin(), mine.end() - static_cast<ptrdiff_t>(r.shared_chunk_count()));
  }
  return out;
}

TEST(NodePartition, EveryEpochVisitsEverySampleOncePlusThePaddingWithEqualCounts) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    const uint64_t total = std::accumulate(layout.begin(), layout.end(), uint64_t{0});
    for (const World w : Worlds()) {
      const std::vector<WindowOrder> ranks = Ranks(layout, w, testing::Order(true, 4, 2, 11));
      const uint64_t count = ranks[0].EpochSampleCount();
      EXPECT_EQ(count, (total + w.ranks - 1) / w.ranks) << Name(layout, w, 0);
      for (uint64_t epoch = 0; epoch < 3; ++epoch) {
        const std::string name = Name(layout, w, epoch);
        std::map<uint64_t, int> visits;
        for (const WindowOrder& r : ranks) {
          const std::vector<uint64_t> mine = r.EpochSamples(epoch);
          ASSERT_EQ(mine.size(), count) << name << ", rank " << r.rank();
          EXPECT_EQ(std::set<uint64_t>(mine.begin(), mine.end()).size(), mine.size()) << name;
          for (uint64_t s : mine) ++visits[s];
        }
        ASSERT_EQ(visits.size(), total) << name;
        uint64_t repeats = 0;
        for (const auto& [sample, n] : visits) {
          EXPECT_LE(n, 2) << name << ", sample " << sample;
          repeats += n - 1;
        }
        EXPECT_EQ(repeats, count * w.ranks - total) << name;
      }
    }
  }
}

TEST(NodePartition, EachNodeReadsTheSamePartEveryEpochAndTheNodesPartsAreDisjoint) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    for (const World w : Worlds()) {
      const std::vector<WindowOrder> ranks = Ranks(layout, w, testing::Order(true, 4, 2, 11));
      const uint32_t nodes = w.ranks / w.per_node;
      std::set<uint64_t> seen;
      uint64_t parts = 0;
      for (uint32_t k = 0; k < nodes; ++k) {
        const std::set<uint64_t> part = NodeChunks(ranks, w, k, 0);
        EXPECT_FALSE(part.empty()) << Name(layout, w, 0) << ", node " << k;
        for (uint64_t epoch = 1; epoch < 4; ++epoch)
          EXPECT_EQ(NodeChunks(ranks, w, k, epoch), part)
              << Name(layout, w, epoch) << ", node " << k;
        seen.insert(part.begin(), part.end());
        parts += part.size();
      }
      EXPECT_EQ(seen.size(), parts) << Name(layout, w, 0) << ": a chunk in two nodes' parts";
      // The shared chunks are the same every epoch too (in the epoch's order).
      const std::vector<uint64_t> first = ranks[0].EpochChunks(0);
      const std::set<uint64_t> shared(first.end() - ranks[0].shared_chunk_count(), first.end());
      for (uint64_t epoch = 1; epoch < 4; ++epoch) {
        const std::vector<uint64_t> e = ranks[0].EpochChunks(epoch);
        EXPECT_EQ(std::set<uint64_t>(e.end() - ranks[0].shared_chunk_count(), e.end()), shared)
            << Name(layout, w, epoch);
      }
      EXPECT_EQ(parts + shared.size(), layout.size()) << Name(layout, w, 0);
    }
  }
}

TEST(NodePartition, ANodesEpochsAreShuffledDifferentlyAndItsRanksSwapChunks) {
  const std::vector<uint32_t> layout(84, 13);
  const World w{4, 2};
  const std::vector<WindowOrder> ranks = Ranks(layout, w, testing::Order(true, 4, 2, 11));
  EXPECT_NE(ranks[0].EpochSamples(0), ranks[0].EpochSamples(1));
  EXPECT_NE(ranks[0].EpochChunks(0), ranks[0].EpochChunks(1));
  // Within a node, a chunk is not always the same rank's: the epoch deals the node's part anew.
  const std::vector<uint64_t> e0 = ranks[0].EpochChunks(0), e1 = ranks[0].EpochChunks(1);
  EXPECT_NE(std::set<uint64_t>(e0.begin(), e0.end()), std::set<uint64_t>(e1.begin(), e1.end()));
}

TEST(NodePartition, OneNodeOrAnUnevenSplitIsTheGlobalPartitionBitForBit) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    for (const World w : {World{4, 4}, World{6, 4}, World{5, 2}}) {
      OrderSettings o = testing::Order(true, 4, 2, 11);
      const std::vector<WindowOrder> nodes = Ranks(layout, w, o);
      const std::vector<WindowOrder> global = Ranks(layout, World{w.ranks, 0}, o);
      for (uint32_t r = 0; r < w.ranks; ++r)
        EXPECT_EQ(nodes[r].EpochSamples(1), global[r].EpochSamples(1)) << Name(layout, w, 1);
    }
  }
}

TEST(NodePartition, TheOrderIsAFunctionOfSeedEpochRankAndTheNodesAlone) {
  const std::vector<uint32_t> layout = Varied(200, 1, 60, 2);
  const World w{6, 3};
  const std::vector<WindowOrder> a = Ranks(layout, w, testing::Order(true, 4, 2, 11));
  const std::vector<WindowOrder> b = Ranks(layout, w, testing::Order(true, 4, 2, 11));
  const std::vector<WindowOrder> other = Ranks(layout, w, testing::Order(true, 4, 2, 12));
  for (uint32_t r = 0; r < w.ranks; ++r) {
    EXPECT_EQ(a[r].EpochSamples(2), b[r].EpochSamples(2));
    EXPECT_NE(a[r].EpochSamples(2), other[r].EpochSamples(2));
  }
}

TEST(NodePartition, WithShufflingOffThePartsAreTheStoredOrdersTurns) {
  const std::vector<uint32_t> layout(12, 5);
  const World w{4, 2};  // 2 nodes: node 0 gets chunks 0, 2, 4, ...; node 1 chunks 1, 3, 5, ...
  const std::vector<WindowOrder> ranks = Ranks(layout, w, testing::Order(false, 4, 2, 11));
  EXPECT_EQ(NodeChunks(ranks, w, 0, 0), (std::set<uint64_t>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(NodeChunks(ranks, w, 1, 0), (std::set<uint64_t>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(ranks[0].EpochChunks(0), (std::vector<uint64_t>{0, 4, 8}));  // local rank 0: 0th, 2nd
  EXPECT_EQ(ranks[1].EpochChunks(0), (std::vector<uint64_t>{2, 6, 10}));
}

// A machine's ranks' chunks, as MachineChunks gives them to every one of its ranks: rank first +
// j's i-th chunk at (i - from) * L + j, the same list for each of the machine's ranks, under the
// global partition (node_ranks 0) and the node one. Nothing where it is one rank, where L does
// not divide the world or passes it, and for a resumed epoch.
TEST(WindowOrderMachine, TheMachinesRanksChunksInterleaved) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    for (World w : Worlds()) {
      for (uint32_t node_ranks : {0u, w.per_node}) {
        OrderSettings o = testing::Order(true, 8, 2, 11);
        std::vector<WindowOrder> ranks = Ranks(layout, {w.ranks, node_ranks}, o);
        const uint32_t l = w.per_node;
        for (uint64_t epoch : {0, 3}) {
          SCOPED_TRACE(Name(layout, w, epoch) + (node_ranks ? ", node" : ", global"));
          std::vector<std::vector<uint64_t>> own;
          for (const WindowOrder& r : ranks) own.push_back(r.EpochChunks(epoch));
          for (uint32_t rank = 0; rank < w.ranks; ++rank) {
            const uint32_t first = rank - rank % l;
            for (uint64_t from : {uint64_t{0}, uint64_t{3}}) {
              std::vector<uint64_t> want;
              for (uint64_t i = from; i < own[rank].size(); ++i) {
                for (uint32_t j = first; j < first + l; ++j) want.push_back(own[j][i]);
              }
              const auto got = ranks[rank].MachineChunks(epoch, l, from);
              if (l == 1) {
                EXPECT_FALSE(got.has_value());
                continue;
              }
              ASSERT_TRUE(got.has_value()) << "rank " << rank;
              EXPECT_EQ(*got, want) << "rank " << rank << " from " << from;
            }
          }
        }
      }
    }
  }
  OrderSettings o = testing::Order(true, 8, 2, 11, 1, 6);
  const WindowOrder six(Layouts()[0], o);
  EXPECT_FALSE(six.MachineChunks(0, 4).has_value()) << "4 does not divide 6";
  EXPECT_FALSE(six.MachineChunks(0, 12).has_value()) << "12 ranks on a machine of a world of 6";
  EXPECT_TRUE(six.MachineChunks(0, 6).has_value());
  o.resumed.epoch = 2;
  o.resumed.stretches = {{3, 5, 0}};
  const WindowOrder resumed(Layouts()[0], o);
  EXPECT_FALSE(resumed.MachineChunks(2, 2).has_value()) << "the resumed epoch";
  EXPECT_TRUE(resumed.MachineChunks(3, 2).has_value());
}

// A world of one over a part (packed sequences' machines under the node partition,
// pipeline/sequences/sequence_plan.h): each epoch visits the part's chunks only, every sample of
// them once, in the order of that epoch's permutation of all the chunks; unshuffled, ascending.
TEST(WindowOrderPart, VisitsThePartsChunksOnlyInTheEpochsOrderOfAll) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    auto part = std::make_shared<std::vector<uint64_t>>();
    uint64_t samples = 0;
    for (uint64_t g = 1; g < layout.size(); g += 3) {
      part->push_back(g);
      samples += layout[g];
    }
    for (ShuffleMode shuffle : {ShuffleMode::kWindow, ShuffleMode::kNone}) {
      OrderSettings o;
      o.shuffle = shuffle;
      o.shuffle_window = 4;
      o.seed = 9;
      const WindowOrder all(layout, o);
      const WindowOrder mine(layout, o, part);
      EXPECT_EQ(mine.EpochSampleCount(), samples);
      for (uint64_t epoch = 0; epoch < 3; ++epoch) {
        std::vector<uint64_t> want;
        for (uint64_t g : all.EpochChunks(epoch)) {
          if (std::binary_search(part->begin(), part->end(), g)) want.push_back(g);
        }
        EXPECT_EQ(mine.EpochChunks(epoch), want) << "epoch " << epoch;
        std::vector<uint64_t> got = mine.EpochSamples(epoch);
        std::sort(got.begin(), got.end());
        std::vector<uint64_t> expect;
        for (uint64_t g : *part) {
          const uint64_t first = mine.GlobalSample(g, 0);
          for (uint32_t i = 0; i < layout[g]; ++i) expect.push_back(first + i);
        }
        EXPECT_EQ(got, expect) << "epoch " << epoch;
      }
      if (shuffle == ShuffleMode::kNone) {
        EXPECT_EQ(mine.EpochChunks(0), *part);
      }
    }
  }
}

}  // namespace
}  // namespace rf
