// BatchWorker: a thread of its own that makes batches ahead of the consumer, so that the
// consumer's Next() is a hand-off from a queue: no reads waited for, no decode, no GPU calls on
// the consumer's thread (a PyTorch loop's Python thread, which launches the model's kernels and is
// what bounds a small model's speed).
//
//   Start()   (re)starts production: the thread (made at the first Start) calls `produce` while
//             fewer than `depth` results wait, each result queued in order
//   Take()    the oldest result, waiting for one; `poll` is called about every 100 ms meanwhile
//             (a status other than OK ends the wait and is returned; production goes on)
//   Stop()    ends production: returns once `produce` is not running, and drops the results
//             queued (their batches go back to their pool)
//
// A result that is an error, or a null batch (the end of an epoch), parks the worker until the
// next Start: it is the last of its run. `produce` gets the stop flag, which Stop() sets while it
// waits for a call in flight: a produce that waits for data polls it (stopping() from the worker's
// thread) and returns early, with any status (Stop drops it).
//
// Threads: `init` runs once on the worker's thread before its first produce (binding it to the
// loader's GPU). Start, Stop and Take are the consumer's: one thread at a time. The destructor
// stops the thread and joins it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/status.h"

namespace rf {

class LoadedBatch;

class BatchWorker {
 public:
  using Produce = std::function<Result<std::shared_ptr<LoadedBatch>>()>;

  BatchWorker(uint32_t depth, std::function<Status()> init, Produce produce);
  ~BatchWorker();
  BatchWorker(const BatchWorker&) = delete;
  BatchWorker& operator=(const BatchWorker&) = delete;

  void Start();
  void Stop();
  Result<std::shared_ptr<LoadedBatch>> Take(const std::function<Status()>& poll);

  // True on this worker's thread while Stop() waits for the produce in flight.
  bool stopping() const;
  // Whether the calling thread is this worker's.
  bool on_worker_thread() const { return std::this_thread::get_id() == thread_id_.load(); }
  // Time Take() waited for a result, in all.
  uint64_t wait_ns() const { return wait_ns_.load(); }

 private:
  void Run();

  const uint32_t depth_;
  std::function<Status()> init_;
  Produce produce_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Result<std::shared_ptr<LoadedBatch>>> ready_;
  bool running_ = false;    // Start()ed and not Stop()ped
  bool parked_ = false;     // the run's last result is queued
  bool producing_ = false;  // produce_ is running
  bool quit_ = false;       // the destructor's
  std::atomic<bool> stop_{false};
  std::atomic<std::thread::id> thread_id_{};
  std::atomic<uint64_t> wait_ns_{0};
  std::thread thread_;
};

}  // namespace rf
