// AtomicOutput when the disk fails it: a write past the file size limit (EFBIG, as ENOSPC on a
// full disk), an injected ENOSPC or EIO (RINGFEED_FAULTS, io/file.h) on a write or on the fsync.
// Each fails with one message naming the user's path, leaves no temporary file, and leaves an
// earlier file of the same name byte for byte as it was (issue 15: the writers under ENOSPC/EIO).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "io/file.h"
#include "tests/testing/scoped_faults.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

const std::vector<uint8_t> kOld = {'o', 'l', 'd', '\n'};
const std::string kNew(64 << 10, 'n');

// In a forked child (the limit is per process): WriteFileAtomically under RLIMIT_FSIZE of
// `limit` bytes with SIGXFSZ ignored; returns the error's one line ("" if it succeeded).
std::string WriteUnderFileSizeLimit(const std::string& path, rlim_t limit) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit r{limit, limit};
    ::setrlimit(RLIMIT_FSIZE, &r);
    const Status st = WriteFileAtomically(path, kNew);
    const std::string line = st.ok() ? "" : st.ToString();
    (void)!::write(fds[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string line;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) line.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return line;
}

TEST(AtomicOutputFaults, AFileSizeLimitFailsNamingTheUsersPathAndKeepsTheOldFile) {
  TempDir t;
  const std::string path = t.File("out.json");
  testing::WriteAll(path, kOld);
  EXPECT_EQ(WriteUnderFileSizeLimit(path, 4096),
            path + ": at byte 4096: write failed: File too large (errno 27)");
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"out.json"});
  EXPECT_EQ(testing::ReadAll(path), kOld);
}

TEST(AtomicOutputFaults, InjectedWriteAndFsyncErrorsKeepTheOldFile) {
  for (const testing::InjectedFault& c : testing::kWriteFaults) {
    SCOPED_TRACE(c.fault);
    TempDir t;
    const std::string path = t.File("c.ckpt");
    testing::WriteAll(path, kOld);
    testing::ScopedFaults faults(std::string(c.fault) + "@path=c.ckpt");
    const Status st = WriteFileAtomically(path, kNew);
    EXPECT_EQ(st.ToString(), path + c.message);
    EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"c.ckpt"});
    EXPECT_EQ(testing::ReadAll(path), kOld);
  }
}

TEST(AtomicOutputFaults, AFaultOnAnotherPathOrOpIsNotInjected) {
  TempDir t;
  testing::ScopedFaults faults("read:eio@path=x,write:enospc@path=other,fsync:eio");
  ASSERT_TRUE(WriteFileAtomically(t.File("x"), kNew).ok());
  EXPECT_EQ(testing::ReadAll(t.File("x")).size(), kNew.size());
}

TEST(AtomicOutputFaults, ACommitAfterAFailedFsyncIsRefused) {
  TempDir t;
  auto out = AtomicOutput::Create(t.File("x"));
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->file().WriteAt(kNew.data(), kNew.size(), 0).ok());
  {
    testing::ScopedFaults faults("fsync:eio@path=x");
    EXPECT_FALSE(out->Commit().ok());
  }
  // The kernel reports a failed writeback once: a second fsync succeeding proves nothing.
  const Status again = out->Commit();
  EXPECT_EQ(again.ToString(),
            t.File("x") + ": cannot commit: an earlier step of writing it failed");
  EXPECT_FALSE(FileExists(t.File("x")));
}

}  // namespace
}  // namespace rf
