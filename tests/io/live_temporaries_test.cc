// io/live_temporaries.h: a process killed by a signal it may catch removes the temporaries of its
// AtomicOutputs in flight, then dies of that signal; committed and abandoned outputs are out of
// the registry; an ignored signal stays ignored; a forked child never removes its parent's files.
#include "io/live_temporaries.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/file.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::FilesIn;
using testing::TempDir;

// "c7": (a string built so, not "c" + std::to_string(7), which GCC 12's -Wrestrict misreads).
std::string Name(char prefix, int i) {
  std::string name(1, prefix);
  name += std::to_string(i);
  return name;
}

// In a death test's child: outputs a.bin (committed), b.bin (abandoned), then c0..c99 of which
// the even ones are committed, so that the odd ones' entries are reused (d0..d49), then `sig`.
[[noreturn]] void WriteThenRaise(const TempDir& t, int sig) {
  RemoveLiveTemporariesOnSignals();
  Result<AtomicOutput> a = AtomicOutput::Create(t.File("a.bin"));
  if (!a.ok() || !a->file().WriteAt("a", 1, 0).ok() || !a->Commit().ok()) std::_Exit(3);
  { Result<AtomicOutput> b = AtomicOutput::Create(t.File("b.bin")); }
  std::vector<AtomicOutput> open;
  for (int i = 0; i < 100; ++i) {
    Result<AtomicOutput> c = AtomicOutput::Create(t.File(Name('c', i)));
    if (!c.ok()) std::_Exit(3);
    if (i % 2 == 0 && !c->Commit().ok()) std::_Exit(3);
    if (i % 2 == 1) open.push_back(std::move(*c));
  }
  for (int i = 0; i < 50; ++i) {
    Result<AtomicOutput> d = AtomicOutput::Create(t.File(Name('d', i)));
    if (!d.ok()) std::_Exit(3);
    open.push_back(std::move(*d));
  }
  ::raise(sig);
  std::_Exit(4);  // not reached: the signal's default action ends the process
}

std::vector<std::string> Committed() {
  std::vector<std::string> names = {"a.bin"};
  for (int i = 0; i < 100; i += 2) names.push_back(Name('c', i));
  std::sort(names.begin(), names.end());
  return names;
}

TEST(LiveTemporaries, ASignalRemovesTheTemporariesInFlightAndDiesOfIt) {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) {
    TempDir t;
    EXPECT_EXIT(WriteThenRaise(t, sig), ::testing::KilledBySignal(sig), "") << sig;
    EXPECT_EQ(FilesIn(t.path()), Committed()) << "signal " << sig;
  }
}

TEST(LiveTemporaries, AnIgnoredSignalStaysIgnored) {
  TempDir t;
  EXPECT_EXIT(
      {
        ::signal(SIGHUP, SIG_IGN);
        RemoveLiveTemporariesOnSignals();
        Result<AtomicOutput> a = AtomicOutput::Create(t.File("a.bin"));
        ::raise(SIGHUP);
        std::_Exit(a.ok() && FilesIn(t.path()).size() == 1 ? 0 : 5);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(LiveTemporaries, AForkedChildNeverRemovesItsParentsTemporaries) {
  TempDir t;
  Result<AtomicOutput> a = AtomicOutput::Create(t.File("a.bin"));
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(FilesIn(t.path()).size(), 1u);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    UnlinkLiveTemporaries();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(FilesIn(t.path()).size(), 1u);
  // The parent's own call removes it (the handler's work, without a signal).
  UnlinkLiveTemporaries();
  EXPECT_TRUE(FilesIn(t.path()).empty());
}

}  // namespace
}  // namespace rf
