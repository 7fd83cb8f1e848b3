// CudaDoneClock: when did the work queued on a stream so far finish, in host steady_clock
// nanoseconds, without stalling the stream. For timelines (--trace): a host function in the
// stream (cudaLaunchHostFunc) would report the same moment, but the stream waits for it to run,
// which slowed a traced epoch by a sixth and stretched the very steps it timed.
//
// Each Mark records a timing event after the work queued so far; the marks' callbacks run, in
// order and on the caller's thread, from a later Mark or Poll once their events have completed,
// with the event's time mapped to the host clock: host time = base_ns + (event - base event).
// The base pair is taken at the first Mark, by synchronizing the stream and then one event
// recorded on it (the host time is known to within half that round trip, microseconds); a mark
// more than a few seconds past the base becomes the new base, as float milliseconds lose
// microseconds beyond that. At most `capacity` marks are pending; a Mark beyond that waits for
// the oldest.
//
// Thread safety: none; the thread that queues work on the stream uses it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "cuda/handles.h"

namespace rf::cuda {

class CudaDoneClock {
 public:
  using DoneFn = void (*)(void* arg, uint64_t done_ns);

  static Result<CudaDoneClock> Create(cudaStream_t stream, uint32_t capacity);

  Status Mark(DoneFn fn, void* arg);
  // Runs the callbacks of the marks that have completed; with wait, of every mark.
  Status Poll(bool wait);

 private:
  struct Callback {
    DoneFn fn;
    void* arg;
  };
  cudaStream_t stream_ = nullptr;
  // A ring, allocated once: the pending marks are events_[first_], ... count_ of them, with
  // their callbacks at the same indices.
  std::vector<CudaEvent> events_;
  std::vector<Callback> callbacks_;
  uint32_t first_ = 0, count_ = 0;
  CudaEvent base_;
  uint64_t base_ns_ = 0;
  bool based_ = false;
};

}  // namespace rf::cuda
