#include "kernels/cpu_workers.h"

#include "core/cpus.h"

namespace rf::cpu {

CpuWorkers::CpuWorkers(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

CpuWorkers::~CpuWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

unsigned CpuWorkers::AvailableCpus() { return rf::AvailableCpus(); }

void CpuWorkers::Drain() {
  for (size_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) call_(ctx_, i);
}

void CpuWorkers::Run(size_t count, Call call, void* ctx) {
  if (workers_.empty() || count <= 1) {
    for (size_t i = 0; i < count; ++i) call(ctx, i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    call_ = call;
    ctx_ = ctx;
    count_ = count;
    next_.store(0);
    busy_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  Drain();
  // Every worker must leave the job before it is replaced: one that has not yet started would
  // otherwise read the next job's fields halfway through.
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return busy_ == 0; });
}

void CpuWorkers::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Drain();
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last = --busy_ == 0;
    }
    if (last) done_cv_.notify_one();
  }
}

}  // namespace rf::cpu
