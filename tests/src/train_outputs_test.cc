// Nothing `ringfeed train` or `ringfeed read` writes destroys what it should not (issue 23, D1-D3):
// a device named as an output stays a device, two outputs that are one file are refused before
// the run, and a run never replaces an existing checkpoint it did not resume from unless told to,
// nor writes an "emergency" checkpoint of a run that trained no step.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::ProgramPath;
using testing::ReadAll;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

bool IsCharDevice(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

TEST(TrainOutputs, ADeviceNamedAsEveryOutputStaysADevice) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string dev = t.File("null");
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "cannot make a device node here (not root)";
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 3 --metrics " + dev + " --dump-order " + dev +
                                       " --trace " + dev + " --checkpoint " + dev),
                       &out),
            0)
      << out;
  EXPECT_TRUE(IsCharDevice(dev));
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + data + " --json " + dev, &out), 0)
      << out;
  EXPECT_TRUE(IsCharDevice(dev));
  EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"null", "s.rfd"}));
}

TEST(TrainOutputs, TwoOutputsThatAreOneFileAreRefusedBeforeTheRun) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 2 --checkpoint " + t.File("x")), &out), 0) << out;
  const std::vector<uint8_t> checkpoint = ReadAll(t.File("x"));
  // The checkpoint and the metrics: X held the metrics and the checkpoint was gone.
  EXPECT_EQ(RunCommand(Train(data, "--max-steps 4 --resume " + t.File("x") + " --checkpoint " +
                                       t.File("x") + " --metrics " + t.File("x")),
                       &out),
            2);
  EXPECT_EQ(out, "ringfeed: --checkpoint " + t.File("x") + " and --metrics " + t.File("x") +
                     " are the same file; one would replace the other: give each its own file\n");
  EXPECT_EQ(ReadAll(t.File("x")), checkpoint);
  // Another spelling of a file that does not exist yet.
  EXPECT_EQ(RunCommand(Train(data, "--dump-order " + t.File("o") + " --trace " + t.path() + "/./o"),
                       &out),
            2);
  EXPECT_NE(out.find("--dump-order " + t.File("o") + " and --trace " + t.path() +
                     "/./o are the same file (by another name)"),
            std::string::npos)
      << out;
  EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"s.rfd", "x"}));
}

TEST(TrainOutputs, ADirectoryAsAnOutputIsAUsageError) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, "--metrics " + t.path()), &out), 2);
  EXPECT_EQ(out, "ringfeed: --metrics: " + t.path() +
                     " is a directory; refusing to write an output over it: give a file name\n");
}

TEST(TrainOutputs, AnExistingCheckpointIsReplacedOnlyWhenResumedOrOverwritten) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string good = t.File("good.ckpt");
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 6 --checkpoint " + good), &out), 0) << out;
  const std::vector<uint8_t> six = ReadAll(good);
  // A run started afresh is refused at its start, naming the steps the file holds.
  EXPECT_EQ(RunCommand(Train(data, "--max-steps 2 --checkpoint " + good), &out), 2);
  EXPECT_EQ(out, "ringfeed: --checkpoint " + good +
                     " holds a checkpoint of 6 steps that this run does not resume from; "
                     "refusing to replace it: --resume " +
                     good + " continues it, --overwrite replaces it\n");
  EXPECT_EQ(ReadAll(good), six);
  // Any other file is not replaced unasked either.
  testing::WriteAll(t.File("notes"), "mine", 4);
  EXPECT_EQ(RunCommand(Train(data, "--max-steps 2 --checkpoint " + t.File("notes")), &out), 2);
  EXPECT_NE(out.find("exists and is not a checkpoint ringfeed can read"), std::string::npos) << out;
  EXPECT_EQ(ReadAll(t.File("notes")), (std::vector<uint8_t>{'m', 'i', 'n', 'e'}));
  // Resuming from it continues it; --overwrite replaces it.
  ASSERT_EQ(
      RunCommand(Train(data, "--max-steps 8 --resume " + good + " --checkpoint " + good), &out), 0)
      << out;
  auto resumed = ReadCheckpoint(good);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->step, 8u);
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 1 --overwrite --checkpoint " + good), &out), 0)
      << out;
  auto replaced = ReadCheckpoint(good);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_EQ(replaced->step, 1u);
}

// D3: `RINGFEED_FAULTS='read:eio@times=always' T --checkpoint good.ckpt` replaced a 100-step
// checkpoint with an untrained "emergency checkpoint".
TEST(TrainOutputs, ARunThatTrainsNoStepWritesNoCheckpoint) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string good = t.File("good.ckpt");
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--max-steps 6 --checkpoint " + good), &out), 0) << out;
  const std::vector<uint8_t> six = ReadAll(good);
  for (const char* flags : {" --overwrite", ""}) {
    const std::string resume = *flags ? "" : " --resume " + good;
    EXPECT_EQ(RunCommand("RINGFEED_FAULTS='read:eio@times=always' " +
                             Train(data, "--io pread --checkpoint " + good + flags + resume),
                         &out),
              1)
        << flags;
    EXPECT_NE(
        out.find("stopped by a data error before any step; no emergency checkpoint written (" +
                 good + " left as it was)"),
        std::string::npos)
        << out;
    EXPECT_EQ(out.find("emergency checkpoint written to"), std::string::npos) << out;
    EXPECT_EQ(ReadAll(good), six) << flags;
  }
  // A resumed run with nothing left to train leaves the file as it was, and says so.
  ASSERT_EQ(RunCommand(Train(data, "--epochs 1 --checkpoint " + t.File("done.ckpt")), &out), 0)
      << out;
  const std::vector<uint8_t> done = ReadAll(t.File("done.ckpt"));
  ASSERT_EQ(RunCommand(Train(data, "--epochs 1 --resume " + t.File("done.ckpt") + " --checkpoint " +
                                       t.File("done.ckpt")),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("no step trained, so no checkpoint written (" + t.File("done.ckpt") +
                     " left as it was)"),
            std::string::npos)
      << out;
  EXPECT_EQ(ReadAll(t.File("done.ckpt")), done);
}

}  // namespace
}  // namespace rf
