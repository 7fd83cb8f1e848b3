// The checkpoint writer under ENOSPC/EIO (issue 15): a failed write or fsync returns one error
// naming the checkpoint's path (not the temporary name), leaves no temporary file, and leaves the
// previous checkpoint byte for byte as it was, so a run can still resume from it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tests/testing/scoped_faults.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

Checkpoint Small(uint64_t step) {
  Checkpoint c;
  c.config.channels = 1;
  c.config.height = c.config.width = 8;
  c.config.classes = 3;
  c.config.conv = {2};
  c.config.hidden = 4;
  c.params = ZerosLike(c.config);
  c.momentum = ZerosLike(c.config);
  c.order.batch_size = 8;
  c.step = step;
  return c;
}

TEST(CheckpointWriteErrors, AFailedWriteOrFsyncKeepsThePreviousCheckpoint) {
  for (const testing::InjectedFault& c : testing::kWriteFaults) {
    SCOPED_TRACE(c.fault);
    TempDir t;
    const std::string path = t.File("run.ckpt");
    ASSERT_TRUE(WriteCheckpoint(path, Small(10)).ok());
    const std::vector<uint8_t> before = testing::ReadAll(path);
    {
      testing::ScopedFaults faults(std::string(c.fault) + "@path=run.ckpt");
      EXPECT_EQ(WriteCheckpoint(path, Small(20)).ToString(), path + c.message);
    }
    EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"run.ckpt"});
    EXPECT_EQ(testing::ReadAll(path), before);
    auto back = ReadCheckpoint(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->step, 10u);
  }
}

}  // namespace
}  // namespace rf
