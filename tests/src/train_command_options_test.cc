// `ringfeed train` and `ringfeed read` as a user meets their options: the bounds declared once
// and refused before anything is allocated (issue 23's C1, H2), the dataset as a bare word, the
// augmentation against the images, a resumed run naming each flag its checkpoint overrides, and
// values a checkpoint brings held to the same bounds.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

// Issue 23, C1: --queue-depth 4294967295 aborted with std::bad_alloc; 65536 said "io_uring
// unavailable" and fell back to pread. Both are refused naming io_uring's bound.
TEST(TrainCommandOptions, QueueDepthPastIoUringsBoundIsRefusedInEveryCommand) {
  TempDir t;
  const std::string data = MakeDataset(t);
  for (const char* depth : {"4294967295", "65536", "32769"}) {
    std::string out;
    EXPECT_EQ(RunCommand(Train(data, std::string("--queue-depth ") + depth), &out), 2);
    EXPECT_EQ(out, "ringfeed train: --queue-depth must be a whole number from 1 to 32768, got " +
                       std::string(depth) + "\n");
    EXPECT_EQ(
        RunCommand(ProgramPath("ringfeed") + " read " + data + " --queue-depth " + depth, &out), 2);
    EXPECT_EQ(out, "ringfeed read: --queue-depth must be a whole number from 1 to 32768, got " +
                       std::string(depth) + "\n");
  }
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, "--queue-depth 32768 --io pread --max-steps 1"), &out), 0)
      << out;
  EXPECT_EQ(out.find("io_uring unavailable"), std::string::npos) << out;
}

// Issue 23, H2: --config /dev/zero grew memory without bound; a directory was an empty file.
TEST(TrainCommandOptions, ConfigThatIsNoTextFileIsRefused) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, "--config /dev/zero"), &out), 2);
  EXPECT_EQ(out, "ringfeed train: --config /dev/zero is not a text file: byte 0 is '\\x00'\n");
  EXPECT_EQ(RunCommand(Train(data, "--config " + t.path()), &out), 2);
  EXPECT_EQ(out, "ringfeed train: --config " + t.path() + " is a directory\n");
}

// Issue 26, item 7: a bare dataset got "no --data given".
TEST(TrainCommandOptions, BareDatasetIsTheData) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " train " + data +
                           " --device cpu --conv 4,8 --hidden 16 --max-steps 2",
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("ringfeed train: " + data + ": 300 samples"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " train " + data + " --data " + data, &out), 2);
  EXPECT_EQ(out, "ringfeed train: --data given twice (the second time as --data)\n");
}

// Issue 23, W3 and accepted item 8: a crop padding past the 12x12 images was accepted (every
// image became padding), and crop:0x4 was read as hex while crop:+4 was refused.
TEST(TrainCommandOptions, CropPastTheImageAndNonDecimalCropsAreRefused) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, "--augment crop:12,flip"), &out), 2);
  EXPECT_EQ(out,
            "ringfeed: --augment crop:12,flip: a crop padding of 12 pixels is not below the 12x12 "
            "images' side, so every crop would be padding only; at most 11\n");
  for (const char* spec : {"crop:0x4", "crop:+4", "crop:4.0", "crop: 4"}) {
    EXPECT_EQ(RunCommand(Train(data, std::string("--augment '") + spec + "'"), &out), 2) << spec;
    EXPECT_NE(out.find("crop needs a padding in pixels, a whole number from 1 to 1024"),
              std::string::npos)
        << spec << ": " << out;
  }
  EXPECT_EQ(RunCommand(Train(data, "--augment crop:11 --max-steps 1"), &out), 0) << out;
}

// Issue 23, accepted item 7: --drop-last with a batch larger than the dataset trained 0 steps,
// printed "loss 0.0000" and exited 0.
TEST(TrainCommandOptions, DropLastThatDropsEveryBatchIsRefused) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " train " + data +
                           " --device cpu --conv 4,8 --hidden 16 --batch-size 301 --drop-last",
                       &out),
            2);
  EXPECT_EQ(out,
            "ringfeed: --drop-last with --batch-size 301 drops every batch: an epoch holds 300 "
            "samples; leave --drop-last out or take a smaller batch\n");
}

// Issue 23, accepted item 1: --resume took the checkpoint's settings over conflicting flags
// without a word. Each flag it overrides is named with the value that wins; a flag it agrees
// with is not.
TEST(TrainCommandOptions, ResumeNamesEachFlagTheCheckpointOverrides) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(
      RunCommand(Train(data, "--max-steps 2 --lr 0.05 --augment flip --checkpoint " + t.File("a")),
                 &out),
      0)
      << out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 3 --lr 0.1 --shuffle none --resume " + t.File("a") +
                                       " --checkpoint " + t.File("a")),
                       &out),
            0)
      << out;
  const std::string resume = "given, but --resume " + t.File("a") + " continues its run with ";
  EXPECT_NE(out.find("ringfeed train: --lr 0.1 " + resume + "--lr 0.05 (the checkpoint's wins)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("ringfeed train: --shuffle none " + resume +
                     "--shuffle window (the checkpoint's wins)\n"),
            std::string::npos)
      << out;
  // --seed 9 and --batch-size 32 (Train's) agree with the checkpoint; --augment was not given.
  EXPECT_EQ(out.find("--seed 9 given"), std::string::npos) << out;
  EXPECT_EQ(out.find("--batch-size 32 given"), std::string::npos) << out;
  EXPECT_EQ(out.find("--augment"), std::string::npos) << out;
}

// The lines a run printed that name a flag its --resume checkpoint overrode.
std::vector<std::string> OverrideLines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" given, but --resume ") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// Issue 28, item 4: each flag of the optimizer, the schedule or the augmentation that disagrees
// with the checkpoint is one line naming the flag, both values and that the checkpoint's wins
// (a flag the checkpoint's optimizer makes do nothing is named with that optimizer), in the
// options' order; none where the flags agree with it or are not given.
TEST(TrainCommandOptions, ResumeNamesEachOptimizerScheduleAndAugmentConflictExactly) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string ck = t.File("ck");
  const std::string run =
      "--optimizer adamw --lr 0.003 --lr-schedule cosine --warmup-epochs 0.5 "
      "--augment flip --label-smoothing 0.1";
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, run + " --epochs 2 --max-steps 3 --checkpoint " + ck), &out), 0)
      << out;
  int steps = 3;
  auto resume = [&](const std::string& flags) {
    steps += 1;
    EXPECT_EQ(RunCommand(Train(data, "--epochs 2 --max-steps " + std::to_string(steps) +
                                         " --resume " + ck + " --checkpoint " + ck + " " + flags),
                         &out),
              0)
        << out;
    return OverrideLines(out);
  };
  const std::string but = " given, but --resume " + ck + " continues its run with ";
  EXPECT_EQ(
      resume("--momentum 0.5 --lr 0.1 --lr-schedule step --warmup-epochs 1 --augment crop:2 "
             "--label-smoothing 0"),
      (std::vector<std::string>{
          "ringfeed train: --lr 0.1" + but + "--lr 0.003 (the checkpoint's wins)",
          "ringfeed train: --momentum 0.5" + but +
              "--optimizer adamw, where --momentum does nothing (the checkpoint's wins)",
          "ringfeed train: --label-smoothing 0" + but +
              "--label-smoothing 0.1 (the checkpoint's wins)",
          "ringfeed train: --lr-schedule step" + but +
              "--lr-schedule cosine (the checkpoint's wins)",
          "ringfeed train: --warmup-epochs 1" + but + "--warmup-epochs 0.5 (the checkpoint's wins)",
          "ringfeed train: --augment crop:2" + but + "--augment flip (the checkpoint's wins)",
      }));
  EXPECT_EQ(resume("--optimizer sgd"),
            (std::vector<std::string>{"ringfeed train: --optimizer sgd" + but +
                                      "--optimizer adamw (the checkpoint's wins)"}));
  EXPECT_EQ(resume(run), std::vector<std::string>{});  // every flag as the checkpoint holds it
  EXPECT_EQ(resume(""), std::vector<std::string>{});   // none given
}

// Issue 23, accepted item 11: momentum 5 was accepted from the command line and from a checkpoint.
// SGD's momentum is bounded to [0, 1] (above 1 the velocity grows without bound for any steady
// gradient; PyTorch takes it, no run trains with it), from both.
TEST(TrainCommandOptions, MomentumPastOneIsRefusedFromTheFlagAndFromACheckpoint) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, "--momentum 5"), &out), 2);
  EXPECT_EQ(out, "ringfeed train: --momentum must be a number in [0, 1], got 5\n");
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 2 --checkpoint " + t.File("a")), &out), 0) << out;
  Result<Checkpoint> c = ReadCheckpoint(t.File("a"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  c->optimizer.momentum = 5;
  ASSERT_TRUE(WriteCheckpoint(t.File("b"), *c).ok());
  EXPECT_EQ(RunCommand(Train(data, "--resume " + t.File("b")), &out), 2);
  EXPECT_EQ(out, "ringfeed: --momentum must be a number in [0, 1], got 5 (the value --resume " +
                     t.File("b") + " holds)\n");
}

// Issue 23, unclear messages: a forged checkpoint of world size 2^32-1 said only "out of memory".
TEST(TrainCommandOptions, CheckpointOfAnAbsurdWorldSizeIsNamed) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 3 --checkpoint " + t.File("a")), &out), 0) << out;
  Result<Checkpoint> c = ReadCheckpoint(t.File("a"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  c->order.world_size = 0xffffffffu;
  ASSERT_TRUE(WriteCheckpoint(t.File("b"), *c).ok());
  EXPECT_EQ(RunCommand(Train(data, "--resume " + t.File("b")), &out), 2);
  EXPECT_EQ(out,
            "ringfeed: stretch 1 of epoch 1: world size must be from 1 to 65536, got 4294967295 "
            "(the value --resume " +
                t.File("b") + " holds)\n");
}

// Issue 23, unclear messages: a resumed run that trains nothing names where the run stands: the
// checkpoint's own position.
TEST(TrainCommandOptions, ResumedRunThatTrainsNothingNamesTheCheckpointsPosition) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 3 --checkpoint " + t.File("a")), &out), 0) << out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 3 --resume " + t.File("a") + " --checkpoint " +
                                       t.File("a")),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("stopped by max-steps after step 3 (next: epoch 1, sample 96); no step "
                     "trained, so no checkpoint written"),
            std::string::npos)
      << out;
}

// Issue 26, item 7: the CPU run's lines printed "GPU memory 0.0 MiB".
TEST(TrainCommandOptions, CpuRunPrintsNoGpuMemory) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 1"), &out), 0) << out;
  EXPECT_NE(out.find("epoch 1/1: train loss"), std::string::npos) << out;
  EXPECT_EQ(out.find("GPU memory"), std::string::npos) << out;
}

}  // namespace
}  // namespace rf
