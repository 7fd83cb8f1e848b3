// CpuWorkers: a fixed set of threads that the CPU backend runs its per-chunk work on.
//
// ParallelFor(count, fn) calls fn(i) once for every i in [0, count), spread over the workers and
// the calling thread, and returns when all calls have returned. Which thread runs which i is not
// fixed, so callers must make each fn(i) write only its own outputs and compute them the same way
// on any thread; then results do not depend on the thread count.
//
// Ownership: the object owns its threads and joins them in its destructor. It is neither copyable
// nor movable (the threads refer to it). Thread safety: one thread calls ParallelFor at a time.
// No call allocates.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace rf::cpu {

class CpuWorkers {
 public:
  // `threads` counts the calling thread: 1 runs everything inline.
  explicit CpuWorkers(unsigned threads);
  ~CpuWorkers();
  CpuWorkers(const CpuWorkers&) = delete;
  CpuWorkers& operator=(const CpuWorkers&) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  template <typename F>
  void ParallelFor(size_t count, F&& fn) {
    Run(
        count, [](void* f, size_t i) { (*static_cast<std::remove_reference_t<F>*>(f))(i); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // The CPUs this process may run on (its affinity mask), at least 1.
  static unsigned AvailableCpus();

 private:
  using Call = void (*)(void*, size_t);
  void Run(size_t count, Call call, void* ctx);
  void Drain();
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  uint64_t generation_ = 0;  // bumped for every job; workers wait for a change
  bool stop_ = false;
  unsigned busy_ = 0;  // workers that have not yet finished the current job

  // The current job: set under mu_ before generation_ changes, read-only while it runs.
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> next_{0};

  std::vector<std::thread> workers_;
};

}  // namespace rf::cpu
