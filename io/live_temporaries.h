// LiveTemporary: a registry of the temporary files this process has made and not yet renamed or
// removed (AtomicOutput's "<path>.tmp.<pid>.<n>", io/file.h), so that a process killed by a
// signal it can catch removes them on its way out instead of leaving them for the next run's
// RemoveStaleTemporaries.
//
// RemoveLiveTemporariesOnSignals() (a program's main calls it once, before it writes anything)
// installs a handler for SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGXCPU and SIGXFSZ, each
// where its action is the default: one the process was started with ignored (nohup, a shell's
// background job) stays ignored, and a handler of the program's own stays. The handler unlinks
// every registered path, then restores the signal's default action and raises it again, so the
// process dies of the signal as it would have (the status a parent sees, `timeout`'s 124 after
// SIGTERM, a core for SIGQUIT). SIGKILL cannot be caught: what it leaves is removed by the next
// run writing the same name, once this pid is gone.
//
// The handler is async-signal-safe: it takes no lock and allocates nothing. Registration takes a
// mutex and reuses freed entries, so the registry holds as many entries as temporaries were ever
// live at once (every shard of a dataset at most), each path written once and read by the
// handler under a sequence number, so a path being rewritten is never unlinked half-written. An
// entry records the pid that made it: a child made by fork(2) never removes its parent's files.
//
// Ownership: a LiveTemporary is one registration, move-only; destroying it (or Forget) takes the
// path out of the registry, leaving the file alone. Thread safety: any thread may register and
// forget at any time; the handler may run on any thread meanwhile.
#pragma once

#include <string>
#include <utility>

namespace rf {

struct LiveTemporaryEntry;  // the registry's (live_temporaries.cc)

class LiveTemporary {
 public:
  LiveTemporary() = default;
  // Registers path, a file this process is about to create (register first: a signal between
  // the creation and the registration would leave it). A path of PATH_MAX bytes or more, which
  // no file can have, is not registered.
  explicit LiveTemporary(const std::string& path);
  ~LiveTemporary() { Forget(); }
  LiveTemporary(LiveTemporary&& o) noexcept : entry_(std::exchange(o.entry_, nullptr)) {}
  LiveTemporary& operator=(LiveTemporary&& o) noexcept;
  LiveTemporary(const LiveTemporary&) = delete;
  LiveTemporary& operator=(const LiveTemporary&) = delete;

  // The file was renamed into place or removed: a signal no longer removes it.
  void Forget();

 private:
  LiveTemporaryEntry* entry_ = nullptr;
};

// Installs the handlers described above (again: a no-op).
void RemoveLiveTemporariesOnSignals();

// Unlinks every registered path of this process (what the handler does; async-signal-safe).
void UnlinkLiveTemporaries();

}  // namespace rf
