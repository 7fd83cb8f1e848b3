#include "kernels/cuda_done_clock.h"

#include <utility>

#include "core/clock.h"
#include "cuda/check.h"

namespace rf::cuda {
namespace {

// Elapsed times are floats of milliseconds, exact to about 1 us up to 16 s.
constexpr float kRebaseMs = 4000;

}  // namespace

Result<CudaDoneClock> CudaDoneClock::Create(cudaStream_t stream, uint32_t capacity) {
  if (capacity == 0) return Status::InvalidArgument("a done clock needs room for a mark");
  CudaDoneClock c;
  c.stream_ = stream;
  for (uint32_t i = 0; i < capacity; ++i) {
    RF_ASSIGN_OR_RETURN(CudaEvent e, CreateEvent(/*timing=*/true));
    c.events_.push_back(std::move(e));
  }
  c.callbacks_.resize(capacity);
  RF_ASSIGN_OR_RETURN(c.base_, CreateEvent(/*timing=*/true));
  return c;
}

Status CudaDoneClock::Mark(DoneFn fn, void* arg) {
  if (!based_) {
    // On an idle stream the base event completes as it is recorded: between the two host
    // readings around record and synchronize, so their midpoint is off by at most half of that
    // round trip (microseconds).
    RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const uint64_t before = SteadyNowNs();
    RF_CUDA_CHECK(cudaEventRecord(base_.get(), stream_));
    RF_CUDA_CHECK(cudaEventSynchronize(base_.get()));
    base_ns_ = before + (SteadyNowNs() - before) / 2;
    based_ = true;
  }
  const auto capacity = static_cast<uint32_t>(events_.size());
  if (count_ == capacity) {  // full: wait for the oldest, whose event is reused next
    RF_CUDA_CHECK(cudaEventSynchronize(events_[first_].get()));
  }
  RF_RETURN_IF_ERROR(Poll(/*wait=*/false));
  const uint32_t e = (first_ + count_) % capacity;
  RF_CUDA_CHECK(cudaEventRecord(events_[e].get(), stream_));
  callbacks_[e] = Callback{fn, arg};
  ++count_;
  return Status::Ok();
}

Status CudaDoneClock::Poll(bool wait) {
  while (count_ > 0) {
    cudaEvent_t event = events_[first_].get();
    if (wait) {
      RF_CUDA_CHECK(cudaEventSynchronize(event));
    } else {
      const cudaError_t q = cudaEventQuery(event);
      if (q == cudaErrorNotReady) {
        (void)cudaGetLastError();  // not an error: keep it from the next launch check
        return Status::Ok();
      }
      RF_CUDA_CHECK(q);
    }
    float ms = 0;
    RF_CUDA_CHECK(cudaEventElapsedTime(&ms, base_.get(), event));
    const uint64_t done_ns = base_ns_ + static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
    const Callback c = callbacks_[first_];
    if (ms > kRebaseMs) {  // a float's microseconds run out past a few seconds: rebase
      std::swap(base_, events_[first_]);
      base_ns_ = done_ns;
    }
    first_ = (first_ + 1) % static_cast<uint32_t>(events_.size());
    --count_;
    c.fn(c.arg, done_ns);
  }
  return Status::Ok();
}

}  // namespace rf::cuda
