// TrainProgress: `ringfeed train`'s per-epoch progress bar on stderr, redrawn at most ten times a
// second while stderr is a terminal ("epoch 3/15 [#######.....] 58% 512K samples/s, 4 s left");
// nothing otherwise, so logs and pipes get the plain per-epoch lines only.
//
// Thread safety: none; the training thread reports.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace rf {

class TrainProgress {
 public:
  TrainProgress() : draw_(isatty(STDERR_FILENO) == 1) {}

  // Data-parallel: the bar shows the rate of all `ranks` (each rank's times their count), and
  // only rank 0 (`draws`) draws it.
  void SetRanks(uint32_t ranks, bool draws) {
    ranks_ = ranks;
    draw_ = draw_ && draws;
  }

  void StartEpoch(uint64_t epoch, uint64_t epochs, uint64_t first, uint64_t total) {
    epoch_ = epoch;
    epochs_ = epochs;
    first_ = first;
    total_ = total;
    start_ = last_ = std::chrono::steady_clock::now();
  }

  void Update(uint64_t done) {
    if (!draw_ || total_ == 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? (done - first_) / seconds : 0;  // this rank's
    const double left = rate > 0 ? (total_ - done) / rate : 0;
    const int filled = static_cast<int>(30.0 * done / total_);
    char bar[31];
    for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    std::fprintf(stderr, "\repoch %llu/%llu [%s] %3.0f%% %.0fK samples/s, %.0f s left   ",
                 static_cast<unsigned long long>(epoch_ + 1),
                 static_cast<unsigned long long>(epochs_), bar, 100.0 * done / total_,
                 rate * ranks_ / 1e3, left);
    std::fflush(stderr);
    drawn_ = true;
  }

  // Erases the bar so the epoch's line starts on a clean line.
  void Finish() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r%*s\r", 90, "");
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  bool draw_, drawn_ = false;
  uint32_t ranks_ = 1;
  uint64_t epoch_ = 0, epochs_ = 0, first_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace rf
