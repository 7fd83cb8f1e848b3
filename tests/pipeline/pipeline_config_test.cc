// PipelineConfig's rank rule (one rule and one message for every command) and the rank reaching
// the order of both modes (their options' OrderSettings); a resumed epoch's stretches likewise,
// refused where no run could have trained them, and counted (EpochSamplesFor) before any loader
// is opened.
#include "pipeline/sources/pipeline_config.h"

#include <gtest/gtest.h>

#include <vector>

#if RINGFEED_HAVE_CUDA
#include "pipeline/sources/managed_source.h"
#endif

namespace rf {
namespace {

PipelineConfig Config(uint32_t rank, uint32_t world_size) {
  PipelineConfig c;
  c.data = "d.rfd";
  c.order.rank = rank;
  c.order.world_size = world_size;
  return c;
}

TEST(PipelineConfig, RankOffTheRuleIsAUsageErrorNamingTheFlags) {
  EXPECT_TRUE(Config(0, 1).Validate().ok());
  EXPECT_TRUE(Config(6, 7).Validate().ok());
  const Status zero = Config(0, 0).Validate();
  EXPECT_TRUE(zero.IsUsage());
  EXPECT_EQ(zero.message(), "--world-size must be a whole number from 1 to 65536, got 0");
  const Status past = Config(4, 4).Validate();
  EXPECT_TRUE(past.IsUsage());
  EXPECT_EQ(past.message(), "--rank must be < --world-size (4), got 4");
  EXPECT_EQ(CheckRank(9, 2).message(), "--rank must be < --world-size (2), got 9");
}

TEST(PipelineConfig, RankReachesTheOrderOfBothModes) {
  const PipelineConfig c = Config(2, 5);
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
  EXPECT_EQ(PipelineConfig{}.order.rank, 0u);
  EXPECT_EQ(PipelineConfig{}.order.world_size, 1u);
}

TEST(PipelineConfig, StretchesOffTheRuleAreUsageErrorsNamingTheStretch) {
  PipelineConfig c = Config(1, 2);
  c.order.resumed = {3, {{4, 10}, {0, 5}}};
  const Status zero = c.Validate();
  EXPECT_TRUE(zero.IsUsage());
  EXPECT_EQ(zero.message(), "stretch 2 of epoch 4: world size must be from 1 to 65536, got 0");
  // 10 chunks of 13 at 4 ranks: 2 dealt to each, and 2 shared (26 samples, 7 each): 33 per rank.
  const std::vector<uint32_t> layout(10, 13);
  c.order.resumed.stretches = {{4, 33}};
  EXPECT_TRUE(c.ValidateFor(layout).ok());
  c.order.resumed.stretches = {{4, 34}};
  const Status past = c.ValidateFor(layout);
  EXPECT_TRUE(past.IsUsage());
  EXPECT_EQ(past.message(),
            "stretch 1 of epoch 4 (world size 4): position 34 is past its 33 samples per rank");
  // Stopped at 0, stretch 1 leaves all 130 samples (its 2 padding entries left out): 44 per rank
  // of 3 for stretch 2.
  c.order.resumed.stretches = {{4, 0}, {3, 44}};
  EXPECT_TRUE(c.ValidateFor(layout).ok());
  c.order.resumed.stretches = {{4, 0}, {3, 45}};
  EXPECT_EQ(c.ValidateFor(layout).message(),
            "stretch 2 of epoch 4 (world size 3): position 45 is past its 44 samples per rank");
  // ValidateFor is Validate first.
  c.order.resumed.stretches = {{0, 0}};
  EXPECT_EQ(c.ValidateFor(layout).message(),
            "stretch 1 of epoch 4: world size must be from 1 to 65536, got 0");
}

TEST(PipelineConfig, EpochSamplesForCountsTheResumedEpochAloneAndRefusesWhatValidateForDoes) {
  // 10 chunks of 13 at 3 ranks: 3 dealt to each, 1 shared (13 samples, 5 each): 44 per rank.
  const std::vector<uint32_t> layout(10, 13);
  PipelineConfig c = Config(1, 3);
  EXPECT_EQ(c.EpochSamplesFor(layout, 0).value(), 44u);
  // Epoch 3 begun at 4 ranks and stopped at their 33rd and last sample: nothing is left of it.
  c.order.resumed = {3, {{4, 33}}};
  EXPECT_EQ(c.EpochSamplesFor(layout, 3).value(), 0u);
  EXPECT_EQ(c.EpochSamplesFor(layout, 4).value(), 44u);  // the next epoch is ordinary
  // Stopped at 0 instead: all 130 samples are left (the 2 padding entries left out), 44 a rank,
  // and with drop_last the full batches' 40 of them.
  c.order.resumed.stretches = {{4, 0}};
  EXPECT_EQ(c.EpochSamplesFor(layout, 3).value(), 44u);
  c.order.batch_size = 8;
  c.order.drop_last = true;
  EXPECT_EQ(c.EpochSamplesFor(layout, 3).value(), 40u);
  // A stretch no run could have trained: ValidateFor's error.
  c.order.resumed.stretches = {{4, 34}};
  const Result<uint64_t> past = c.EpochSamplesFor(layout, 3);
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(past.status().IsUsage());
  EXPECT_EQ(past.status().message(),
            "stretch 1 of epoch 4 (world size 4): position 34 is past its 33 samples per rank");
}

TEST(PipelineConfig, StretchesReachTheOrderOfBothModes) {
  PipelineConfig c = Config(2, 5);
  c.order.resumed = {7, {{3, 100}, {4, 20}}};
  const OrderSettings& o = StreamingOptionsFor(c, 0).order;
  EXPECT_EQ(o.resumed.epoch, 7u);
  ASSERT_EQ(o.resumed.stretches.size(), 2u);
  EXPECT_EQ(o.resumed.stretches[1].world_size, 4u);
  EXPECT_EQ(o.resumed.stretches[1].position, 20u);
#if RINGFEED_HAVE_CUDA
  EXPECT_EQ(ManagedOptionsFor(c).order.resumed.stretches.size(), 2u);
#endif
  EXPECT_TRUE(PipelineConfig{}.order.resumed.stretches.empty());  // no epoch resumed
}

}  // namespace
}  // namespace rf
