// WindowOrder's resumed epoch (order.resumed): an epoch begun at N0 ranks and resumed at M
// (or at N1, stopped again, and resumed at M) visits exactly what window_order.h says: checked
// against a slow reference built from whole epoch lists, and against the promise it serves, every
// sample the earlier stretches left exactly once plus fewer than M repeats, the same count on
// every rank; each rank reads the old windows its pieces come from, each run of them once (of a
// run that is part of its window, only the chunks it takes samples from); the epochs around it
// are ordinary.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
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

// An entry of stretch 0: an old rank and a position in its ordinary order of the epoch.
struct Ref {
  uint32_t rank;
  uint64_t pos;
};

// Stretch 0's world: each old rank's order, its padding position (or none), its window edges.
struct OldWorld {
  std::vector<std::vector<uint64_t>> order;
  std::vector<uint64_t> pad;                               // kNone: no padding entry
  std::vector<std::vector<uint64_t>> bounds;               // bounds[r][w]: samples before window w
  std::vector<std::vector<std::vector<uint64_t>>> chunks;  // chunks[r][w]: window w's chunks
  static constexpr uint64_t kNone = ~uint64_t{0};

  // The old window an entry is in.
  uint64_t WindowOf(const Ref& e) const {
    const std::vector<uint64_t>& b = bounds[e.rank];
    return static_cast<uint64_t>(std::upper_bound(b.begin(), b.end(), e.pos) - b.begin() - 1);
  }
};

uint64_t Total(const std::vector<uint32_t>& layout) {
  return std::accumulate(layout.begin(), layout.end(), uint64_t{0});
}

OldWorld Old(const std::vector<uint32_t>& layout, OrderSettings o, uint32_t world, uint64_t epoch) {
  o.world_size = world;
  o.resumed.stretches.clear();
  OldWorld w;
  uint64_t taken = 0;  // a balanced deal's shared stream: what the ranks before took
  for (uint32_t r = 0; r < world; ++r) {
    o.rank = r;
    const WindowOrder order(layout, o);
    w.order.push_back(order.EpochSamples(epoch));
    // The padding, from the documented rules. The shared stream is the shared chunks' samples
    // back to back. Round-robin: rank r takes stream[r + i*N] for i < ceil(S/N), wrapping once,
    // at the end. Balanced: the ranks take runs of it in rank order, each as many as its count
    // wants beside its dealt chunks' samples, and the padding entry is the sample after the run.
    const std::vector<uint64_t> chunks = order.EpochChunks(epoch);
    const uint64_t shared = order.shared_chunk_count(), count = order.EpochSampleCount();
    std::vector<uint64_t> stream;
    uint64_t dealt = 0;
    for (auto c = chunks.begin(); c != chunks.end(); ++c) {
      if (c < chunks.end() - shared) {
        dealt += layout[*c];
        continue;
      }
      for (uint32_t s = 0; s < layout[*c]; ++s) stream.push_back(order.GlobalSample(*c, s));
    }
    const uint64_t n = stream.size(), take = n == 0 ? 0 : (n + world - 1) / world;
    uint64_t sample = OldWorld::kNone;
    if (order.balanced()) {
      const bool pads = r + (count * world - Total(layout)) >= world;
      const uint64_t run = count - dealt - (pads ? 1 : 0);
      if (pads) sample = stream[(taken + run) % n];
      taken += run;
    } else if (n != 0 && r + (take - 1) * world >= n) {
      sample = stream[r + (take - 1) * world - n];
    }
    uint64_t pad = OldWorld::kNone;
    if (sample != OldWorld::kNone) {
      pad = std::find(w.order[r].begin(), w.order[r].end(), sample) - w.order[r].begin();
    }
    w.pad.push_back(pad);
    const EpochLayout l = order.Layout(epoch);
    w.bounds.emplace_back(1, 0);
    w.chunks.emplace_back();
    for (uint64_t i = 0; i < l.window_count(); ++i) {
      w.bounds[r].push_back(w.bounds[r].back() + order.WindowSamples(l, i));
      const auto first = l.chunks().begin() + l.WindowStart(i);
      w.chunks[r].emplace_back(first, first + l.WindowChunks(i));
    }
  }
  return w;
}

// The chunk holding a sample.
uint64_t ChunkOf(const std::vector<uint32_t>& layout, uint64_t sample) {
  uint64_t c = 0;
  for (; sample >= layout[c]; ++c) sample -= layout[c];
  return c;
}

// One level's split of a list over `world` ranks: rank j's slice, padded from the list's start.
std::vector<Ref> Split(const std::vector<Ref>& list, uint32_t world, uint32_t j) {
  const uint64_t q = (list.size() + world - 1) / world;
  const uint64_t begin = std::min<uint64_t>(list.size(), j * q);
  const uint64_t end = std::min<uint64_t>(list.size(), begin + q);
  std::vector<Ref> mine(list.begin() + begin, list.begin() + end);
  for (uint64_t i = 0; mine.size() < q; ++i) mine.push_back(list[i]);
  return mine;
}

// The resumed epoch of every rank of world `world`, the slow way: whole lists, level by level.
// *trained gets what the stretches trained, *padding_trained how many of those were padding
// repeats.
std::vector<std::vector<Ref>> Reference(const OldWorld& old, const std::vector<EpochStretch>& st,
                                        uint32_t world, std::vector<Ref>* trained,
                                        uint64_t* padding_trained) {
  *padding_trained = 0;
  std::vector<Ref> list;
  for (uint32_t r = 0; r < old.order.size(); ++r) {
    for (uint64_t pos = 0; pos < old.order[r].size(); ++pos) {
      if (pos < st[0].position) {
        trained->push_back({r, pos});
        if (pos == old.pad[r]) ++*padding_trained;
      } else if (pos != old.pad[r]) {
        list.push_back({r, pos});
      }
    }
  }
  for (size_t k = 1; k < st.size(); ++k) {
    std::vector<Ref> next;
    const uint64_t q = (list.size() + st[k].world_size - 1) / st[k].world_size;
    for (uint32_t j = 0; j < st[k].world_size; ++j) {
      const std::vector<Ref> mine = Split(list, st[k].world_size, j);
      const uint64_t real = std::min<uint64_t>(q, list.size() > j * q ? list.size() - j * q : 0);
      for (uint64_t i = 0; i < mine.size(); ++i) {
        if (i < st[k].position) {
          trained->push_back(mine[i]);
          if (i >= real) ++*padding_trained;
        } else if (i < real) {  // padding repeats are left out
          next.push_back(mine[i]);
        }
      }
    }
    list = std::move(next);
  }
  std::vector<std::vector<Ref>> ranks;
  for (uint32_t j = 0; j < world; ++j) ranks.push_back(Split(list, world, j));
  return ranks;
}

std::string Name(const std::vector<uint32_t>& layout, bool shuffle,
                 const std::vector<EpochStretch>& st, uint32_t world) {
  std::string s = std::to_string(layout.size()) + " chunks (last " + std::to_string(layout.back()) +
                  ")" + (shuffle ? "" : ", stored order");
  for (const EpochStretch& e : st) {
    s += ", " + std::to_string(e.world_size) + " ranks to " + std::to_string(e.position);
  }
  return s + ", resumed at " + std::to_string(world);
}

// Checks every rank of world `world` resuming epoch `epoch` after `st` against the reference.
void CheckResumed(const std::vector<uint32_t>& layout, OrderSettings o, uint64_t epoch,
                  const std::vector<EpochStretch>& st, uint32_t world) {
  const std::string name = Name(layout, o.shuffle == ShuffleMode::kWindow, st, world);
  OrderSettings first = o;  // stretch 0's own partition decides its ranks' orders
  first.node_ranks = st[0].node_ranks;
  const OldWorld old = Old(layout, first, st[0].world_size, epoch);
  std::vector<Ref> trained;
  uint64_t padding_trained = 0;
  const std::vector<std::vector<Ref>> ref = Reference(old, st, world, &trained, &padding_trained);
  o.resumed = {epoch, st};
  o.world_size = world;
  std::map<uint64_t, int> resumed;  // sample -> visits in the resumed epoch, over the ranks
  for (uint32_t j = 0; j < world; ++j) {
    o.rank = j;
    const WindowOrder order(layout, o);
    ASSERT_TRUE(order.IsResumed(epoch));
    const std::vector<uint64_t> mine = order.EpochSamples(epoch);
    std::vector<uint64_t> expected;
    for (const Ref& e : ref[j]) expected.push_back(old.order[e.rank][e.pos]);
    ASSERT_EQ(mine, expected) << name << ", rank " << j;
    EXPECT_EQ(order.EpochSampleCount(epoch), ref[0].size()) << name << ": the same on every rank";
    for (uint64_t s : mine) ++resumed[s];
    // Its windows: each run of entries of one old window is one window, holding that window's
    // chunks, or where the run is part of the window, the chunks its samples are in; so the rank
    // reads those and nothing else.
    std::vector<std::vector<Ref>> runs;
    for (size_t i = 0; i < ref[j].size(); ++i) {
      const Ref& e = ref[j][i];
      if (i == 0 || e.rank != ref[j][i - 1].rank ||
          old.WindowOf(e) != old.WindowOf(ref[j][i - 1])) {
        runs.emplace_back();
      }
      runs.back().push_back(e);
    }
    const EpochLayout l = order.Layout(epoch);
    ASSERT_EQ(l.window_count(), runs.size()) << name << ", rank " << j;
    for (size_t k = 0; k < runs.size(); ++k) {
      const Ref& e = runs[k][0];
      const uint64_t w = old.WindowOf(e);
      std::set<uint64_t> expected;
      if (runs[k].size() == old.bounds[e.rank][w + 1] - old.bounds[e.rank][w]) {
        expected.insert(old.chunks[e.rank][w].begin(), old.chunks[e.rank][w].end());
      } else {
        for (const Ref& x : runs[k]) expected.insert(ChunkOf(layout, old.order[x.rank][x.pos]));
      }
      const auto first = l.chunks().begin() + l.WindowStart(k);
      EXPECT_EQ(std::set<uint64_t>(first, first + l.WindowChunks(k)), expected)
          << name << ", rank " << j << ", window " << k;
      EXPECT_EQ(l.WindowChunks(k), expected.size()) << name << ", rank " << j << ", window " << k;
    }
    // Started anywhere, the walk goes on as from the epoch's start.
    for (uint64_t p : {uint64_t{1}, mine.size() / 2, mine.size() - 1}) {
      if (p >= mine.size()) continue;
      WindowCursor c(order);
      c.Start(epoch, p);
      std::vector<uint64_t> rest;
      WindowCursor::Sample s;
      while (c.Step(&s)) rest.push_back(order.GlobalSample(s.chunk, s.sample));
      EXPECT_EQ(rest, std::vector<uint64_t>(mine.begin() + p, mine.end())) << name << " at " << p;
    }
  }
  // The promise: with what the stretches trained, every sample; in the resumed part, every sample
  // they did not train, once each, and fewer than `world` repeats besides (where a stretch
  // trained a padding repeat, the sample's own entry is left, and that is no repeat).
  std::set<uint64_t> done;
  for (const Ref& e : trained) done.insert(old.order[e.rank][e.pos]);
  const uint64_t total = std::accumulate(layout.begin(), layout.end(), uint64_t{0});
  uint64_t extra = 0;
  for (uint64_t s = 0; s < total; ++s) {
    const int n = resumed.count(s) ? resumed.at(s) : 0;
    if (done.count(s) == 0) {
      ASSERT_GE(n, 1) << name << ": sample " << s << " is never trained";
      extra += n - 1;
    } else {
      extra += n;
    }
  }
  if (!resumed.empty()) {
    EXPECT_LT(resumed.rbegin()->first, total) << name;
  }
  EXPECT_LT(extra, world + padding_trained) << name;
}

const std::vector<std::vector<uint32_t>>& Layouts() {
  static const std::vector<std::vector<uint32_t>> layouts = {
      Layout(29, 17, 9),  // a prime count of full chunks and a short one
      Layout(10, 13, 0),  // 10 full chunks: not divisible by 3 or 4
      Layout(3, 11, 4),   // fewer full chunks than some worlds: everything shared
      // Records of any size: chunks of varied counts, dealt balanced (window_order.h).
      {23, 17, 30, 9, 26, 21, 30, 12, 28, 19, 25, 14, 29, 22, 18, 27, 11, 24, 30, 16, 20, 13, 5},
      {40, 38, 39, 40, 37, 36, 40, 39, 38, 35, 40, 37, 39, 36, 38, 40, 39, 37, 2},
  };
  return layouts;
}

// Positions of stretch 0 worth stopping at: the start, inside and at the edge of a window, inside
// the last one, the last sample, the end.
std::vector<uint64_t> Positions(const std::vector<uint32_t>& layout, OrderSettings o,
                                uint32_t world, uint64_t epoch) {
  const OldWorld old = Old(layout, o, world, epoch);
  const std::vector<uint64_t>& b = old.bounds[0];
  const uint64_t count = b.back();
  std::set<uint64_t> p = {0, count / 2, count - 1, count};
  if (b.size() > 2) p.insert({b[1], b[1] + 3});
  p.insert(b[b.size() - 2] + 1);
  std::vector<uint64_t> out;
  for (uint64_t v : p) {
    if (v <= count) out.push_back(v);
  }
  return out;
}

TEST(WindowOrder, ResumedAtAnotherWorldSizeVisitsWhatTheFirstStretchLeftOnce) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    for (bool shuffle : {true, false}) {
      const OrderSettings o = testing::Order(shuffle, 3, 2, 17);
      for (uint32_t n0 : {1u, 2u, 3u, 4u}) {
        for (uint64_t p0 : Positions(layout, o, n0, 2)) {
          for (uint32_t m : {1u, 2u, 3u, 5u}) CheckResumed(layout, o, 2, {{n0, p0}}, m);
        }
      }
    }
  }
}

// Stretch 0 under the node partition (OrderSettings::node_ranks): its machines' parts; the
// resumed run, at another world size, splits what it left as after a global stretch.
TEST(WindowOrder, ResumedFromANodePartitionedStretchVisitsWhatItLeftOnce) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    for (bool shuffle : {true, false}) {
      const OrderSettings o = testing::Order(shuffle, 3, 2, 17);
      for (auto [n0, l0] : {std::pair{4u, 2u}, std::pair{6u, 3u}, std::pair{4u, 1u}}) {
        EpochStretch s0;
        s0.world_size = n0;
        s0.node_ranks = l0;
        OrderSettings first = o;
        first.node_ranks = l0;
        for (uint64_t p0 : Positions(layout, first, n0, 2)) {
          s0.position = p0;
          for (uint32_t m : {1u, 2u, 3u, 5u}) CheckResumed(layout, o, 2, {s0}, m);
        }
      }
    }
  }
}

TEST(WindowOrder, ResumedAfterTwoStretchesVisitsWhatBothLeftOnce) {
  for (const std::vector<uint32_t>& layout : Layouts()) {
    const OrderSettings o = testing::Order(true, 3, 2, 5);
    for (auto [n0, n1] : {std::pair{4u, 3u}, std::pair{2u, 5u}, std::pair{3u, 1u}}) {
      for (uint64_t p0 : Positions(layout, o, n0, 1)) {
        // Stretch 1's ranks hold q1 entries each; stop them at 0, 1, half-way, the end.
        OldWorld old = Old(layout, o, n0, 1);
        std::vector<Ref> unused;
        uint64_t padding = 0;
        const uint64_t q1 = Reference(old, {{n0, p0}}, n1, &unused, &padding)[0].size();
        for (uint64_t p1 : std::set<uint64_t>{0, std::min<uint64_t>(1, q1), q1 / 2, q1}) {
          for (uint32_t m : {1u, 2u, 3u, 5u}) CheckResumed(layout, o, 1, {{n0, p0}, {n1, p1}}, m);
        }
      }
    }
  }
}

TEST(WindowOrder, EpochsAroundTheResumedOneAreOrdinary) {
  const std::vector<uint32_t> layout = Layout(29, 17, 9);
  for (uint32_t rank = 0; rank < 3; ++rank) {
    const OrderSettings plain = testing::Order(true, 3, 2, 17, rank, 3);
    OrderSettings o = plain;
    o.resumed = {4, {{2, 100}}};
    const WindowOrder ordinary(layout, plain), resumed(layout, o);
    for (uint64_t epoch : {0u, 3u, 5u, 6u}) {
      EXPECT_FALSE(resumed.IsResumed(epoch));
      EXPECT_EQ(resumed.EpochSampleCount(epoch), ordinary.EpochSampleCount()) << epoch;
      EXPECT_EQ(resumed.EpochSamples(epoch), ordinary.EpochSamples(epoch)) << epoch;
      EXPECT_EQ(resumed.EpochChunks(epoch), ordinary.EpochChunks(epoch)) << epoch;
    }
    EXPECT_TRUE(resumed.IsResumed(4));
    EXPECT_NE(resumed.EpochSamples(4), ordinary.EpochSamples(4));
    // 2 ranks of 251 each (14 chunks of 17, and 13 of the shared 17 + 9), 100 each trained: 302
    // left, 101 per rank of 3.
    EXPECT_EQ(resumed.EpochSampleCount(4), 101u);
    EXPECT_EQ(resumed.EpochSamples(4).size(), 101u);
  }
}

TEST(WindowOrder, NothingLeftMakesAnEmptyResumedEpoch) {
  const std::vector<uint32_t> layout = Layout(10, 13, 0);
  OrderSettings o = testing::Order(true, 3, 2, 17, 1, 2);
  o.resumed = {0, {{3, 44}}};  // ceil(130 / 3) = 44: the first stretch trained everything
  const WindowOrder order(layout, o);
  EXPECT_EQ(order.EpochSampleCount(0), 0u);
  EXPECT_TRUE(order.EpochSamples(0).empty());
  EXPECT_EQ(order.Layout(0).window_count(), 0u);
  EXPECT_TRUE(order.EpochChunks(0).empty());
  EXPECT_EQ(order.EpochSamples(1).size(), 65u);
}

TEST(StretchesAt, AddsTheCheckpointsStretchToTheResumedEpochsOnly) {
  OrderSettings o;
  o.resumed = {3, {{4, 10}, {2, 7}}};
  const std::vector<EpochStretch> at3 = StretchesAt(o, 3, 5, 9);
  ASSERT_EQ(at3.size(), 3u);
  EXPECT_EQ(at3[0].world_size, 4u);
  EXPECT_EQ(at3[1].position, 7u);
  EXPECT_EQ(at3[2].world_size, 5u);
  EXPECT_EQ(at3[2].position, 9u);
  const std::vector<EpochStretch> at4 = StretchesAt(o, 4, 5, 9);
  ASSERT_EQ(at4.size(), 1u);
  EXPECT_EQ(at4[0].world_size, 5u);
  EXPECT_EQ(at4[0].position, 9u);
  o.resumed.stretches.clear();
  EXPECT_EQ(StretchesAt(o, 3, 2, 1).size(), 1u);
}

TEST(ResumeAt, ContinuesAtTheSavedWorldSizeAndAppendsTheSavedStretchAtAnother) {
  // At the saved world size: the same stretches, the same place.
  ResumePoint same = ResumeAt(3, {{4, 10}}, 2, 7, 2);
  EXPECT_EQ(same.resumed.epoch, 3u);
  ASSERT_EQ(same.resumed.stretches.size(), 1u);
  EXPECT_EQ(same.resumed.stretches[0].world_size, 4u);
  EXPECT_EQ(same.position, 7u);
  // At another: the saved stretch joins them, and the remainder starts afresh.
  ResumePoint other = ResumeAt(3, {{4, 10}}, 2, 7, 5);
  ASSERT_EQ(other.resumed.stretches.size(), 2u);
  EXPECT_EQ(other.resumed.stretches[1].world_size, 2u);
  EXPECT_EQ(other.resumed.stretches[1].position, 7u);
  EXPECT_EQ(other.position, 0u);
  // A stretch that trained nothing is still one where earlier ones did (the order differs).
  EXPECT_EQ(ResumeAt(3, {{4, 10}}, 2, 0, 5).resumed.stretches.size(), 2u);
  // Nothing of the epoch trained: an ordinary epoch at any world size.
  ResumePoint fresh = ResumeAt(3, {}, 2, 0, 5);
  EXPECT_TRUE(fresh.resumed.stretches.empty());
  EXPECT_EQ(fresh.position, 0u);
}

}  // namespace
}  // namespace rf
