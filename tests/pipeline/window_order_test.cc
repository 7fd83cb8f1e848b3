// WindowOrder: every epoch a permutation, a function of (layout, seed, W, epoch) alone, stored
// order without shuffling, and batches as class-diverse as a full shuffle on a label-sorted
// dataset (the worst case for chunk-level shuffling; FFCV's quasi-random order falls short there).
#include "pipeline/order/window_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>
#include <vector>

#include "pipeline/order/epoch_order.h"
#include "tests/pipeline/order_testing.h"

namespace rf {
namespace {

// `samples` samples in chunks of `per_chunk` (the last one shorter).
std::vector<uint32_t> Layout(uint64_t samples, uint32_t per_chunk) {
  std::vector<uint32_t> chunks(samples / per_chunk, per_chunk);
  if (samples % per_chunk) chunks.push_back(static_cast<uint32_t>(samples % per_chunk));
  return chunks;
}

bool IsPermutation(std::vector<uint64_t> v, uint64_t n) {
  if (v.size() != n) return false;
  std::sort(v.begin(), v.end());
  for (uint64_t i = 0; i < n; ++i) {
    if (v[i] != i) return false;
  }
  return true;
}

TEST(WindowOrder, EveryEpochVisitsEverySampleExactlyOnce) {
  for (uint32_t window : {1u, 3u, 7u, 64u}) {
    const WindowOrder order(Layout(1003, 37), testing::Order(true, window, 2, 5));
    ASSERT_EQ(order.sample_count(), 1003u);
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      EXPECT_TRUE(IsPermutation(order.EpochSamples(epoch), 1003)) << "W " << window;
    }
  }
}

TEST(WindowOrder, IsAFunctionOfSeedWindowAndEpochAlone) {
  const WindowOrder a(Layout(5000, 100), testing::Order(true, 4, 2, 9)),
      b(Layout(5000, 100), testing::Order(true, 4, 2, 9));
  EXPECT_EQ(a.EpochSamples(2), b.EpochSamples(2));
  EXPECT_NE(a.EpochSamples(2), a.EpochSamples(3));
  const WindowOrder other_seed(Layout(5000, 100), testing::Order(true, 4, 2, 10));
  EXPECT_NE(a.EpochSamples(2), other_seed.EpochSamples(2));
  const WindowOrder other_window(Layout(5000, 100), testing::Order(true, 5, 2, 9));
  EXPECT_NE(a.EpochSamples(2), other_window.EpochSamples(2));
}

TEST(WindowOrder, ShuffleOffIsStoredOrder) {
  const WindowOrder order(Layout(1000, 64), testing::Order(false, 4, 2, 9));
  std::vector<uint64_t> stored(1000);
  std::iota(stored.begin(), stored.end(), uint64_t{0});
  EXPECT_EQ(order.EpochSamples(0), stored);
  EXPECT_EQ(order.EpochSamples(7), stored);
}

TEST(WindowOrder, WindowsHoldTheirChunksSamplesOnly) {
  OrderSettings o = testing::Order(true, 4, 2, 2);  // W = 4; each epoch's first window: 2 chunks
  const WindowOrder order(Layout(1000, 30), o);     // 34 chunks: windows of 2, 4 x 8
  EXPECT_EQ(order.windows_per_epoch(), 9u);
  const EpochLayout layout = order.Layout(1);
  uint64_t total = 0;
  for (uint64_t w = 0; w < order.windows_per_epoch(); ++w) {
    EXPECT_EQ(order.WindowChunks(w), w == 0 ? 2u : 4u) << w;
    EXPECT_EQ(order.WindowStart(w), w == 0 ? 0u : 2 + 4 * (w - 1)) << w;
    const auto entries = order.Window(layout, w);
    EXPECT_EQ(entries.size(), order.WindowSamples(layout, w));
    std::set<uint32_t> chunks_seen;
    for (const auto& e : entries) {
      ASSERT_LT(e.chunk_in_window, order.WindowChunks(w));
      chunks_seen.insert(e.chunk_in_window);
    }
    EXPECT_EQ(chunks_seen.size(), order.WindowChunks(w));
    total += entries.size();
  }
  EXPECT_EQ(total, 1000u);
}

// Mean number of distinct classes per batch of `batch` over an order of a label-sorted dataset.
double DistinctPerBatch(const std::vector<uint64_t>& order, uint64_t n, uint32_t classes,
                        uint32_t batch) {
  double sum = 0;
  uint64_t batches = 0;
  for (uint64_t at = 0; at + batch <= order.size(); at += batch) {
    std::set<uint64_t> seen;
    for (uint64_t i = at; i < at + batch; ++i) seen.insert(order[i] * classes / n);
    sum += seen.size();
    ++batches;
  }
  return sum / batches;
}

// The bar: at least 90% of a full shuffle's class diversity on a dataset sorted by label.
// CIFAR-shaped uint8 in 4 MiB chunks (1364 samples each), 10 classes, the default window.
TEST(WindowOrder, LabelSortedDatasetGetsNinetyPercentOfAFullShufflesClassDiversity) {
  const uint64_t n = 1000000;
  OrderSettings defaults;  // seed 1
  const WindowOrder order(Layout(n, 1364), defaults);
  for (uint32_t batch : {128u, 256u}) {
    const double window = DistinctPerBatch(order.EpochSamples(0), n, 10, batch);
    const double full = DistinctPerBatch(EpochOrder(n, 1, 0), n, 10, batch);
    std::printf("batch %u: %.3f distinct classes per batch, full shuffle %.3f: %.1f%%\n", batch,
                window, full, 100 * window / full);
    EXPECT_GE(window, 0.9 * full) << "batch " << batch;
  }
}

}  // namespace
}  // namespace rf
