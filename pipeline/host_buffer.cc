#include "pipeline/host_buffer.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "io/format.h"

#if RINGFEED_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace rf {

Result<PinMode> ParsePinMode(const char* s) {
  if (std::strcmp(s, "auto") == 0) return PinMode::kAuto;
  if (std::strcmp(s, "on") == 0) return PinMode::kOn;
  if (std::strcmp(s, "off") == 0) return PinMode::kOff;
  return Status::InvalidArgument(std::string("--pinned must be auto, on or off, not '") + s + "'");
}

bool CudaDevicePresent() {
#if RINGFEED_HAVE_CUDA
  static const bool present = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky "no device" error
      return false;
    }
    return n > 0;
  }();
  return present;
#else
  return false;
#endif
}

HostBuffer::~HostBuffer() { Free(); }

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      pinned_(o.pinned_) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    Free();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    pinned_ = o.pinned_;
  }
  return *this;
}

void HostBuffer::Free() {
  if (data_ == nullptr) return;
#if RINGFEED_HAVE_CUDA
  if (pinned_) {
    cudaFreeHost(data_);  // a destructor never throws; an error here has nowhere to go
    data_ = nullptr;
    return;
  }
#endif
  std::free(data_);
  data_ = nullptr;
}

Result<HostBuffer> HostBuffer::Allocate(size_t bytes, PinMode pin) {
  HostBuffer b;
  b.size_ = format::RoundUp(bytes == 0 ? 1 : bytes, format::kAlign);
  const bool want_pinned = pin == PinMode::kOn || (pin == PinMode::kAuto && CudaDevicePresent());
  if (want_pinned) {
#if RINGFEED_HAVE_CUDA
    void* p = nullptr;
    cudaError_t e = cudaHostAlloc(&p, b.size_, cudaHostAllocPortable);
    if (e != cudaSuccess) {
      return Status::InvalidArgument("cudaHostAlloc of " + std::to_string(b.size_) +
                                     " bytes failed: " + cudaGetErrorString(e));
    }
    b.data_ = static_cast<uint8_t*>(p);
    b.pinned_ = true;
    return b;
#else
    return Status::Unsupported("pinned memory needs a CUDA build");
#endif
  }
  void* p = std::aligned_alloc(format::kAlign, b.size_);
  if (p == nullptr)
    return Status::InvalidArgument("cannot allocate " + std::to_string(b.size_) + " bytes");
  b.data_ = static_cast<uint8_t*>(p);
  return b;
}

}  // namespace rf
