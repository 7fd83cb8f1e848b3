// Progress: a one-line progress bar (percent, MB/s, ETA) redrawn on stderr at most ten times a
// second while stderr is a terminal; nothing at all otherwise, so logs and pipes stay clean.
//
// Thread safety: none; the thread that does the work reports it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rf::convert {

class Progress {
 public:
  // total_bytes may be 0 (unknown): the bar then shows bytes and rate only. enabled=false
  // (--quiet) never draws.
  Progress(std::string label, uint64_t total_bytes, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Update(uint64_t bytes_done);
  // Erases the bar so the summary line that follows starts on a clean line.
  void Finish();
  double Seconds() const;

 private:
  void Draw(uint64_t bytes_done);

  std::string label_;
  uint64_t total_;
  bool draw_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// "<what>: 60000 samples, 12 chunks, 47.2 MB in 0.41 s (115.3 MB/s)".
std::string SummaryLine(const std::string& what, uint64_t samples, uint64_t chunks, uint64_t bytes,
                        double seconds);
// num / den with two decimals ("1.77"): a compression ratio; "0.00" where den is 0.
std::string RatioText(uint64_t num, uint64_t den);

}  // namespace rf::convert
