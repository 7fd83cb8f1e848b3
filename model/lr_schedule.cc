#include "model/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace rf {
namespace {

constexpr double kPi = 3.14159265358979323846;

// (s - start) / (end - start), clamped to [0, 1]; 1 where the interval is empty.
double Progress(uint64_t s, uint64_t start, uint64_t end) {
  if (end <= start) return 1.0;
  if (s <= start) return 0.0;
  return std::min(1.0, static_cast<double>(s - start) / static_cast<double>(end - start));
}

double HalfCosine(double t) { return 0.5 * (1 + std::cos(kPi * t)); }

}  // namespace

double ScheduledLr(double base, uint64_t step, const LrScheduleSpan& span,
                   const LrScheduleConfig& c) {
  const uint64_t per_epoch = std::max<uint64_t>(span.steps_per_epoch, 1);
  const uint64_t total = per_epoch * std::max<uint64_t>(span.epochs, 1);
  const double warm = std::ceil(static_cast<double>(c.warmup_epochs) * per_epoch);
  // Clamped before the cast: a warmup past the run's end (--warmup-epochs 1e18) warms up the
  // whole run; the cast of a double past 2^64 was undefined (on x86 it gave 0: no warmup).
  const uint64_t w = warm >= static_cast<double>(total) ? total
                     : warm > 0                         ? static_cast<uint64_t>(warm)
                                                        : 0;

  if (c.kind == LrScheduleKind::kOneCycle) {
    const uint64_t up =
        w > 0 ? w : std::min<uint64_t>(total, static_cast<uint64_t>(std::ceil(0.3 * total)));
    const double lo = base / 25, fin = base / 25 / 1e4;
    if (step < up) return lo + (base - lo) * static_cast<double>(step) / static_cast<double>(up);
    return fin + (base - fin) * HalfCosine(Progress(step, up, total));
  }
  if (step < w) return base * static_cast<double>(step + 1) / static_cast<double>(w);
  switch (c.kind) {
    case LrScheduleKind::kStep: {
      double lr = base;
      for (double m : {0.5, 0.75}) {
        if (step >= static_cast<uint64_t>(std::floor(m * total))) lr *= 0.1;
      }
      return lr;
    }
    case LrScheduleKind::kCosine:
      return base * HalfCosine(Progress(step, w, total));
    default:
      return base;
  }
}

Result<LrScheduleKind> ParseLrSchedule(const std::string& s) {
  if (s == "constant") return LrScheduleKind::kConstant;
  if (s == "step") return LrScheduleKind::kStep;
  if (s == "cosine") return LrScheduleKind::kCosine;
  if (s == "onecycle") return LrScheduleKind::kOneCycle;
  return Status::Usage("--lr-schedule must be constant, step, cosine or onecycle, got \"" + s +
                       "\"");
}

const char* LrScheduleName(LrScheduleKind k) {
  switch (k) {
    case LrScheduleKind::kStep:
      return "step";
    case LrScheduleKind::kCosine:
      return "cosine";
    case LrScheduleKind::kOneCycle:
      return "onecycle";
    default:
      return "constant";
  }
}

}  // namespace rf
