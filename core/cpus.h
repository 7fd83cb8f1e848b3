// The CPUs this process may run on: its affinity mask's count (what a launcher that binds ranks
// leaves it), else the machine's, at least 1. For sizing thread pools.
#pragma once

#include <sched.h>

#include <thread>

namespace rf {

inline unsigned AvailableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

}  // namespace rf
