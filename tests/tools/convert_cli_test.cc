// The built ringfeed-convert binary: exit codes and the one-line error on stderr.
#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::RunCommand;
using testing::TempDir;

std::string Program() { return testing::ProgramPath("ringfeed-convert"); }

int CountLines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

TEST(ConvertCli, MissingInputExitsOneWithOneLineNamingTheFile) {
  TempDir t;
  std::string out;
  const int rc =
      RunCommand(Program() + " idx --images " + t.File("nope.gz") + " -o " + t.File("d.rfd"), &out);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out, "ringfeed-convert: " + t.File("nope.gz") +
                     ": cannot open: No such file or directory (errno 2)\n");
  EXPECT_TRUE(testing::FilesIn(t.path()).empty());
}

TEST(ConvertCli, UnknownOptionExitsTwoWithAHint) {
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " cifar --bogus x -o y.rfd", &out), 2);
  EXPECT_EQ(CountLines(out), 1) << out;
  EXPECT_NE(out.find("ringfeed-convert: cifar: unrecognised option '--bogus'"), std::string::npos)
      << out;
  EXPECT_NE(out.find("try 'ringfeed-convert cifar --help'"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Program() + " frobnicate", &out), 2);
  EXPECT_EQ(RunCommand(Program(), &out), 2);
}

TEST(ConvertCli, EverySubcommandHelpListsItsOptionsWithDefaults) {
  for (const char* cmd : {"idx", "cifar", "npy", "raw", "predecessor", "synthetic"}) {
    std::string out;
    EXPECT_EQ(RunCommand(Program() + " " + cmd + " --help", &out), 0) << cmd;
    EXPECT_NE(out.find("--chunk-size arg (=4MiB)"), std::string::npos) << cmd << "\n" << out;
    EXPECT_NE(out.find("--test-split arg (=0)"), std::string::npos) << cmd;
  }
  for (const char* cmd : {"export", "inspect", "verify"}) {
    std::string out;
    EXPECT_EQ(RunCommand(Program() + " " + cmd + " --help", &out), 0) << cmd;
    EXPECT_NE(out.find("Usage: ringfeed-convert " + std::string(cmd)), std::string::npos);
  }
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " --help", &out), 0);
  EXPECT_NE(out.find("predecessor"), std::string::npos);
}

TEST(ConvertCli, BadCifarExitsOneNamingTheOffsetAndLeavesNothing) {
  TempDir t;
  testing::WriteAll(t.File("c.bin"), std::vector<uint8_t>(3073 + 7, 1));
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " cifar " + t.File("c.bin") + " -o " + t.File("c.rfd"), &out),
            1);
  EXPECT_EQ(CountLines(out), 1) << out;
  EXPECT_EQ(out.rfind("ringfeed-convert: " + t.File("c.bin") + ": at byte 3073: ", 0), 0u) << out;
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"c.bin"});
}

TEST(ConvertCli, SyntheticThenInspectAndVerifyThenAFlippedBitFails) {
  TempDir t;
  std::string out;
  ASSERT_EQ(RunCommand(Program() + " synthetic --samples 2000 --shape 1,16,16 --classes 4 " +
                           "--chunk-size 64KiB --threads 2 -o " + t.File("s.rfd"),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("wrote " + t.File("s.rfd") + ": 2000 samples"), std::string::npos) << out;
  EXPECT_NE(out.find("MB/s"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(Program() + " inspect " + t.File("s.rfd"), &out), 0);
  EXPECT_NE(out.find("samples:      2000"), std::string::npos) << out;
  EXPECT_NE(out.find("shape:        1 x 16 x 16"), std::string::npos) << out;
  EXPECT_NE(out.find("classes:      4"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(Program() + " verify " + t.File("s.rfd"), &out), 0);
  EXPECT_EQ(out, "OK: 8 chunks, 2000 samples verified\n");
  testing::FlipBit(t.File("s.rfd"), 4096 + 65536 + 10);  // inside chunk 1
  EXPECT_EQ(RunCommand(Program() + " verify " + t.File("s.rfd"), &out), 1);
  EXPECT_EQ(CountLines(out), 1) << out;
  EXPECT_NE(out.find("ringfeed-convert: " + t.File("s.rfd") + ": chunk 1"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace rf
