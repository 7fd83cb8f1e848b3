// WorkPool: a few helper threads for splitting one piece of work into parts, the calling thread
// taking parts as the helpers do, so that a call never waits for a helper to wake up to start:
// Run(parts, f) calls f(0) ... f(parts - 1), each once, and returns once every part is done. With
// one thread (no helpers), or one part, it is a plain loop on the caller's thread.
//
// Users: the packing of packed sequences (pipeline/sequences/sequence_packer.h: a batch's copies
// split by rows) and the host staging's chunk copies (pipeline/stage/chunk_staging.h).
//
// Thread safety: Run from one thread at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rf {

class WorkPool {
 public:
  // `threads` in all, the caller's included (threads - 1 helpers), each named `name` (at most 15
  // characters).
  WorkPool(uint32_t threads, const char* name);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  uint32_t threads() const { return static_cast<uint32_t>(helpers_.size()) + 1; }
  void Run(uint32_t parts, const std::function<void(uint32_t)>& f);

 private:
  // Runs parts until none is left (mu_ held between them).
  void Take(std::unique_lock<std::mutex>& lock);
  void Loop(const char* name);

  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(uint32_t)>* job_ = nullptr;
  uint32_t parts_ = 0, next_ = 0, running_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> helpers_;
};

}  // namespace rf
