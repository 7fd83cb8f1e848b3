// ChunkReader's fallbacks, each provoked for real in a death-test child: where io_uring_setup is
// refused (a seccomp filter) it reads everything with pread, and where the file system refuses
// O_DIRECT (a ramfs mounted in a private mount namespace) it reads through the page cache;
// either way it says so once on stderr.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "io/chunk_reader.h"
#include "tests/io/chunk_reader_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {
namespace {

// Runs in a death-test child: io_uring_setup is refused by a seccomp filter, as a hardened
// container would, and the reader must say so once and read everything with pread.
int ReadWithIoUringRefused(const Dataset& d) {
  // Only io_uring_setup is denied; the filter does not check the architecture since it runs
  // in this very process.
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog = {static_cast<unsigned short>(std::size(filter)), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    std::fprintf(stderr, "cannot install seccomp filter: %s\n", std::strerror(errno));
    return 2;
  }
  AlignedBuffers bufs(4, kChunkBytes);
  ReaderOptions o;
  o.read_bytes = kReadBytes;
  auto r = ChunkReader::Create(d, bufs.iovecs(), o);
  if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().ToString().c_str()), 3;
  if (std::strcmp((*r)->backend(), "pread") != 0 || (*r)->mode() != IoMode::kPread) return 4;
  std::string err = ReadAndCheckAll(**r, d, bufs);
  if (!err.empty()) return std::fprintf(stderr, "%s\n", err.c_str()), 5;
  return 0;
}

TEST_F(ChunkReaderTest, FallsBackToPreadAndSaysSoWhenIoUringIsRefused) {
  EXPECT_EXIT(std::exit(ReadWithIoUringRefused(*dataset_)), ::testing::ExitedWithCode(0),
              "^ringfeed: io_uring unavailable \\(io_uring_setup failed: Operation not "
              "permitted \\(errno 1\\)\\); reading with pread\n$");
}

// Mounts a ramfs (which refuses O_DIRECT) on `dir` in a mount namespace of this process's own.
// Returns "" or why not.
std::string MountRamfs(const std::string& dir) {
  if (::unshare(CLONE_NEWNS) != 0) return std::string("unshare: ") + std::strerror(errno);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("mount --make-rprivate: ") + std::strerror(errno);
  }
  if (::mount("ringfeed-test", dir.c_str(), "ramfs", 0, nullptr) != 0) {
    return std::string("mount ramfs: ") + std::strerror(errno);
  }
  if (DirectIoWorksIn(dir)) return "ramfs accepts O_DIRECT on this kernel";
  return "";
}

int ReadFromRamfs(const std::string& dir) {
  if (std::string why = MountRamfs(dir); !why.empty()) {
    return std::fprintf(stderr, "%s\n", why.c_str()), 2;
  }
  WriteReaderDataset(dir + "/r.rfd", 700, 1);
  auto d = Dataset::Open(dir + "/r.rfd");
  if (!d.ok()) return std::fprintf(stderr, "%s\n", d.status().ToString().c_str()), 3;
  AlignedBuffers bufs(3, kChunkBytes);
  ReaderOptions o;
  o.read_bytes = kReadBytes;
  o.mode = IoMode::kDirect;
  auto r = ChunkReader::Create(*d, bufs.iovecs(), o);
  if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().ToString().c_str()), 4;
  if ((*r)->mode() != IoMode::kBuffered) return std::fprintf(stderr, "mode not buffered\n"), 5;
  std::string err = ReadAndCheckAll(**r, *d, bufs);
  if (!err.empty()) return std::fprintf(stderr, "%s\n", err.c_str()), 6;
  return 0;
}

TEST(ChunkReaderFallback, ReadsThroughPageCacheAndSaysSoWhereODirectIsRefused) {
  TempDir t;
  const std::string dir = t.File("ram");
  std::filesystem::create_directory(dir);
  // Try the mount in a throwaway child first: without CAP_SYS_ADMIN there is nothing to test.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(MountRamfs(dir).empty() ? 0 : 1);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    GTEST_SKIP() << "cannot mount a ramfs here to provoke the O_DIRECT fallback";
  }
  EXPECT_EXIT(std::exit(ReadFromRamfs(dir)), ::testing::ExitedWithCode(0),
              "^ringfeed: " + dir +
                  "/r.rfd: O_DIRECT not supported by this file system; reading through the "
                  "page cache\n$");
}

}  // namespace
}  // namespace rf::testing
