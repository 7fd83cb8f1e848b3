#include "pipeline/cpu_share.h"

#include <algorithm>

namespace rf {

AdaptiveCpuShare::AdaptiveCpuShare(double floor)
    : floor_(std::clamp(floor, 0.0, 1.0)), share_(floor_) {}

void AdaptiveCpuShare::Waited(uint64_t ns) {
  const double s = share();
  const double next = ns > kLateNs ? std::max(floor_, s - kFall) : std::min(1.0, s + kRise);
  share_.store(next, std::memory_order_relaxed);
}

}  // namespace rf
