#include "pipeline/batch_worker.h"

#include <chrono>
#include <utility>

#include "core/clock.h"
#include "pipeline/output/loaded_batch.h"

namespace rf {
namespace {
constexpr auto kPollInterval = std::chrono::milliseconds(100);
}  // namespace

BatchWorker::BatchWorker(uint32_t depth, std::function<Status()> init, Produce produce)
    : depth_(depth < 1 ? 1 : depth), init_(std::move(init)), produce_(std::move(produce)) {}

BatchWorker::~BatchWorker() {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BatchWorker::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = true;
    parked_ = false;
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  cv_.notify_all();
}

void BatchWorker::Stop() {
  std::deque<Result<std::shared_ptr<LoadedBatch>>> dropped;
  {
    std::unique_lock<std::mutex> lock(mu_);
    running_ = false;
    stop_.store(true);
    cv_.wait(lock, [&] { return !producing_; });
    stop_.store(false);
    dropped.swap(ready_);
  }
  cv_.notify_all();
  // `dropped` goes out of scope here, outside the lock: its batches go back to their pool.
}

bool BatchWorker::stopping() const { return stop_.load(); }

Result<std::shared_ptr<LoadedBatch>> BatchWorker::Take(const std::function<Status()>& poll) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return !ready_.empty(); };
  if (!ready()) {
    const uint64_t t0 = SteadyNowNs();
    while (!ready()) {
      if (!poll) {
        cv_.wait(lock, ready);
        break;
      }
      if (cv_.wait_for(lock, kPollInterval, ready)) break;
      lock.unlock();
      const Status st = poll();
      lock.lock();
      if (!st.ok()) {
        wait_ns_ += SteadyNowNs() - t0;
        return st;
      }
    }
    wait_ns_ += SteadyNowNs() - t0;
  }
  Result<std::shared_ptr<LoadedBatch>> r = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  cv_.notify_all();  // room for one more
  return r;
}

void BatchWorker::Run() {
  thread_id_.store(std::this_thread::get_id());
  const Status bound = init_ ? init_() : Status::Ok();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return quit_ || (running_ && !parked_ && ready_.size() < depth_); });
    if (quit_) return;
    producing_ = true;
    lock.unlock();
    Result<std::shared_ptr<LoadedBatch>> r =
        bound.ok() ? produce_() : Result<std::shared_ptr<LoadedBatch>>(bound);
    lock.lock();
    producing_ = false;
    if (running_) {
      parked_ = !r.ok() || *r == nullptr;
      ready_.push_back(std::move(r));
      cv_.notify_all();
      continue;
    }
    // Stopped while producing: what came back is dropped, outside the lock (a batch's release
    // takes its pool's lock).
    cv_.notify_all();
    lock.unlock();
    r = Result<std::shared_ptr<LoadedBatch>>(std::shared_ptr<LoadedBatch>());
    lock.lock();
  }
}

}  // namespace rf
