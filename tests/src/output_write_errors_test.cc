// Issue 15, defect 8: on a full disk `--dump-order` left a truncated file and `read --json` a
// 0-byte one, both exit 0 (good() was checked before the flush). Every output of `ringfeed read`
// and `ringfeed train` now fails the command when it cannot be written: exit 1, one line naming
// the output, no temporary file, and an earlier file of that name kept as it was. --metrics and
// --dump-order, written as the run goes (io/line_output.h), keep the whole lines written before
// the failure and no part of the line it stopped. A file size limit (EFBIG) stands in for the
// full disk.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tests/src/train_command_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;

const std::vector<uint8_t> kOld = {'o', 'l', 'd', '\n'};

// Runs `cmd` under a file size limit of `limit` bytes; expects exit 1, the run's output ending
// with one error line naming `output` and the byte where the limit stopped it, and `output`
// holding `left` (kOld, written there first, unless `fresh`) beside `others`.
void ExpectWriteFailure(const TempDir& t, const std::string& cmd, uint64_t limit,
                        const std::string& output, std::vector<std::string> others,
                        bool fresh = false, const std::string& left = "old\n") {
  if (fresh) {
    std::remove(output.c_str());
  } else {
    testing::WriteAll(output, kOld);
  }
  std::string out;
  EXPECT_EQ(RunCommand(testing::WithFileSizeLimit(limit, cmd), &out), 1) << out;
  const std::string error = "ringfeed: " + output + ": at byte " + std::to_string(limit) +
                            ": write failed: File too large (errno 27)\n";
  EXPECT_TRUE(out.ends_with(error)) << out;
  EXPECT_EQ(out.find("ringfeed: "), out.size() - error.size()) << "one error line\n" << out;
  EXPECT_EQ(testing::ReadAll(output), std::vector<uint8_t>(left.begin(), left.end()));
  others.push_back(output.substr(t.path().size() + 1));
  std::sort(others.begin(), others.end());
  EXPECT_EQ(testing::FilesIn(t.path()), others);
}

TEST(OutputWriteErrors, ReadJsonThatCannotBeWrittenExitsOne) {
  TempDir t;
  const std::string data = testing::MakeDataset(t);
  ExpectWriteFailure(t, ProgramPath("ringfeed") + " read " + data + " --json " + t.File("r.json"),
                     64, t.File("r.json"), {"s.rfd"});
}

// The order's first record ("# epoch 1") fits below the limit and stays; its first batch does not
// and is cut back out. The metrics' first record (the "start" line) does not fit: nothing stays.
TEST(OutputWriteErrors, TrainDumpOrderAndMetricsThatCannotBeWrittenExitOneKeepingWholeLines) {
  TempDir t;
  const std::string data = testing::MakeDataset(t);
  for (const auto& [flag, left] :
       {std::pair<std::string, std::string>{"--dump-order", "# epoch 1\n"}, {"--metrics", ""}}) {
    SCOPED_TRACE(flag);
    ExpectWriteFailure(t, testing::Train(data, "--epochs 2 " + flag + " " + t.File("o")), 64,
                       t.File("o"), {"s.rfd"}, /*fresh=*/true, left);
  }
}

TEST(OutputWriteErrors, ACheckpointThatCannotBeWrittenExitsOneKeepingTheLastOne) {
  TempDir t;
  const std::string data = testing::MakeDataset(t);
  ExpectWriteFailure(
      t, testing::Train(data, "--max-steps 2 --overwrite --checkpoint " + t.File("c.ckpt")), 4096,
      t.File("c.ckpt"), {"s.rfd"});
}

}  // namespace
}  // namespace rf
