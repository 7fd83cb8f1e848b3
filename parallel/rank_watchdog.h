// RankWatchdog: ends a data-parallel job whose ranks stopped making progress, instead of letting
// it hang. A rank that dies is ended by mpirun with the rest of the job; what is left is a rank
// blocked behind a collective that cannot finish (NCCL kernels waiting for a peer whose network
// failed, a peer stuck) — its own thread cannot notice, so this one does.
//
// A thread wakes every `poll` (1 s by default) and calls `check` (the reduction's asynchronous
// error: TrainEngine::CollectiveError). It calls `fail(message)` once, on the first error `check`
// returns, or when the training thread has not called Beat() for `timeout_s` seconds (0: no
// timeout). `fail` must end the process (report, abort the collectives, _exit): the training
// thread is blocked and will not return to notice.
//
// Ownership: owns its thread; the destructor stops and joins it. Thread safety: Beat from any
// thread (lock-free); check and fail run on the watchdog's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"

namespace rf {

class RankWatchdog {
 public:
  RankWatchdog(double timeout_s, std::function<Status()> check,
               std::function<void(const std::string&)> fail,
               std::chrono::milliseconds poll = std::chrono::milliseconds(1000));
  ~RankWatchdog();
  RankWatchdog(const RankWatchdog&) = delete;
  RankWatchdog& operator=(const RankWatchdog&) = delete;

  // The training thread made progress (a step, an epoch's report).
  void Beat();

 private:
  void Loop();
  static int64_t NowNs();

  const double timeout_s_;
  const std::function<Status()> check_;
  const std::function<void(const std::string&)> fail_;
  const std::chrono::milliseconds poll_;
  std::atomic<int64_t> last_beat_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it reads
};

}  // namespace rf
