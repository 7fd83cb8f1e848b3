#include "parallel/rank_watchdog.h"

#include <cstdio>

namespace rf {

RankWatchdog::RankWatchdog(double timeout_s, std::function<Status()> check,
                           std::function<void(const std::string&)> fail,
                           std::chrono::milliseconds poll)
    : timeout_s_(timeout_s),
      check_(std::move(check)),
      fail_(std::move(fail)),
      poll_(poll),
      last_beat_ns_(NowNs()),
      thread_([this] { Loop(); }) {}

RankWatchdog::~RankWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

int64_t RankWatchdog::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void RankWatchdog::Beat() { last_beat_ns_.store(NowNs(), std::memory_order_relaxed); }

void RankWatchdog::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (cv_.wait_for(lock, poll_, [this] { return stop_; })) return;
    if (check_) {
      if (Status st = check_(); !st.ok()) {
        fail_(st.ToString());
        return;
      }
    }
    const double idle = (NowNs() - last_beat_ns_.load(std::memory_order_relaxed)) * 1e-9;
    if (timeout_s_ > 0 && idle > timeout_s_) {
      char msg[160];
      std::snprintf(msg, sizeof msg,
                    "no training step finished for %.0f s (--rank-timeout): a rank is stuck or "
                    "its collectives cannot finish",
                    idle);
      fail_(msg);
      return;
    }
  }
}

}  // namespace rf
