// `ringfeed train`'s errors as a user meets them: one line on stderr, exit 2 for a usage error (a
// bad or contradictory flag, flags that disagree with a checkpoint, an output onto an input) and
// 1 for a data or file error (a damaged or foreign checkpoint, a directory that takes no files).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "model/checkpoint.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

using testing::Documents;
using testing::MakeDataset;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;
using testing::WriteDocuments;

TEST(TrainCommand, ResumeWithAnotherModelExitsTwoNamingTheCheckpoint) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 2 --checkpoint " + t.File("a")), &out), 0) << out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " train --data " + data +
                           " --conv 4,8 --hidden 17 --resume " + t.File("a"),
                       &out),
            2);
  EXPECT_EQ(out, "ringfeed: " + t.File("a") +
                     ": checkpoint is of model 1x12x12, 4 classes, conv 4,8, hidden 16; asked "
                     "for 1x12x12, 4 classes, conv 4,8, hidden 17\n");
}

TEST(TrainCommand, DamagedCheckpointExitsOneNamingFileAndOffset) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 2 --checkpoint " + t.File("a")), &out), 0) << out;
  testing::Truncate(t.File("a"), 100);
  EXPECT_EQ(RunCommand(Train(data, "--resume " + t.File("a")), &out), 1);
  EXPECT_EQ(
      out.rfind("ringfeed: " + t.File("a") + ": at byte 100: checkpoint: file is truncated", 0), 0u)
      << out;
}

TEST(TrainCommand, ABadAugmentSpecIsAUsageErrorNamingTheOption) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, "--augment crop:4,spin"), &out), 2);
  EXPECT_EQ(out,
            "ringfeed train: --augment: 'spin': unknown transform 'spin' (expected a comma list of "
            "crop:P, flip, erase:P, e.g. crop:4,flip)\n");
  EXPECT_EQ(RunCommand(Train(data, "--augment erase:2"), &out), 2);
  EXPECT_NE(out.find("--augment: 'erase:2': erase needs a probability in (0, 1]"),
            std::string::npos)
      << out;
}

TEST(TrainCommand, UnknownDeviceOrPrecisionIsAUsageError) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string train = ProgramPath("ringfeed") + " train --data " + data;
  std::string out;
  EXPECT_EQ(RunCommand(train + " --device tpu", &out), 2);
  EXPECT_EQ(out, "ringfeed train: --device must be auto, cuda or cpu, got \"tpu\"\n");
  EXPECT_EQ(RunCommand(train + " --precision fp8", &out), 2);
  EXPECT_EQ(out, "ringfeed train: --precision must be bf16, tf32 or fp32, got \"fp8\"\n");
  EXPECT_EQ(RunCommand(train + " --cuda-graph maybe", &out), 2);
  EXPECT_EQ(out, "ringfeed train: --cuda-graph must be on or off, got 'maybe'\n");
}

// A checkpoint that is whole but does not belong to the run is a data error (exit 1), not a usage
// error: one of another dataset, one whose position is past the epoch's end.
TEST(TrainCommand, CheckpointOfAnotherDatasetOrPastTheEpochExitsOne) {
  TempDir t, other;
  const std::string data = MakeDataset(t), smaller = MakeDataset(other, 200);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 2 --checkpoint " + t.File("a")), &out), 0) << out;
  EXPECT_EQ(RunCommand(Train(smaller, "--resume " + t.File("a")), &out), 1);
  EXPECT_EQ(out, "ringfeed: " + t.File("a") + ": checkpoint was trained on another dataset than " +
                     smaller + "\n");
  auto c = ReadCheckpoint(t.File("a"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Past the dataset: the decoder refuses it (model/checkpoint.h).
  c->next_sample = 301;
  ASSERT_TRUE(WriteCheckpoint(t.File("past"), *c).ok());
  EXPECT_EQ(RunCommand(Train(data, "--resume " + t.File("past")), &out), 1);
  EXPECT_EQ(out, "ringfeed: " + t.File("past") +
                     ": at byte 72: checkpoint: next sample 301 is past the dataset's 300 "
                     "samples\n");
  // Inside the dataset but past this run's epoch (--drop-last trains 288 of the 300).
  c->next_sample = 290;
  ASSERT_TRUE(WriteCheckpoint(t.File("past"), *c).ok());
  EXPECT_EQ(RunCommand(Train(data, "--drop-last --resume " + t.File("past")), &out), 1);
  EXPECT_EQ(out.rfind("ringfeed: " + t.File("past") +
                          ": checkpoint position is past the end of the epoch\n",
                      0),
            0u)
      << out;
}

// No output may replace an input: each output flag onto the dataset is refused before anything
// is written, and the dataset keeps its bytes (and still trains).
TEST(TrainCommand, OutputOntoTheDataExitsTwoAndLeavesItUnchanged) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::vector<uint8_t> before = testing::ReadAll(data);
  std::string out;
  for (const std::string flag : {"--checkpoint", "--metrics", "--dump-order", "--trace"}) {
    SCOPED_TRACE(flag);
    EXPECT_EQ(RunCommand(Train(data, flag + " " + data), &out), 2);
    EXPECT_EQ(out, "ringfeed: " + flag + " " + data + " is --data's file " + data +
                       "; refusing to overwrite an input\n");
  }
  ASSERT_EQ(::symlink(data.c_str(), t.File("link").c_str()), 0);
  EXPECT_EQ(RunCommand(Train(data, "--test " + data + " --checkpoint " + t.File("link")), &out), 2);
  EXPECT_NE(out.find("(the same file by another name)"), std::string::npos) << out;
  EXPECT_EQ(testing::ReadAll(data), before);
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 1"), &out), 0) << out;
}

// A dataset of n samples of `shape` in `dtype` (zeros), with labels i % 4 or none.
std::string WriteShaped(const TempDir& t, const std::string& name, std::vector<uint64_t> shape,
                        DType dtype, bool labels) {
  DatasetSpec spec;
  spec.sample_dtype = dtype;
  spec.shape = std::move(shape);
  spec.has_labels = labels;
  auto w = DatasetWriter::Create(t.File(name), spec, {});
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  uint64_t bytes = DTypeSize(dtype);
  for (uint64_t d : spec.shape) bytes *= d;
  const std::vector<uint8_t> sample(bytes);
  for (uint8_t i = 0; i < 40; ++i) {
    const uint8_t label = i % 4;
    EXPECT_TRUE((*w)->Append(sample.data(), labels ? &label : nullptr, 1).ok());
  }
  EXPECT_TRUE((*w)->Finish().ok());
  return t.File(name);
}

// What the CNN cannot train (token rows, other shapes, no labels) is a usage error naming the
// dataset and why, before anything is set up.
TEST(TrainCommand, DatasetTheCnnCannotTrainExitsTwoNamingItAndWhy) {
  TempDir t;
  const std::string tokens = WriteShaped(t, "tok.rfd", {2048}, DType::kUInt16, false);
  std::string out;
  EXPECT_EQ(RunCommand(Train(tokens, ""), &out), 2);
  EXPECT_EQ(out, "ringfeed: --data " + tokens +
                     ": cannot train on it: its samples are uint16 ids; the CNN trains uint8, "
                     "float16, bfloat16 or float32 images\n");
  const std::string volumes = WriteShaped(t, "vol.rfd", {2, 4, 12, 12}, DType::kFloat32, true);
  EXPECT_EQ(RunCommand(Train(volumes, ""), &out), 2);
  EXPECT_EQ(out, "ringfeed: --data " + volumes +
                     ": cannot train on it: its samples have shape 2x4x12x12; the CNN trains "
                     "images of shape C,H,W or H,W\n");
  const std::string unlabeled = WriteShaped(t, "nl.rfd", {1, 12, 12}, DType::kUInt8, false);
  EXPECT_EQ(RunCommand(Train(unlabeled, ""), &out), 2);
  EXPECT_EQ(out, "ringfeed: --data " + unlabeled +
                     ": cannot train on it: it has no labels; the CNN trains a classifier\n");
  // The test split too; and an (H,W) dataset, one channel, trains.
  const std::string plane = WriteShaped(t, "hw.rfd", {12, 12}, DType::kUInt8, true);
  EXPECT_EQ(RunCommand(Train(plane, "--test " + tokens), &out), 2);
  EXPECT_EQ(out.rfind("ringfeed: --test " + tokens + ": cannot train on it: its samples are", 0),
            0u)
      << out;
  EXPECT_EQ(RunCommand(Train(plane, "--max-steps 1"), &out), 0) << out;
}

// Records of any size (format 2's tokens and bytes) are refused by kind, exit 2.
TEST(TrainCommand, RecordsOfAnySizeExitTwoNamingTheirKind) {
  TempDir t;
  ASSERT_TRUE(WriteDocuments(t.File("docs.rfd"), Documents(30, 50)).ok());
  std::string out;
  EXPECT_EQ(RunCommand(Train(t.File("docs.rfd"), ""), &out), 2);
  EXPECT_EQ(out, "ringfeed: --data " + t.File("docs.rfd") +
                     ": cannot train on it: it holds tokens records of any size; the CNN trains "
                     "fixed-shape image tensors (read them with ringfeed.Loader, which hands them "
                     "out as values and offsets)\n");
  // Samples of several fields: named by their fields.
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kFields;
  spec.fields = format::ParseFields("txt=tokens:uint16,cls=label").value();
  spec.num_classes = 2;
  auto w = DatasetWriter::Create(t.File("pairs.rfd"), spec, WriterOptions{});
  ASSERT_TRUE(w.ok());
  const std::vector<uint8_t> r = {2, 0, 0, 0, 7, 0};
  const uint64_t offsets[2] = {0, r.size()};
  const uint8_t label = 1;
  ASSERT_TRUE((*w)->AppendRecords(r.data(), offsets, &label, 1).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ(RunCommand(Train(t.File("pairs.rfd"), ""), &out), 2);
  EXPECT_NE(out.find("cannot train on it: it holds samples of several fields "
                     "(txt=tokens:uint16,cls=label)"),
            std::string::npos)
      << out;
}

// A checkpoint that could never be written stops the run at its start, not at its first
// checkpoint.
TEST(TrainCommand, CheckpointInAMissingDirectoryExitsOneBeforeTraining) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, "--checkpoint " + t.File("gone/c.ckpt")), &out), 1);
  EXPECT_EQ(out, "ringfeed: " + t.File("gone") + ": cannot create files in the directory of " +
                     "--checkpoint " + t.File("gone/c.ckpt") +
                     ": No such file or directory (errno 2)\n");
}

// A diverging run (defect 11: it used to train to "loss -nan", exit 0, and write a NaN
// checkpoint) stops at its first non-finite loss with exit 1 and one line saying so; the
// checkpoints it wrote before are finite (the reader refuses any other) and the last stays.
TEST(TrainCommand, DivergingRunExitsOneAndKeepsItsLastFiniteCheckpoint) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string ckpt = t.File("c.ckpt");
  std::string out;
  EXPECT_EQ(
      RunCommand(Train(data, "--lr 1e30 --epochs 5 --checkpoint " + ckpt + " --checkpoint-every 1"),
                 &out),
      1);
  EXPECT_NE(out.find("ringfeed: the training loss or its gradient is not finite (NaN or infinite), "
                     "in this batch: "
                     "the run diverged"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("nan,"), std::string::npos) << out;  // no epoch line with a NaN loss
  auto c = ReadCheckpoint(ckpt);
  ASSERT_TRUE(c.ok()) << c.status().ToString() << "\n" << out;
  EXPECT_GE(c->step, 1u);
}

// A flag that would do nothing in the chosen mode is refused naming it (before the mode's own
// needs, such as a GPU, are looked at), as is a value off its rule.
TEST(TrainCommand, FlagThatDoesNothingOrBadValueExitsTwoNamingIt) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string train = ProgramPath("ringfeed") + " train --data " + data;
  std::string out;
  EXPECT_EQ(RunCommand(train + " --mode managed --ring-slots 4", &out), 2);
  EXPECT_EQ(out,
            "ringfeed: --ring-slots does nothing with --mode managed (it sets the streaming reader "
            "and ring); leave it out\n");
  EXPECT_EQ(RunCommand(train + " --managed-prefetch 2", &out), 2);
  EXPECT_EQ(out,
            "ringfeed: --managed-prefetch does nothing with --mode streaming (managed mode only); "
            "leave it out\n");
  EXPECT_EQ(RunCommand(train + " --device cpu --cuda-graph off", &out), 2);
  EXPECT_EQ(out,
            "ringfeed: --cuda-graph does nothing with --device cpu (GPU only); leave it out\n");
  EXPECT_EQ(RunCommand(train + " --batch-size 0", &out), 2);
  EXPECT_EQ(out, "ringfeed train: --batch-size must be a whole number from 1 to 1048576, got 0\n");
  EXPECT_EQ(RunCommand(train + " --read-size 5000", &out), 2);
  EXPECT_EQ(out,
            "ringfeed train: --read-size must be a multiple of 4KiB from 4KiB to 1GiB, got "
            "5000\n");
}

TEST(TrainCommand, MissingDataIsAUsageError) {
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " train --epochs 1", &out), 2);
  EXPECT_NE(out.find("no dataset given: name it as DATA or --data DATA"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " train --data x.rfd --conv 8,x", &out), 2);
}

}  // namespace
}  // namespace rf
