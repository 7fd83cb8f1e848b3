// Issue 15, defect 9: temporaries of killed writers ("NAME.tmp.PID.N", up to 1.8 GB) were never
// removed. The next AtomicOutput (or DatasetWriter) of the same name removes those of processes
// that are gone, and keeps a live process's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <string>
#include <vector>

#include "io/dataset_writer.h"
#include "io/file.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

// A pid no process has: a child's, reaped.
pid_t DeadPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// A live child (sleeping until killed).
class LiveChild {
 public:
  LiveChild() : pid_(::fork()) {
    if (pid_ == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~LiveChild() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// Plants "<name>.tmp.<pid>.<n>", last written `age_s` seconds ago.
std::string Plant(const TempDir& t, const std::string& name, pid_t pid, time_t age_s = 0,
                  int n = 0) {
  const std::string path = t.File(name + ".tmp." + std::to_string(pid) + "." + std::to_string(n));
  testing::WriteAll(path, "partial", 7);
  if (age_s != 0) {
    const timespec times[2] = {{::time(nullptr) - age_s, 0}, {::time(nullptr) - age_s, 0}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
  }
  return path;
}

TEST(StaleTemporaries, TheNextOutputOfTheNameRemovesADeadProcesssAndKeepsALiveOnes) {
  TempDir t;
  LiveChild live;
  const pid_t dead = DeadPid();
  Plant(t, "c.ckpt", dead);
  Plant(t, "c.ckpt", live.pid());
  Plant(t, "c.ckpt", ::getpid(), 0, 999);  // not a number this process's next output takes
  Plant(t, "other.ckpt", dead);            // another name: not this output's to remove
  auto out = AtomicOutput::Create(t.File("c.ckpt"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->Commit().ok());
  const std::string me = std::to_string(::getpid());
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"c.ckpt", "c.ckpt.tmp." + me + ".999",
                                      "c.ckpt.tmp." + std::to_string(live.pid()) + ".0",
                                      "other.ckpt.tmp." + std::to_string(dead) + ".0"}));
}

// A live process whose pid is in the name but which started after the file was last written
// cannot have written it: the pid was reused, the writer is gone.
TEST(StaleTemporaries, AReusedPidIsToldByTheProcesssStartTime) {
  TempDir t;
  LiveChild live;
  const std::string old = Plant(t, "c.ckpt", live.pid(), 3600);
  const std::vector<std::string> removed =
      RemoveStaleTemporaries(t.path(), [](std::string_view n) { return n == "c.ckpt"; });
  EXPECT_EQ(removed, std::vector<std::string>{old});
}

TEST(StaleTemporaries, ADatasetWriterRemovesThoseOfEveryShardCountOfItsName) {
  TempDir t;
  const pid_t dead = DeadPid();
  Plant(t, "d.rfd", dead);
  Plant(t, "d-00001-of-00003.rfd", dead);
  Plant(t, "d.test.rfd", dead);  // another dataset's name
  DatasetSpec spec;
  auto w = DatasetWriter::Create(t.File("d.rfd"), spec, {.shards = 2, .chunk_bytes = 4096});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::vector<uint8_t> samples(5000, 1), labels(5000, 0);
  ASSERT_TRUE((*w)->Append(samples.data(), labels.data(), samples.size()).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"d-00000-of-00002.rfd", "d-00001-of-00002.rfd",
                                      "d.test.rfd.tmp." + std::to_string(dead) + ".0"}));
}

}  // namespace
}  // namespace rf
