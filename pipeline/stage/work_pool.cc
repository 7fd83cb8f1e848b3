#include "pipeline/stage/work_pool.h"

#include "core/thread_name.h"

namespace rf {

WorkPool::WorkPool(uint32_t threads, const char* name) {
  for (uint32_t i = 1; i < threads; ++i) helpers_.emplace_back([this, name] { Loop(name); });
}

WorkPool::~WorkPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void WorkPool::Run(uint32_t parts, const std::function<void(uint32_t)>& f) {
  if (parts <= 1 || helpers_.empty()) {
    for (uint32_t p = 0; p < parts; ++p) f(p);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &f;
  parts_ = parts;
  next_ = 0;
  ++generation_;
  wake_.notify_all();
  Take(lock);
  done_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
}

void WorkPool::Take(std::unique_lock<std::mutex>& lock) {
  while (next_ < parts_) {
    const uint32_t p = next_++;
    ++running_;
    const std::function<void(uint32_t)>* f = job_;
    lock.unlock();
    (*f)(p);
    lock.lock();
    if (--running_ == 0 && next_ >= parts_) done_.notify_all();
  }
}

void WorkPool::Loop(const char* name) {
  NameThread(name);
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    Take(lock);
  }
}

}  // namespace rf
