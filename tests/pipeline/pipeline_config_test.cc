// PipelineConfig's rank rule (one rule and one message for every command) and the rank reaching
// the order of both modes through OrderOptionsFor.
#include "pipeline/pipeline_config.h"

#include <gtest/gtest.h>

#if RINGFEED_HAVE_CUDA
#include "pipeline/managed_source.h"
#endif

namespace rf {
namespace {

PipelineConfig Config(uint32_t rank, uint32_t world_size) {
  PipelineConfig c;
  c.data = "d.rfd";
  c.rank = rank;
  c.world_size = world_size;
  return c;
}

TEST(PipelineConfig, RankOffTheRuleIsAUsageErrorNamingTheFlags) {
  EXPECT_TRUE(Config(0, 1).Validate().ok());
  EXPECT_TRUE(Config(6, 7).Validate().ok());
  const Status zero = Config(0, 0).Validate();
  EXPECT_TRUE(zero.IsUsage());
  EXPECT_EQ(zero.message(), "--world-size must be >= 1, got 0");
  const Status past = Config(4, 4).Validate();
  EXPECT_TRUE(past.IsUsage());
  EXPECT_EQ(past.message(), "--rank must be < --world-size (4), got 4");
  EXPECT_EQ(CheckRank(9, 2).message(), "--rank must be < --world-size (2), got 9");
}

TEST(PipelineConfig, RankReachesTheOrderOfBothModes) {
  const PipelineConfig c = Config(2, 5);
  EXPECT_EQ(OrderOptionsFor(c).rank, 2u);
  EXPECT_EQ(OrderOptionsFor(c).world_size, 5u);
  const StreamingOptions s = StreamingOptionsFor(c, 0);
  EXPECT_EQ(s.order.rank, 2u);
  EXPECT_EQ(s.order.world_size, 5u);
  EXPECT_EQ(s.epochs, 0u);  // open-ended
#if RINGFEED_HAVE_CUDA
  const ManagedOptions m = ManagedOptionsFor(c);
  EXPECT_EQ(m.order.rank, 2u);
  EXPECT_EQ(m.order.world_size, 5u);
#endif
  // The defaults: one rank, the whole epoch.
  EXPECT_EQ(PipelineConfig{}.rank, 0u);
  EXPECT_EQ(PipelineConfig{}.world_size, 1u);
}

}  // namespace
}  // namespace rf
