// The one clock ringfeed's counters, traces and timelines use: steady_clock, in nanoseconds since
// its epoch (monotonic; comparable across threads of one process).
#pragma once

#include <chrono>
#include <cstdint>

namespace rf {

inline uint64_t SteadyNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace rf
