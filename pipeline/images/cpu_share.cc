#include "pipeline/images/cpu_share.h"

#include <algorithm>

namespace rf {

AdaptiveCpuShare::AdaptiveCpuShare(double floor)
    : floor_(std::clamp(floor, 0.0, 1.0)), share_(floor_) {}

void AdaptiveCpuShare::Waited(uint64_t ns, bool cpu_last) {
  const double s = share();
  if (ns > kLateNs) {
    ready_ = 0;
    share_.store(cpu_last ? std::max(floor_, s - kFall) : std::min(1.0, s + kRise),
                 std::memory_order_relaxed);
  } else if (++ready_ >= kReadyRun) {
    share_.store(std::min(1.0, s + kRise), std::memory_order_relaxed);
  }
}

}  // namespace rf
