// `ringfeed train` on image/jpeg records: the CNN trains at --image-size (3 channels) with the
// test split centre-cropped; a run resumed from a checkpoint ends bit-identical to one never
// stopped (the same crops); a bad record stops the run with one line naming file, chunk and
// record, or under --skip-bad-records is skipped and named at the epoch's end; what JPEG records
// refuse (--augment, --image-size 0).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/dataset.h"
#include "model/checkpoint.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/jpeg_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;

// 96 JPEGs (testing::MakeJpegs) in 4 classes, with `bad` replacing record `bad_index`.
std::string JpegData(const TempDir& t, const std::string& name, int64_t bad_index = -1,
                     std::vector<uint8_t> bad = {}) {
  std::vector<std::vector<uint8_t>> jpegs = testing::MakeJpegs(96);
  if (bad_index >= 0) jpegs[bad_index] = std::move(bad);
  EXPECT_TRUE(testing::WriteJpegDataset(t.File(name), jpegs, 4, 32768).ok());
  return t.File(name);
}

std::string TrainJpegs(const std::string& data, const std::string& extra,
                       const std::string& size = "24") {
  return ProgramPath("ringfeed") + " train --data " + data +
         " --device cpu --batch-size 16 --image-threads 2 --conv 4,8 --hidden 16 --seed 9 "
         "--image-size " +
         size + " " + extra;
}

TEST(TrainImages, TrainsAtTheImageSizeAndEvaluatesCentreCrops) {
  TempDir t;
  const std::string data = JpegData(t, "train.rfd");
  std::string out;
  ASSERT_EQ(RunCommand(TrainJpegs(data, "--epochs 2 --test " + data), &out), 0) << out;
  EXPECT_NE(out.find("96 samples, model 3x24x24, 4 classes"), std::string::npos) << out;
  EXPECT_NE(out.find("images 24x24 (random resized crop and flip), jpeg decode on 2 CPU threads"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("epoch 2/2: train loss"), std::string::npos) << out;
  EXPECT_NE(out.find("test accuracy"), std::string::npos) << out;
  EXPECT_EQ(out.find("skipped"), std::string::npos) << out;
}

TEST(TrainImages, AResumedRunEndsBitIdenticalToOneNeverStopped) {
  TempDir t;
  const std::string data = JpegData(t, "train.rfd");
  std::string out;
  ASSERT_EQ(RunCommand(TrainJpegs(data, "--epochs 2 --checkpoint " + t.File("straight")), &out), 0)
      << out;
  // Stopped at step 9 (epoch 2, mid-way: 6 steps an epoch), then resumed.
  ASSERT_EQ(
      RunCommand(TrainJpegs(data, "--epochs 2 --max-steps 9 --checkpoint " + t.File("ck")), &out),
      0)
      << out;
  ASSERT_EQ(RunCommand(TrainJpegs(data, "--epochs 2 --resume " + t.File("ck") + " --checkpoint " +
                                            t.File("ck")),
                       &out),
            0)
      << out;
  auto a = ReadCheckpoint(t.File("straight"));
  auto b = ReadCheckpoint(t.File("ck"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->step, b->step);
  EXPECT_TRUE(testing::BitIdentical(a->params, b->params));
  EXPECT_TRUE(testing::BitIdentical(a->momentum, b->momentum));
}

TEST(TrainImages, ABadRecordStopsTheRunNamingFileChunkAndRecord) {
  TempDir t;
  std::vector<uint8_t> cut = testing::MakeJpegs(96)[37];
  cut.resize(cut.size() / 2);
  const std::string data = JpegData(t, "bad.rfd", 37, cut);
  auto d = Dataset::Open(data);
  ASSERT_TRUE(d.ok());
  std::string out;
  EXPECT_EQ(RunCommand(TrainJpegs(data, "--epochs 1"), &out), 1) << out;
  const std::string line = "\nringfeed: " + data + ": chunk ";
  ASSERT_NE(out.find(line), std::string::npos) << out;
  EXPECT_NE(
      out.find(": record 37 (sample 37 of the dataset), a JPEG of " + std::to_string(cut.size()) +
               " bytes, does not decode: libjpeg-turbo: Premature end of JPEG file; "
               "skip_bad_records (--skip-bad-records) skips such records\n"),
      std::string::npos)
      << out;

  ASSERT_EQ(RunCommand(TrainJpegs(data, "--epochs 2 --skip-bad-records"), &out), 0) << out;
  for (const std::string epoch : {"1", "2"}) {
    EXPECT_NE(out.find("1 bad image record skipped in epoch " + epoch + ": sample 37 (" + data +
                       " chunk "),
              std::string::npos)
        << out;
  }
  EXPECT_NE(out.find("record 37): libjpeg-turbo: Premature end of JPEG file\nepoch 1/2"),
            std::string::npos)
      << out;
}

TEST(TrainImages, WhatJpegRecordsRefuseIsAUsageError) {
  TempDir t;
  const std::string data = JpegData(t, "train.rfd");
  std::string out;
  EXPECT_EQ(RunCommand(TrainJpegs(data, "--augment flip"), &out), 2) << out;
  EXPECT_NE(out.find("--augment flip: image/jpeg records are decoded with their own random "
                     "resized crop and flip; leave --augment out"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCommand(TrainJpegs(data, "", "0"), &out), 2) << out;
  EXPECT_NE(out.find("cannot train on it: it holds image/jpeg records, which --image-size 0 "
                     "leaves undecoded"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCommand(TrainJpegs(data, "", "70000"), &out), 2) << out;
  EXPECT_NE(out.find("--image-size"), std::string::npos) << out;
}

}  // namespace
}  // namespace rf
