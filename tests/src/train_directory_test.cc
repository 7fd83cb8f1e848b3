// `ringfeed train --data DIR` on a directory of datasets (io/dataset.h: its parts read as one,
// in name order) as on one file: each epoch's order is WindowOrder's over the directory's chunk
// sample counts, a run resumed from a checkpoint (mid-epoch, across a part boundary) ends
// bit-identical to a straight run, and a checkpoint refuses the directory once its parts change.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/order_settings.h"
#include "io/dataset.h"
#include "model/checkpoint.h"
#include "pipeline/order/window_order.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

// Three parts of 130, 70 and 100 samples (56 a chunk): 300 samples, 10 steps of 32 an epoch;
// parts start at samples 130 and 200, in chunks 3 and 5.
void WriteParts(const TempDir& t) {
  MakeDataset(t, 130, {}, "p0.rfd");
  MakeDataset(t, 70, {}, "p1.rfd");
  MakeDataset(t, 100, {}, "p2.rfd");
}

// The epochs of an order file (--dump-order), each its samples.
std::vector<std::vector<uint64_t>> DumpedEpochs(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<uint64_t>> epochs;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# epoch ", 0) == 0) {
      epochs.emplace_back();
    } else if (!epochs.empty()) {
      epochs.back().push_back(std::stoull(line));
    }
  }
  return epochs;
}

TEST(TrainDirectory, EachEpochIsTheOrderOfItsChunkSampleCounts) {
  TempDir t, out_dir;
  WriteParts(t);
  auto d = Dataset::Open(t.path());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->ChunkSampleCounts(), (std::vector<uint32_t>{56, 56, 18, 56, 14, 56, 44}));
  std::string out;
  ASSERT_EQ(RunCommand(Train(t.path(),
                             "--epochs 2 --shuffle-window 2 --dump-order " + out_dir.File("order")),
                       &out),
            0)
      << out;
  OrderSettings o;  // what the flags ask for, the rest train's defaults
  o.seed = 9;
  o.shuffle_window = 2;
  const WindowOrder order(d->ChunkSampleCounts(), o);
  const std::vector<std::vector<uint64_t>> epochs = DumpedEpochs(out_dir.File("order"));
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0], order.EpochSamples(0));
  EXPECT_EQ(epochs[1], order.EpochSamples(1));
}

TEST(TrainDirectory, AResumedRunEndsBitIdenticalToAStraightRun) {
  TempDir t, c;
  WriteParts(t);
  for (const std::string shuffle : {"--shuffle none", "--shuffle-window 2"}) {
    SCOPED_TRACE(shuffle);
    std::string out;
    const std::string run = "--epochs 3 --overwrite " + shuffle;
    // 14 steps: epoch 1's position 128, so the next batch spans part 0's end (130) in stored
    // order.
    ASSERT_EQ(
        RunCommand(Train(t.path(), run + " --max-steps 25 --checkpoint " + c.File("a")), &out), 0)
        << out;
    ASSERT_EQ(
        RunCommand(Train(t.path(), run + " --max-steps 14 --checkpoint " + c.File("b")), &out), 0)
        << out;
    ASSERT_EQ(RunCommand(Train(t.path(), "--epochs 3 --max-steps 25 --overwrite --resume " +
                                             c.File("b") + " --checkpoint " + c.File("c")),
                         &out),
              0)
        << out;
    EXPECT_NE(out.find("resumed from " + c.File("b")), std::string::npos) << out;
    auto a = ReadCheckpoint(c.File("a")), b = ReadCheckpoint(c.File("b")),
         r = ReadCheckpoint(c.File("c"));
    ASSERT_TRUE(a.ok() && b.ok() && r.ok());
    EXPECT_EQ(b->epoch, 1u);
    EXPECT_EQ(b->next_sample, 128u);
    EXPECT_EQ(r->step, 25u);
    EXPECT_EQ(r->epoch, a->epoch);
    EXPECT_EQ(r->next_sample, a->next_sample);
    EXPECT_TRUE(testing::BitIdentical(a->params, r->params));
    EXPECT_TRUE(testing::BitIdentical(a->momentum, r->momentum));
  }
}

// The checkpoint records the dataset id, a directory's derived from its parts' in order: another
// part, or the same parts in another order (the same sample count), is another dataset.
TEST(TrainDirectory, ACheckpointRefusesTheDirectoryOnceItsPartsChange) {
  TempDir t, c;
  WriteParts(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(t.path(), "--max-steps 3 --checkpoint " + c.File("ck")), &out), 0)
      << out;
  const std::string refused =
      "ringfeed: " + c.File("ck") + ": checkpoint was trained on another dataset than " + t.path();
  std::filesystem::rename(t.File("p0.rfd"), t.File("p9.rfd"));  // now last
  EXPECT_EQ(RunCommand(Train(t.path(), "--max-steps 4 --resume " + c.File("ck")), &out), 1);
  EXPECT_NE(out.find(refused), std::string::npos) << out;
  std::filesystem::rename(t.File("p9.rfd"), t.File("p0.rfd"));
  MakeDataset(t, 20, {}, "p3.rfd");
  EXPECT_EQ(RunCommand(Train(t.path(), "--max-steps 4 --resume " + c.File("ck")), &out), 1);
  EXPECT_NE(out.find(refused), std::string::npos) << out;
  std::filesystem::remove(t.File("p3.rfd"));  // as it was: resumed
  EXPECT_EQ(RunCommand(Train(t.path(), "--max-steps 4 --resume " + c.File("ck")), &out), 0) << out;
}

}  // namespace
}  // namespace rf
