#include "pipeline/stage/host_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "cuda/device.h"
#include "io/format.h"

namespace rf {

Result<PinMode> ParsePinMode(const char* s) {
  if (std::strcmp(s, "auto") == 0) return PinMode::kAuto;
  if (std::strcmp(s, "on") == 0) return PinMode::kOn;
  if (std::strcmp(s, "off") == 0) return PinMode::kOff;
  return Status::InvalidArgument(std::string("--pinned must be auto, on or off, not '") + s + "'");
}

HostBuffer::~HostBuffer() { Free(); }

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      map_bytes_(std::exchange(o.map_bytes_, 0)),
      pin_(std::move(o.pin_)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    Free();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    pin_ = std::move(o.pin_);
  }
  return *this;
}

void HostBuffer::Free() {
  if (data_ == nullptr) return;
  pin_ = Pin();  // unregistered before the memory goes
  ::munmap(data_, map_bytes_);
  data_ = nullptr;
}

size_t HostBuffer::HugePageBytes() const {
  if (data_ == nullptr) return 0;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto start = reinterpret_cast<uintptr_t>(data_);
  while (std::getline(smaps, line)) {
    // A mapping's header: "7f1234000000-7f1238000000 rw-p 00000000 00:00 0 ..."
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= start && start < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stoull(line.substr(14)) * 1024;  // "AnonHugePages:   65536 kB"
    }
  }
  return 0;
}

Result<HostBuffer> HostBuffer::Allocate(size_t bytes, PinMode pin, Prefault prefault) {
  const bool want_pinned = pin == PinMode::kOn || (pin == PinMode::kAuto && CudaDevicePresent());
#if !RINGFEED_HAVE_CUDA
  if (want_pinned) return Status::Unsupported("pinned memory needs a CUDA build");
#endif
  HostBuffer b;
  b.size_ = format::RoundUp(bytes == 0 ? 1 : bytes, format::kAlign);
  // Huge pages where the buffer is large enough: a 2 MiB page is physically contiguous, so an
  // O_DIRECT read into it is one DMA segment instead of one per 4 KiB page, and the block layer
  // does not have to split a 1 MiB read at the device's segment limit (254 segments of 4 KiB on
  // a virtio disk: 1016 KiB). The mapping is 2 MiB-aligned for that.
  const bool huge = b.size_ >= kHugePage;
  b.map_bytes_ = huge ? format::RoundUp(b.size_, kHugePage) : b.size_;
  const size_t reserve = b.map_bytes_ + (huge ? kHugePage : 0);
  void* p = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    // Out of memory or address space: an OSError (ENOMEM) in Python, not a ValueError.
    return Status::IOError("", "cannot map " + std::to_string(reserve) + " bytes of host memory",
                           errno);
  }
  auto* base = static_cast<uint8_t*>(p);
  uint8_t* aligned = base;
  if (huge) {  // trim the mapping to a 2 MiB-aligned start and length
    aligned =
        reinterpret_cast<uint8_t*>(format::RoundUp(reinterpret_cast<uintptr_t>(base), kHugePage));
    if (aligned > base) ::munmap(base, aligned - base);
    const uint8_t* end = base + reserve;
    if (aligned + b.map_bytes_ < end)
      ::munmap(aligned + b.map_bytes_, end - (aligned + b.map_bytes_));
    (void)::madvise(aligned, b.map_bytes_, MADV_HUGEPAGE);  // advice; without THP, 4 KiB pages
  }
  b.data_ = aligned;
  // Fault every page in now, at start, rather than in the data path (pinning does anyway).
  if (prefault == Prefault::kAtStart || want_pinned) std::memset(b.data_, 0, b.map_bytes_);
  if (want_pinned) {
#if RINGFEED_HAVE_CUDA
    RF_ASSIGN_OR_RETURN(b.pin_, cuda::RegisterHost(b.data_, b.map_bytes_));
#endif
  }
  return b;
}

}  // namespace rf
