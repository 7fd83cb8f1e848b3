// HostBuffer: one owner for one block of page-aligned host memory that the reader fills and the
// copy engine reads: pinned (registered in place, cuda/handles.h's HostRegistration) where a CUDA
// device is present, so host-to-device
// copies run at full PCIe speed and asynchronously; plain memory otherwise. Buffers of 2 MiB
// or more are 2 MiB-aligned and asked for transparent huge pages (see Allocate). Allocated at
// start, and faulted in then (Prefault::kAtStart) or by their first writes (kOnFirstWrite: a
// large area a loader's first batch need not wait for); nothing in the data path allocates
// afterwards.
//
// Thread safety: the memory itself is the users' to coordinate (the SlotRing does); the object
// is move-only and not thread safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

#if RINGFEED_HAVE_CUDA
#include "cuda/handles.h"
#endif

namespace rf {

enum class PinMode { kAuto, kOn, kOff };          // auto: pinned if a CUDA device is present
enum class Prefault { kAtStart, kOnFirstWrite };  // pinned memory is faulted in at start
Result<PinMode> ParsePinMode(const char* s);

class HostBuffer {
 public:
  HostBuffer() = default;
  ~HostBuffer();
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  static constexpr size_t kHugePage = size_t{2} << 20;

  // `bytes` is rounded up to a multiple of 4096. kOn fails where no CUDA device can pin.
  static Result<HostBuffer> Allocate(size_t bytes, PinMode pin,
                                     Prefault prefault = Prefault::kAtStart);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool pinned() const { return static_cast<bool>(pin_); }
  // Bytes of the buffer the kernel backs with transparent huge pages now (/proc/self/smaps'
  // AnonHugePages of the mapping); 0 where that cannot be read. For diagnosis: what the
  // huge-page advice got, and whether pinning kept it.
  size_t HugePageBytes() const;

 private:
  void Free();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t map_bytes_ = 0;  // what is mapped at data_: size_ rounded up to the page size used
#if RINGFEED_HAVE_CUDA
  using Pin = cuda::HostRegistration;
#else
  struct Pin {
    explicit operator bool() const { return false; }
  };
#endif
  Pin pin_;  // Free() unregisters it before unmapping
};

}  // namespace rf
