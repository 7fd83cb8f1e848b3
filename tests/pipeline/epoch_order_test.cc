// EpochOrder (pipeline/order/epoch_order.h): the seeded permutation the window order draws from.
#include "pipeline/order/epoch_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace rf {
namespace {

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

}  // namespace
}  // namespace rf
