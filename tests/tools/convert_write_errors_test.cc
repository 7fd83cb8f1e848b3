// ringfeed-convert when its output cannot be written (issue 15: the converter under
// ENOSPC/EIO): a file size limit (EFBIG, as a full disk's ENOSPC) or an injected ENOSPC/EIO on a
// write or an fsync exits 1 with one line naming the user's output path, leaves no temporary
// file, and leaves the previous dataset of that name byte for byte as it was.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::RunCommand;
using testing::TempDir;

std::string Synthetic(const std::string& out, const std::string& extra = "", int samples = 2000) {
  return testing::ProgramPath("ringfeed-convert") + " synthetic --samples " +
         std::to_string(samples) + " --shape 1,16,16 --classes 4 --chunk-size 64KiB -o " + out +
         " " + extra;
}

TEST(ConvertWriteErrors, AFileSizeLimitExitsOneNamingTheOutputAndKeepsTheOldDataset) {
  TempDir t;
  const std::string out = t.File("s.rfd");
  std::string log;
  ASSERT_EQ(RunCommand(Synthetic(out, "--seed 1"), &log), 0) << log;
  const std::vector<uint8_t> old = testing::ReadAll(out);
  // The first chunk (at byte 4096, 64 KiB) fits; the second does not.
  EXPECT_EQ(RunCommand(testing::WithFileSizeLimit(100000, Synthetic(out, "--seed 2")), &log), 1);
  EXPECT_EQ(log, "ringfeed-convert: " + out +
                     ": chunk 1 at byte 100000: write failed: File too large (errno 27)\n");
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"s.rfd"});
  EXPECT_EQ(testing::ReadAll(out), old);
}

TEST(ConvertWriteErrors, InjectedEnospcAndEioExitOneAndKeepTheOldShards) {
  TempDir t;
  const std::string out = t.File("s.rfd");
  std::string log;
  ASSERT_EQ(RunCommand(Synthetic(out, "--shards 2"), &log), 0) << log;
  const std::vector<std::string> shards = {t.File("s-00000-of-00002.rfd"),
                                           t.File("s-00001-of-00002.rfd")};
  const std::vector<uint8_t> old0 = testing::ReadAll(shards[0]), old1 = testing::ReadAll(shards[1]);
  const struct {
    std::string fault, message;
  } cases[] = {
      {"write:enospc@path=s-00001", shards[1] +
                                        ": chunk 1 at byte 4096: write failed: No space left on "
                                        "device (errno 28)"},
      {"fsync:eio@path=s-00000", shards[0] + ": fsync failed: Input/output error (errno 5)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fault);
    EXPECT_EQ(RunCommand("RINGFEED_FAULTS=" + c.fault + " " + Synthetic(out, "--shards 2 --seed 3"),
                         &log),
              1);
    EXPECT_EQ(log, "ringfeed-convert: " + c.message + "\n");
    EXPECT_EQ(testing::FilesIn(t.path()),
              (std::vector<std::string>{"s-00000-of-00002.rfd", "s-00001-of-00002.rfd"}));
    EXPECT_EQ(testing::ReadAll(shards[0]), old0);
    EXPECT_EQ(testing::ReadAll(shards[1]), old1);
  }
}

// Issue 15, defect 7, as a user meets it: converting "-o s.rfd" as one file, then as 2 shards,
// left both, and `inspect s.rfd` showed the old one.
TEST(ConvertWriteErrors, ReconvertingWithAnotherShardCountReplacesTheOldDataset) {
  TempDir t;
  const std::string out = t.File("s.rfd");
  std::string log;
  ASSERT_EQ(RunCommand(Synthetic(out), &log), 0) << log;
  ASSERT_EQ(RunCommand(Synthetic(out, "--shards 2", 1000), &log), 0) << log;
  EXPECT_NE(log.find("removed " + out + " (an older dataset of the same name)\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"s-00000-of-00002.rfd", "s-00001-of-00002.rfd"}));
  ASSERT_EQ(RunCommand(testing::ProgramPath("ringfeed-convert") + " inspect " + out, &log), 0);
  EXPECT_NE(log.find("samples:      1000"), std::string::npos) << log;
}

}  // namespace
}  // namespace rf
