#include "io/live_temporaries.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>
#include <vector>

namespace rf {

// An entry's path is written while its sequence number is odd, and only while the entry is free
// (not live); the handler copies a live entry's path and uses the copy only where the number was
// even and the same before and after. Entries are never freed: the handler may be walking them.
struct LiveTemporaryEntry {
  std::atomic<bool> live{false};
  std::atomic<uint64_t> sequence{0};
  pid_t pid = 0;
  size_t capacity = 0;  // bytes of path, the NUL included: a power of two, 64 to PATH_MAX
  char* path = nullptr;
  LiveTemporaryEntry* next = nullptr;  // set before the entry is published, never changed
};

namespace {

using Entry = LiveTemporaryEntry;

constexpr int kSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGXCPU, SIGXFSZ};
constexpr int kSizeClasses = 7;  // 64, 128, ..., 4096 (PATH_MAX) bytes

std::atomic<Entry*> g_head{nullptr};  // every entry ever made, newest first

// The registration side: free entries by size class, under a mutex the handler never takes.
std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}
std::vector<Entry*>& FreeEntries(int size_class) {
  static std::vector<Entry*> free[kSizeClasses];
  return free[size_class];
}

int SizeClassOf(size_t bytes) {
  int c = 0;
  while ((size_t{64} << c) < bytes) ++c;
  return c;
}

void OnSignal(int sig) {
  const int saved = errno;
  UnlinkLiveTemporaries();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  errno = saved;
  // Blocked while this handler runs: delivered, with the default action, as it returns.
  raise(sig);
}

}  // namespace

LiveTemporary::LiveTemporary(const std::string& path) {
  const size_t bytes = path.size() + 1;
  if (bytes > PATH_MAX) return;
  const int size_class = SizeClassOf(bytes);
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<Entry*>& free = FreeEntries(size_class);
  Entry* e = nullptr;
  if (!free.empty()) {
    e = free.back();
    free.pop_back();
  } else {
    e = new Entry;
    e->capacity = size_t{64} << size_class;
    e->path = new char[e->capacity];
    e->next = g_head.load(std::memory_order_relaxed);
    g_head.store(e, std::memory_order_release);
  }
  e->sequence.fetch_add(1, std::memory_order_acq_rel);  // odd: being written
  std::memcpy(e->path, path.c_str(), bytes);
  e->pid = ::getpid();
  e->sequence.fetch_add(1, std::memory_order_release);  // even again
  e->live.store(true, std::memory_order_release);
  entry_ = e;
}

LiveTemporary& LiveTemporary::operator=(LiveTemporary&& o) noexcept {
  if (this != &o) {
    Forget();
    entry_ = std::exchange(o.entry_, nullptr);
  }
  return *this;
}

void LiveTemporary::Forget() {
  if (entry_ == nullptr) return;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  entry_->live.store(false, std::memory_order_release);
  FreeEntries(SizeClassOf(entry_->capacity)).push_back(entry_);
  entry_ = nullptr;
}

void UnlinkLiveTemporaries() {
  const pid_t self = ::getpid();
  char copy[PATH_MAX];
  for (Entry* e = g_head.load(std::memory_order_acquire); e != nullptr; e = e->next) {
    // A few tries where the entry is being rewritten by another thread; where this thread was
    // interrupted writing it, the file is not created yet (it is registered first).
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (!e->live.load(std::memory_order_acquire)) break;
      const uint64_t before = e->sequence.load(std::memory_order_acquire);
      if (before % 2 != 0) continue;
      const pid_t pid = e->pid;
      for (size_t i = 0; i < e->capacity; ++i) copy[i] = e->path[i];
      // The copy's reads stay before this read of the number: an atomic read-modify-write that
      // changes nothing, with release order (a seqlock's reader as Boehm's "Can seqlocks get
      // along with programming language memory models?" writes it), rather than an acquire fence
      // before a relaxed load, which GCC's ThreadSanitizer refuses to compile (-Wtsan).
      if (e->sequence.fetch_add(0, std::memory_order_acq_rel) != before) continue;
      copy[e->capacity - 1] = '\0';
      if (pid == self) ::unlink(copy);
      break;
    }
  }
}

void RemoveLiveTemporariesOnSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) sigaddset(&sa.sa_mask, sig);  // one cleanup at a time a thread
  sa.sa_flags = SA_RESTART;
  for (int sig : kSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    // Only over the default action: an ignored signal stays ignored, a program's own handler
    // stays its own.
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace rf
