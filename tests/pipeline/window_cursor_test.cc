// WindowCursor: the walk both sources make through an epoch's WindowOrder. Started at any
// position it continues exactly where a walk from the epoch's start would be; walked window by
// window by hand (as the streaming source does, entering a window only once its chunks are in),
// it gives the same samples as Step.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "pipeline/order/window_order.h"
#include "tests/pipeline/order_testing.h"

namespace rf {
namespace {

std::vector<uint64_t> Walk(WindowCursor c) {
  std::vector<uint64_t> out;
  WindowCursor::Sample s;
  while (c.Step(&s)) out.push_back(s.chunk * 1000 + s.sample);
  return out;
}

TEST(WindowCursor, StartedAtAnyPositionContinuesTheWalkFromTheEpochsStart) {
  // 20 chunks of 37 samples and a short one; windows of 3 chunks after a first window of 2; one
  // rank, and rank 2 of 3 (whose last window holds the shared chunks too).
  std::vector<uint32_t> layout(20, 37);
  layout.push_back(5);
  for (auto [shuffle, rank, world] : {std::tuple{true, 0u, 1u}, std::tuple{false, 0u, 1u},
                                      std::tuple{true, 2u, 3u}, std::tuple{false, 2u, 3u}}) {
    const WindowOrder order(layout, testing::Order(shuffle, 3, 2, 9, rank, world));
    for (uint64_t epoch : {0u, 4u}) {
      WindowCursor from_start(order);
      from_start.Start(epoch, 0);
      const std::vector<uint64_t> all = Walk(from_start);
      ASSERT_EQ(all.size(), order.EpochSampleCount());
      for (uint64_t p = 0; p <= all.size(); p += (p % 37 == 36 ? 1 : 5)) {
        WindowCursor c(order);
        c.Start(epoch, p);
        const std::vector<uint64_t> rest = Walk(c);
        ASSERT_EQ(rest, std::vector<uint64_t>(all.begin() + p, all.end()))
            << "shuffle " << shuffle << " world " << world << " epoch " << epoch << " position "
            << p;
      }
    }
  }
}

TEST(WindowCursor, WindowByWindowByHandGivesWhatStepGives) {
  // One rank: 11 x 13 samples. Rank 1 of 3: 3 dealt chunks, the other 2 shared (26 samples, 9
  // of them this rank's).
  for (auto [rank, world, samples] : {std::tuple{0u, 1u, 143u}, std::tuple{1u, 3u, 48u}}) {
    const WindowOrder order(std::vector<uint32_t>(11, 13),
                            testing::Order(true, 4, 1, 3, rank, world));
    WindowCursor stepped(order);
    stepped.Start(2, 0);
    WindowCursor by_hand(order);
    by_hand.Start(2, 0);
    std::vector<uint64_t> hand;
    uint64_t windows = 1;
    for (;;) {
      if (by_hand.AtWindowEnd()) {
        if (by_hand.InLastWindow()) break;
        by_hand.EnterWindow(by_hand.window() + 1);
        ++windows;
      }
      const WindowCursor::Sample s = by_hand.Take();
      EXPECT_EQ(by_hand.epoch_chunks()[order.WindowStart(by_hand.window()) + s.chunk_in_window],
                s.chunk);
      hand.push_back(s.chunk * 1000 + s.sample);
    }
    EXPECT_EQ(windows, order.windows_per_epoch());
    EXPECT_EQ(hand, Walk(stepped));
    EXPECT_EQ(hand.size(), samples);
  }
}

}  // namespace
}  // namespace rf
