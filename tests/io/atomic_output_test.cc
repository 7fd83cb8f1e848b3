// AtomicOutput's errors name the file the user asked for, not the temporary name it writes first.
#include <gtest/gtest.h>

#include <string>

#include "io/file.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

// Issue 15, defect 12: an output in a missing directory was reported as
// "DIR/x.rfd.tmp.PID.N: No such file or directory".
TEST(AtomicOutput, AMissingDirectoryIsNamedWithTheUsersPath) {
  testing::TempDir t;
  const std::string path = t.File("missing/x.rfd");
  auto out = AtomicOutput::Create(path);
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().IsIOError());
  EXPECT_EQ(out.status().ToString(), path + ": cannot create the file: its directory " +
                                         t.File("missing") +
                                         " does not exist: No such file or directory (errno 2)");
}

TEST(AtomicOutput, ADirectoryThatIsAFileIsNamedWithTheUsersPath) {
  testing::TempDir t;
  testing::WriteAll(t.File("plain"), "x", 1);
  auto out = AtomicOutput::Create(t.File("plain/x.rfd"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().ToString(), t.File("plain/x.rfd") + ": cannot create the file in " +
                                         t.File("plain") + ": Not a directory (errno 20)");
}

}  // namespace
}  // namespace rf
