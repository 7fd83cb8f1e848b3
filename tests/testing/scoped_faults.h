// ScopedFaults: plants a fault plan (io/fault_plan.h's grammar) for one scope, through
// SetFaultSpecForTesting (not setenv: the writers' and readers' threads read it meanwhile);
// kWriteFaults: the write and fsync faults the writers' tests plant, each with the end of the
// one-line error it makes (after the path).
#pragma once

#include <string>

#include "io/fault_plan.h"

namespace rf::testing {

class ScopedFaults {
 public:
  explicit ScopedFaults(const std::string& faults) { SetFaultSpecForTesting(faults); }
  ~ScopedFaults() { SetFaultSpecForTesting(std::nullopt); }
  ScopedFaults(const ScopedFaults&) = delete;
  ScopedFaults& operator=(const ScopedFaults&) = delete;
};

struct InjectedFault {
  const char* fault;    // a RINGFEED_FAULTS entry without its "@path=..."
  const char* message;  // what Status::ToString() says after the path
};
inline constexpr InjectedFault kWriteFaults[] = {
    {"write:enospc", ": at byte 0: write failed: No space left on device (errno 28)"},
    {"write:eio", ": at byte 0: write failed: Input/output error (errno 5)"},
    {"fsync:eio", ": fsync failed: Input/output error (errno 5)"},
    {"fsync:enospc", ": fsync failed: No space left on device (errno 28)"},
};

}  // namespace rf::testing
