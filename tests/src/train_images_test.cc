// `ringfeed train` on image records: the CNN trains at --image-size (3 channels) with the
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

// `data` trained 2 epochs straight into checkpoint `straight`, and again stopped at step 9
// (epoch 2, mid-way: 6 steps an epoch) into `ck`, then resumed from it at --image-size
// `resume_size`; the resumed run's output in *out.
void TrainStraightAndResumed(const TempDir& t, const std::string& data, std::string* out,
                             const std::string& resume_size = "24") {
  ASSERT_EQ(RunCommand(TrainJpegs(data, "--epochs 2 --checkpoint " + t.File("straight")), out), 0)
      << *out;
  ASSERT_EQ(
      RunCommand(TrainJpegs(data, "--epochs 2 --max-steps 9 --checkpoint " + t.File("ck")), out), 0)
      << *out;
  ASSERT_EQ(
      RunCommand(
          TrainJpegs(data, "--epochs 2 --resume " + t.File("ck") + " --checkpoint " + t.File("ck"),
                     resume_size),
          out),
      0)
      << *out;
}

// Checkpoints `a` and `b` end at the same step with the same parameters and momentum, bit for
// bit.
void ExpectSameEnd(const std::string& a, const std::string& b) {
  auto x = ReadCheckpoint(a);
  auto y = ReadCheckpoint(b);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(x->step, y->step);
  EXPECT_TRUE(testing::BitIdentical(x->params, y->params));
  EXPECT_TRUE(testing::BitIdentical(x->momentum, y->momentum));
}

TEST(TrainImages, TrainsAtTheImageSizeAndEvaluatesCentreCrops) {
  TempDir t;
  const std::string data = JpegData(t, "train.rfd");
  std::string out;
  ASSERT_EQ(RunCommand(TrainJpegs(data, "--epochs 2 --test " + data), &out), 0) << out;
  EXPECT_NE(out.find("96 samples, model 3x24x24, 4 classes"), std::string::npos) << out;
  EXPECT_NE(out.find("images 24x24 (random resized crop and flip), image decode on 2 CPU threads"),
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
  TrainStraightAndResumed(t, data, &out);
  ExpectSameEnd(t.File("straight"), t.File("ck"));
}

TEST(TrainImages, AResumeTakesTheCheckpointsImageSizeNamingTheFlagItOverrides) {
  TempDir t;
  const std::string data = JpegData(t, "train.rfd");
  std::string out;
  // Resumed at --image-size 20: the checkpoint's 24 wins, said in one line, and the run goes on
  // with its crops at 24 (bit-identical to the run never stopped).
  TrainStraightAndResumed(t, data, &out, "20");
  EXPECT_NE(out.find("ringfeed train: --image-size 20 given, but --resume " + t.File("ck") +
                     " continues its run with --image-size 24 (the checkpoint's wins)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("model 3x24x24"), std::string::npos) << out;
  ExpectSameEnd(t.File("straight"), t.File("ck"));
  // Without --image-size (its default 224 not given): the checkpoint's, and no line.
  ASSERT_EQ(
      RunCommand(TrainJpegs(data, "--epochs 2 --max-steps 9 --checkpoint " + t.File("ck2")), &out),
      0)
      << out;
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " train --data " + data +
                           " --device cpu --image-threads 2 --conv 4,8 --hidden 16 --epochs 2 "
                           "--resume " +
                           t.File("ck2") + " --checkpoint " + t.File("ck2"),
                       &out),
            0)
      << out;
  EXPECT_EQ(out.find("--image-size"), std::string::npos) << out;
  ExpectSameEnd(t.File("straight"), t.File("ck2"));
}

TEST(TrainImages, AMixtureOfJpegDatasetsTrainsAndResumesBitIdentical) {
  TempDir t;
  const std::vector<std::vector<uint8_t>> jpegs = testing::MakeJpegs(96);
  const std::string a = t.File("a.rfd"), b = t.File("b.rfd");
  ASSERT_TRUE(testing::WriteJpegDataset(a, {jpegs.begin(), jpegs.begin() + 56}, 4, 32768).ok());
  ASSERT_TRUE(testing::WriteJpegDataset(b, {jpegs.begin() + 56, jpegs.end()}, 4, 32768).ok());
  const std::string data = a + "," + b + " --weights 0.7,0.3";
  std::string out;
  // Stopped mid-epoch (the image stage had decoded ahead of step 9), then resumed.
  TrainStraightAndResumed(t, data, &out);
  EXPECT_NE(out.find("96 samples, model 3x24x24, 4 classes"), std::string::npos) << out;
  EXPECT_NE(out.find("mixture of 2 datasets by weight (0.7, 0.3)"), std::string::npos) << out;
  EXPECT_NE(out.find("images 24x24 (random resized crop and flip)"), std::string::npos) << out;
  ExpectSameEnd(t.File("straight"), t.File("ck"));
  auto x = ReadCheckpoint(t.File("straight"));
  auto y = ReadCheckpoint(t.File("ck"));
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(x->datasets.size(), 2u);
  EXPECT_EQ(x->mixture.steps, y->mixture.steps);
  EXPECT_EQ(x->mixture.drawn, y->mixture.drawn);
  // Datasets whose class lists differ are no mixture.
  const std::string cats = t.File("cats.rfd"), owls = t.File("owls.rfd");
  const std::vector<std::vector<uint8_t>> some(jpegs.begin(), jpegs.begin() + 20);
  ASSERT_TRUE(testing::WriteJpegDataset(cats, some, 2, 32768, {}, {"cat", "dog"}).ok());
  ASSERT_TRUE(testing::WriteJpegDataset(owls, some, 2, 32768, {}, {"cat", "owl"}).ok());
  EXPECT_EQ(RunCommand(TrainJpegs(cats + "," + owls + " --weights 1,1", "--epochs 1"), &out), 2)
      << out;
  EXPECT_NE(out.find("--data: " + owls + ": holds other classes than " + cats +
                     ": its class 1 is \"owl\", not \"dog\""),
            std::string::npos)
      << out;
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
  EXPECT_NE(out.find(": record 37 (sample 37 of the dataset), an image record of " +
                     std::to_string(cut.size()) +
                     " bytes, does not decode: JPEG: libjpeg-turbo: Premature end of JPEG file; "
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
  EXPECT_NE(out.find("record 37): JPEG: libjpeg-turbo: Premature end of JPEG file\nepoch 1/2"),
            std::string::npos)
      << out;
}

TEST(TrainImages, WhatJpegRecordsRefuseIsAUsageError) {
  TempDir t;
  const std::string data = JpegData(t, "train.rfd");
  std::string out;
  EXPECT_EQ(RunCommand(TrainJpegs(data, "--augment flip"), &out), 2) << out;
  EXPECT_NE(out.find("--augment flip: image records are decoded with their own random "
                     "resized crop and flip; leave --augment out"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCommand(TrainJpegs(data, "", "0"), &out), 2) << out;
  EXPECT_NE(out.find("cannot train on it: it holds image records, which --image-size 0 "
                     "leaves undecoded"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCommand(TrainJpegs(data, "", "70000"), &out), 2) << out;
  EXPECT_NE(out.find("--image-size"), std::string::npos) << out;
}

}  // namespace
}  // namespace rf
