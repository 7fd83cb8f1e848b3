// The learning-rate schedule: the lr of each training step as a pure function of the step's
// index, so every rank, backend and resumed run computes the same value for the same step.
//
// Notation: b = the base lr (--lr), s = the step's 0-based index over the whole run (the steps
// taken before it), P = steps per epoch, T = P * epochs (the schedule's length in steps),
// W = ceil(warmup_epochs * P) warmup steps, at most T.
//
//   warmup      s < W: b * (s + 1) / W   (a linear rise from b/W to b; not for onecycle)
//   constant    b
//   step        b * 0.1^k, k = how many of the milestones floor(0.5 T) and floor(0.75 T) are <= s
//   cosine      b * 0.5 * (1 + cos(pi * t)), t = (s - W) / (T - W): b right after warmup, falling
//               to 0 at the end of training
//   onecycle    the 1cycle policy (Smith 2018; torch.optim.lr_scheduler.OneCycleLR's defaults,
//               with a linear rise): U = W if warmup_epochs > 0, else ceil(0.3 T) (at most T);
//                 s < U:  lo + (b - lo) * s / U,            lo = b / 25
//                 s >= U: fin + (b - fin) * 0.5 * (1 + cos(pi * (s - U) / (T - U))),
//                         fin = b / 25 / 1e4
//               so it starts at b/25, peaks at b at step U, and anneals to b/250000.
// t is clamped to [0, 1]: steps past T (a run resumed with more epochs than its schedule spans)
// keep the schedule's final value.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace rf {

enum class LrScheduleKind : uint32_t { kConstant = 0, kStep = 1, kCosine = 2, kOneCycle = 3 };

struct LrScheduleConfig {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  float warmup_epochs = 0;  // fractional allowed; counted in steps (W above)
};

// How many steps the schedule spans: fixed when a run begins (and kept by the checkpoints of the
// run, so a resumed run follows the same schedule).
struct LrScheduleSpan {
  uint64_t steps_per_epoch = 0;  // P >= 1
  uint64_t epochs = 0;           // >= 1
};

// The lr of step s (0-based) for base lr `base`.
double ScheduledLr(double base, uint64_t step, const LrScheduleSpan& span,
                   const LrScheduleConfig& c);

// "constant", "step", "cosine", "onecycle"; anything else is Usage naming --lr-schedule.
Result<LrScheduleKind> ParseLrSchedule(const std::string& s);
const char* LrScheduleName(LrScheduleKind k);

}  // namespace rf
