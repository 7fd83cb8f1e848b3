// The CPUs this process may run on: its affinity mask's count (what a launcher that binds ranks
// leaves it), else the machine's, at least 1. For sizing thread pools.
#pragma once

#include <sched.h>

#include <cstdint>
#include <cstdlib>
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

// The ranks sharing this machine (OMPI_COMM_WORLD_LOCAL_SIZE or torchrun's LOCAL_WORLD_SIZE),
// 1 where neither is set: a rank's thread pools take their share of AvailableCpus().
inline uint32_t LocalRanks() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (end != v && *end == '\0' && n >= 1 && n <= 4096) return static_cast<uint32_t>(n);
  }
  return 1;
}

}  // namespace rf
