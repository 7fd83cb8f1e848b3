#include "tools/convert/progress.h"

#include <unistd.h>

#include <cstdio>

namespace rf::convert {
namespace {

double Mb(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

}  // namespace

Progress::Progress(std::string label, uint64_t total_bytes, bool enabled)
    : label_(std::move(label)),
      total_(total_bytes),
      draw_(enabled && ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { Finish(); }

double Progress::Seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Update(uint64_t bytes_done) {
  if (!draw_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(bytes_done);
}

void Progress::Draw(uint64_t bytes_done) {
  const double secs = Seconds();
  const double rate = secs > 0 ? Mb(bytes_done) / secs : 0;
  char line[160];
  if (total_ > 0) {
    const double frac =
        std::min(1.0, static_cast<double>(bytes_done) / static_cast<double>(total_));
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kWidth - filled), '.');
    const double eta = rate > 0 ? (Mb(total_) - Mb(bytes_done)) / rate : 0;
    std::snprintf(line, sizeof line, "\r%s [%s] %5.1f%%  %8.1f MB/s  ETA %4.0f s ", label_.c_str(),
                  bar.c_str(), frac * 100, rate, eta);
  } else {
    std::snprintf(line, sizeof line, "\r%s %10.1f MB  %8.1f MB/s ", label_.c_str(), Mb(bytes_done),
                  rate);
  }
  std::fputs(line, stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::Finish() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);  // carriage return, erase to end of line
  std::fflush(stderr);
  drawn_ = false;
}

std::string SummaryLine(const std::string& what, uint64_t samples, uint64_t chunks, uint64_t bytes,
                        double seconds) {
  char line[256];
  std::snprintf(line, sizeof line, "%s: %llu samples, %llu chunks, %.1f MB in %.2f s (%.1f MB/s)",
                what.c_str(), static_cast<unsigned long long>(samples),
                static_cast<unsigned long long>(chunks), Mb(bytes), seconds,
                seconds > 0 ? Mb(bytes) / seconds : 0.0);
  return line;
}

std::string RatioText(uint64_t num, uint64_t den) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f",
                den == 0 ? 0.0 : static_cast<double>(num) / static_cast<double>(den));
  return text;
}

}  // namespace rf::convert
