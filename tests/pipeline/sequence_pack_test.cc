// The packing of SequenceLoader (pipeline/sequences/sequence_loader.h) done each way gives the same
// batches, bit for bit: the GPU's way (the ids packed narrow, then widened with the pad and the
// position_ids built from cu_seqlens: SequenceOptions::pack_narrow runs it on the host) against
// the host's (packed whole), and several packing threads against one; every case of
// tests/pipeline/sequence_testing.h. tests/pipeline/cuda_sequence_loader_test.cc compares the
// GPU's kernel with the host the same way.
#include <gtest/gtest.h>

#include "tests/pipeline/sequence_testing.h"

namespace rf {
namespace {

using testing::FirstDifference;
using testing::TakeBatches;

TEST(SequencePack, TheGpusWayOfPackingGivesTheHostsBatchesBitForBit) {
  testing::PackCorpora corpora;
  for (const auto& c : corpora.Cases(DeviceKind::kCpu)) {
    SCOPED_TRACE(c.name);
    const auto host = TakeBatches(c.data, c.options, c.batches);
    LoaderOptions narrow = c.options;
    narrow.sequence.pack_narrow = true;
    EXPECT_EQ(FirstDifference(host, TakeBatches(c.data, narrow, c.batches)), "");
    ASSERT_GE(host.size(), 2u);
    EXPECT_EQ(host[0].views.size(), 4u);
  }
}

TEST(SequencePack, PackingThreadsGiveOneThreadsBatches) {
  testing::PackCorpora corpora;
  for (const auto& c : corpora.Cases(DeviceKind::kCpu)) {
    if (c.options.sequence.pack_threads < 2) continue;
    SCOPED_TRACE(c.name);
    LoaderOptions one = c.options;
    one.sequence.pack_threads = 1;
    const auto want = TakeBatches(c.data, one, c.batches);
    EXPECT_EQ(FirstDifference(want, TakeBatches(c.data, c.options, c.batches)), "");
    LoaderOptions narrow = c.options;
    narrow.sequence.pack_narrow = true;
    EXPECT_EQ(FirstDifference(want, TakeBatches(c.data, narrow, c.batches)), "");
  }
}

TEST(SequencePack, AStateAtItsEpochsEndGivesTheSameEmptyBatchEachWay) {
  testing::PackCorpora corpora;
  const auto c = corpora.Cases(DeviceKind::kCpu)[0];
  const SequenceState end = corpora.AtEpochEnd(c.options);
  const auto host = TakeBatches(c.data, c.options, 3, testing::HostCopier, &end);
  ASSERT_EQ(host.size(), 3u);
  ASSERT_EQ(host[0].views.size(), 4u);
  EXPECT_EQ(host[0].shapes[0], (std::vector<int64_t>{0, 32}));
  EXPECT_EQ(host[0].shapes[2], (std::vector<int64_t>{1}));  // cu_seqlens {0}
  EXPECT_TRUE(host[1].views.empty());                       // the epoch's end
  LoaderOptions narrow = c.options;
  narrow.sequence.pack_narrow = true;
  EXPECT_EQ(FirstDifference(host, TakeBatches(c.data, narrow, 3, testing::HostCopier, &end)), "");
}

}  // namespace
}  // namespace rf
