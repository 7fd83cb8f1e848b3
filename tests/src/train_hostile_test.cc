// `ringfeed train` and `ringfeed read` against a hostile user (issue 15, defects 2, 3, 10 and
// 12): model sizes that overflow, negative values for unsigned flags, a directory as the data,
// forged datasets. Each ends in one line on stderr with exit 2 (usage) or 1 (data), never a
// signal.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/src/train_command_testing.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

std::string Ringfeed(const std::string& args) { return ProgramPath("ringfeed") + " " + args; }

// Defect 2: --hidden 4000000000 and --conv 65536,65536 aborted with bad_alloc. The widths are
// bounded where they are declared; a model of widths within them can still be too large.
TEST(TrainHostile, AModelTooLargeToSizeIsAUsageErrorNamingTheTensor) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string train = Ringfeed("train --device cpu --data " + data);
  std::string out;
  EXPECT_EQ(RunCommand(train + " --hidden 4000000000", &out), 2);
  EXPECT_EQ(out,
            "ringfeed train: --hidden must be a whole number from 1 to 65536, got 4000000000\n");
  EXPECT_EQ(RunCommand(train + " --conv 65536,65536", &out), 2);
  EXPECT_EQ(out,
            "ringfeed: the model is too large: conv1.weight (65536 x 65536 x 9) makes it "
            "more than 2147483647 parameters; use a smaller --hidden or --conv\n");
  EXPECT_EQ(RunCommand(train + " --conv 4 --batch-size 4000000000", &out), 2);
  EXPECT_EQ(out,
            "ringfeed train: --batch-size must be a whole number from 1 to 1048576, got "
            "4000000000\n");
}

// Defect 12: "--batch-size -5" said "max_batch 4294967291 is too large"; "read --passes -1" ran
// 4294967295 passes.
TEST(TrainHostile, NegativeValuesForUnsignedFlagsAreUsageErrorsNamingTheFlag) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(Ringfeed("train --device cpu --data " + data + " --batch-size -5"), &out),
            2);
  EXPECT_EQ(out,
            "ringfeed train: --batch-size must be a whole number from 1 to 1048576, got '-5'\n");
  EXPECT_EQ(RunCommand(Ringfeed("train --device cpu --data " + data + " --epochs=-1"), &out), 2);
  EXPECT_EQ(out,
            "ringfeed train: --epochs must be a whole number from 1 to 4294967295, got '-1'\n");
  {
    std::ofstream cfg(t.File("run.cfg"));
    cfg << "max-steps = -3\n";
  }
  EXPECT_EQ(
      RunCommand(Ringfeed("train --device cpu --data " + data + " --config " + t.File("run.cfg")),
                 &out),
      2);
  EXPECT_EQ(out, "ringfeed train: --config " + t.File("run.cfg") +
                     " line 1: --max-steps must be a whole number from 0 to 18446744073709551615, "
                     "got '-3'\n");
  EXPECT_EQ(RunCommand(Ringfeed("read " + data + " --passes -1"), &out), 2);
  EXPECT_EQ(out, "ringfeed read: --passes must be a whole number from 1 to 1000000, got '-1'\n");
  // --gpu is signed: -1 means "the local rank's GPU", and stays accepted.
  EXPECT_EQ(RunCommand(Ringfeed("train --data " + data +
                                " --conv 4,8 --hidden 16 --batch-size 32 --max-steps 1 --gpu -1"),
                       &out),
            0)
      << out;
}

// Defect 12: a directory as --data said "No such file". A directory is a dataset now (its
// datasets read as one, io/dataset.h); one without any says so, and what else is not a dataset
// is still named as what it is.
TEST(TrainHostile, ADirectoryWithoutADatasetAsTheDataIsNamedAsADirectory) {
  TempDir t;
  std::string out;
  EXPECT_EQ(RunCommand(Train(t.path(), "--max-steps 1"), &out), 1);
  EXPECT_EQ(out, "ringfeed: " + t.path() +
                     ": no dataset in this directory (a directory is read as the datasets in "
                     "it: .rfd files, or complete shard sets)\n");
  ASSERT_EQ(::mkdir(t.File("sub.rfd").c_str(), 0755), 0);  // named like a dataset, in it
  EXPECT_EQ(RunCommand(Train(t.path(), "--max-steps 1"), &out), 1);
  EXPECT_EQ(out, "ringfeed: " + t.File("sub.rfd") +
                     ": a directory, not a dataset (a .rfd file, or the base name of its "
                     "shards)\n");
}

// Defect 10: a label beyond the class count stopped train with exit 2 and "label 200 of sample
// 10 in the batch", naming no file, chunk or global sample. Now a data error (exit 1) naming all
// three, with the checksums verified or not.
TEST(TrainHostile, ALabelBeyondTheClassCountExitsOneNamingFileChunkAndSample) {
  TempDir t;
  const std::string data = MakeDataset(t);  // 56 samples a chunk: chunk 2 sample 5 is 117
  testing::ForgeLabel(data, 2, 5, 200);
  for (const char* verify : {"", "--no-verify"}) {
    std::string out;
    EXPECT_EQ(RunCommand(Train(data, verify), &out), 1) << verify;
    const size_t last = out.rfind("ringfeed: ");
    ASSERT_NE(last, std::string::npos) << out;
    EXPECT_EQ(out.substr(last).rfind("ringfeed: " + data + ": chunk 2 at byte ", 0), 0u) << out;
    EXPECT_NE(out.find(": label 200 of sample 117 is outside [0, 4), the header's class count\n"),
              std::string::npos)
        << out;
  }
}

// Defect 3: checksum-valid hostile headers crashed train (a shape whose size wraps to 0
// segfaulted in the CPU backend; 4294967295 classes aborted with bad_alloc).
TEST(TrainHostile, ChecksumValidHostileHeadersAreRefusedBeforeTraining) {
  TempDir t;
  const std::string data = MakeDataset(t);
  testing::ForgeHeader(data, [](format::Header* h) { h->num_classes = 0xffffffffu; });
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, ""), &out), 1);
  EXPECT_EQ(out, "ringfeed: " + data +
                     ": at byte 52: bad header: 4294967295 classes; uint8 labels name at most "
                     "256\n");
  MakeDataset(t);
  testing::ForgeHeader(data, [](format::Header* h) {
    h->ndim = 0;
    h->channels = 16;
    h->height = h->width = 1u << 30;
  });
  EXPECT_EQ(RunCommand(Train(data, ""), &out), 1);
  EXPECT_NE(out.find(data + ": at byte 644: bad header: sample shape 16x1073741824x1073741824"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace rf
