// One move-only owner per CUDA, cuDNN and cuBLAS handle the CUDA backend holds: device memory,
// pinned host memory, streams, events, graphs, library handles and cuDNN descriptors. Each is
// made by a factory that returns Result (a failed create names the call, as RF_CUDA_CHECK
// does), and released once by its destructor, which never throws and ignores the release's
// status (nothing can act on it there). The raw create/destroy calls live only here.
//
// Thread safety: none; an owner is used by one thread at a time.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <utility>

#include "io/status.h"

// The legacy cuDNN API (descriptors, cudnnConvolutionForward, ...) is deprecated in cuDNN 9 but
// present in every 9.x; its warnings show only where CUDNN_WARN_DEPRECATED is defined. The
// backend uses it on purpose (see kernels/cuda_conv_block.h), so silence them for these names.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

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
struct CudnnDestroy {
  void operator()(cudnnHandle_t h) const noexcept { (void)cudnnDestroy(h); }
};
struct CublasDestroy {
  void operator()(cublasHandle_t h) const noexcept { (void)cublasDestroy(h); }
};
struct TensorDescDestroy {
  void operator()(cudnnTensorDescriptor_t d) const noexcept {
    (void)cudnnDestroyTensorDescriptor(d);
  }
};
struct FilterDescDestroy {
  void operator()(cudnnFilterDescriptor_t d) const noexcept {
    (void)cudnnDestroyFilterDescriptor(d);
  }
};
struct ConvDescDestroy {
  void operator()(cudnnConvolutionDescriptor_t d) const noexcept {
    (void)cudnnDestroyConvolutionDescriptor(d);
  }
};
struct ActivationDescDestroy {
  void operator()(cudnnActivationDescriptor_t d) const noexcept {
    (void)cudnnDestroyActivationDescriptor(d);
  }
};
struct PoolingDescDestroy {
  void operator()(cudnnPoolingDescriptor_t d) const noexcept {
    (void)cudnnDestroyPoolingDescriptor(d);
  }
};

using CudaStream = UniqueHandle<cudaStream_t, StreamDestroy>;
using CudaEvent = UniqueHandle<cudaEvent_t, EventDestroy>;
using CudaGraph = UniqueHandle<cudaGraph_t, GraphDestroy>;
using CudaGraphExec = UniqueHandle<cudaGraphExec_t, GraphExecDestroy>;
using CudnnHandle = UniqueHandle<cudnnHandle_t, CudnnDestroy>;
using CublasHandle = UniqueHandle<cublasHandle_t, CublasDestroy>;
using TensorDesc = UniqueHandle<cudnnTensorDescriptor_t, TensorDescDestroy>;
using FilterDesc = UniqueHandle<cudnnFilterDescriptor_t, FilterDescDestroy>;
using ConvDesc = UniqueHandle<cudnnConvolutionDescriptor_t, ConvDescDestroy>;
using ActivationDesc = UniqueHandle<cudnnActivationDescriptor_t, ActivationDescDestroy>;
using PoolingDesc = UniqueHandle<cudnnPoolingDescriptor_t, PoolingDescDestroy>;

// A non-blocking stream (it does not wait for the legacy default stream).
Result<CudaStream> CreateStream();
// timing: whether cudaEventElapsedTime may use it (events without timing are cheaper).
Result<CudaEvent> CreateEvent(bool timing);
Result<CudnnHandle> CreateCudnn();
Result<CublasHandle> CreateCublas();
Result<TensorDesc> CreateTensorDesc();
Result<FilterDesc> CreateFilterDesc();
Result<ConvDesc> CreateConvDesc();
Result<ActivationDesc> CreateActivationDesc();
Result<PoolingDesc> CreatePoolingDesc();

// Device memory from cudaMalloc (256-byte aligned). `what` names it in the failure message
// ("cudaMalloc of 512.0 MiB for conv0 activations failed: ...").
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Zero bytes gives an empty buffer (data() null) without calling cudaMalloc.
  static Result<DeviceBuffer> Allocate(size_t bytes, const char* what);

  void* data() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory from cudaMallocHost: the target of asynchronous device-to-host copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  static Result<PinnedBuffer> Allocate(size_t bytes, const char* what);

  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace rf::cuda

#pragma GCC diagnostic pop
