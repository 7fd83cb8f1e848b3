// One move-only owner per CUDA runtime resource: streams, events, graphs, device memory, pinned
// host memory, managed memory, and host memory registered (page-locked) in place. Each is made
// by a factory that returns Result (a failed create names the call, as RF_CUDA_CHECK does) and
// released once by its destructor, which never throws and ignores the release's status (nothing
// can act on it there). The raw create/destroy calls of these resources live only here
// (cuDNN's and cuBLAS's handles: kernels/dnn_handles.h, built on UniqueHandle below).
//
// Every owner releases into the CUDA context it was made in; work queued on a stream that uses
// the memory must have finished before the owner dies (callers synchronize first).
//
// Thread safety: none; an owner is used by one thread at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "core/status.h"

namespace rf::cuda {

// Owns `Handle` and calls Destroy on it once. Handle{} means "none".
template <typename Handle, typename Destroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle h) : h_(h) {}
  ~UniqueHandle() { Reset(); }
  UniqueHandle(UniqueHandle&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      Reset();
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;

  Handle get() const { return h_; }
  explicit operator bool() const { return h_ != Handle{}; }

 private:
  void Reset() noexcept {
    if (h_ != Handle{}) Destroy{}(h_);
    h_ = Handle{};
  }
  Handle h_{};
};

struct StreamDestroy {
  void operator()(cudaStream_t s) const noexcept { (void)cudaStreamDestroy(s); }
};
struct EventDestroy {
  void operator()(cudaEvent_t e) const noexcept { (void)cudaEventDestroy(e); }
};
struct GraphDestroy {
  void operator()(cudaGraph_t g) const noexcept { (void)cudaGraphDestroy(g); }
};
struct GraphExecDestroy {
  void operator()(cudaGraphExec_t g) const noexcept { (void)cudaGraphExecDestroy(g); }
};

using CudaStream = UniqueHandle<cudaStream_t, StreamDestroy>;
using CudaEvent = UniqueHandle<cudaEvent_t, EventDestroy>;
using CudaGraph = UniqueHandle<cudaGraph_t, GraphDestroy>;
using CudaGraphExec = UniqueHandle<cudaGraphExec_t, GraphExecDestroy>;

// A non-blocking stream (it does not wait for the legacy default stream). highest_priority: the
// device's greatest stream priority (its kernels are scheduled before those of lower-priority
// streams that wait for SMs: a collective overlapping compute).
Result<CudaStream> CreateStream(bool highest_priority = false);
// timing: whether cudaEventElapsedTime may use it (events without timing are cheaper).
Result<CudaEvent> CreateEvent(bool timing);
// Ends the capture begun on `stream` with cudaStreamBeginCapture (always, so the stream leaves
// capture mode) and instantiates the graph it captured. `captured` is how the work issued during
// the capture went: where it failed, that failure is returned and nothing is instantiated.
Result<CudaGraphExec> EndCaptureAndInstantiate(cudaStream_t stream, const Status& captured);

// The three CUDA allocators, each with its matching free.
struct DeviceAlloc {  // cudaMalloc: device memory, 256-byte aligned
  static constexpr const char* kCall = "cudaMalloc";
  static cudaError_t Allocate(void** p, size_t n) { return cudaMalloc(p, n); }
  static void Free(void* p) noexcept { (void)cudaFree(p); }
};
struct PinnedAlloc {  // cudaMallocHost: page-locked host memory, for asynchronous copies
  static constexpr const char* kCall = "cudaMallocHost";
  static cudaError_t Allocate(void** p, size_t n) { return cudaMallocHost(p, n); }
  static void Free(void* p) noexcept { (void)cudaFreeHost(p); }
};
struct ManagedAlloc {  // cudaMallocManaged: one address space for host and GPU, paged on demand
  static constexpr const char* kCall = "cudaMallocManaged";
  static cudaError_t Allocate(void** p, size_t n) {
    return cudaMallocManaged(p, n, cudaMemAttachGlobal);
  }
  static void Free(void* p) noexcept { (void)cudaFree(p); }
};

// The Aborted status of a failed allocation: "cudaMalloc of 512.0 MiB for conv0 activations
// failed: cudaErrorMemoryAllocation (out of memory)" (the error consumed, see Describe).
Status AllocationFailure(const char* call, size_t bytes, const char* what, cudaError_t e);

// Memory from one allocator, freed once by its free.
template <typename Alloc>
class Memory {
 public:
  Memory() = default;
  ~Memory() { Reset(); }
  Memory(Memory&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  Memory& operator=(Memory&& o) noexcept {
    if (this != &o) {
      Reset();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  // Zero bytes gives an empty buffer (data() null) without calling the allocator. `what` names
  // the buffer in the failure message.
  static Result<Memory> Allocate(size_t bytes, const char* what) {
    Memory m;
    if (bytes == 0) return m;
    const cudaError_t e = Alloc::Allocate(&m.p_, bytes);
    if (e != cudaSuccess) {
      m.p_ = nullptr;
      return AllocationFailure(Alloc::kCall, bytes, what, e);
    }
    m.bytes_ = bytes;
    return m;
  }

  void* data() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void Reset() noexcept {
    if (p_ != nullptr) Alloc::Free(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceBuffer = Memory<DeviceAlloc>;
using PinnedBuffer = Memory<PinnedAlloc>;
using ManagedBuffer = Memory<ManagedAlloc>;

// Host memory the caller allocated and keeps owning, page-locked in place (cudaHostRegister,
// portable to every context) for as long as the registration lives, so host-to-device copies
// from it run asynchronously at full speed. The registration must die before the memory is
// freed.
struct HostUnregister {
  void operator()(void* p) const noexcept { (void)cudaHostUnregister(p); }
};
using HostRegistration = UniqueHandle<void*, HostUnregister>;
// Aborted "cudaHostRegister of N bytes failed: ..." where it fails (no device, a limit).
Result<HostRegistration> RegisterHost(void* p, size_t bytes);

// The calling thread's current device set to `device` for the guard's lifetime, then restored:
// for CUDA calls made on threads the caller does not own (a consumer's thread releasing a batch),
// where the thread's own current device must not change.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device)
      (void)cudaSetDevice(device);
    else
      previous_ = -1;  // nothing to restore
  }
  ~ScopedDevice() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace rf::cuda
