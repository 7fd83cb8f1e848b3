// StageThreads: the threads of one of the converter's pipelines (block_pipeline.h,
// image_pipeline.h), their stop flag and the first exception one of them threw.
//
// Each stage runs guarded: an exception (std::bad_alloc) sets the stop flag and is kept instead
// of ending the program, and every stage is woken (the pipeline's `wake`: its conditions'
// notify_all) to see the flag; the pipeline rethrows it once every thread has stopped. The flag
// and the exception are guarded by the pipeline's own lock, so its stages' wait predicates read
// them with the rest of its state.
//
// Ownership: the threads are joined by Stop, and by the destructor (declare the member after
// everything its threads use, so it is destroyed first). Thread safety: Start, Stop and
// RethrowFailure on the pipeline's calling thread; Run on any; stopped() and failed() with the
// pipeline's lock held.
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace rf::convert {

class StageThreads {
 public:
  StageThreads(std::mutex& mu, std::function<void()> wake) : mu_(mu), wake_(std::move(wake)) {}
  ~StageThreads() { Stop(); }
  StageThreads(const StageThreads&) = delete;
  StageThreads& operator=(const StageThreads&) = delete;

  // Runs body() guarded on a thread of its own.
  template <typename F>
  void Start(F body) {
    threads_.emplace_back([this, body] { Run(body); });
  }

  // Runs body() guarded on this thread.
  template <typename F>
  void Run(F body) {
    try {
      body();
    } catch (...) {
      {
        std::lock_guard lock(mu_);
        if (failure_ == nullptr) failure_ = std::current_exception();
        stop_ = true;
      }
      wake_();
    }
  }

  // Sets the stop flag, wakes every stage and joins every thread (idempotent): nothing the
  // threads touch is touched after.
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  // Where a stage threw: stops, then rethrows its exception; else nothing.
  void RethrowFailure() {
    std::exception_ptr f;
    {
      std::lock_guard lock(mu_);
      f = failure_;
    }
    if (f == nullptr) return;
    Stop();
    std::rethrow_exception(f);
  }

  bool stopped() const { return stop_; }               // the pipeline's lock held
  bool failed() const { return failure_ != nullptr; }  // the pipeline's lock held

 private:
  std::mutex& mu_;
  std::function<void()> wake_;
  bool stop_ = false;           // guarded by mu_
  std::exception_ptr failure_;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace rf::convert
