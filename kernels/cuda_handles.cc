#include "kernels/cuda_handles.h"

#include <cstdio>
#include <string>

#include "kernels/cuda_check.h"

// Deprecated in cuDNN 9 but present in every 9.x: see kernels/cuda_handles.h.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace rf::cuda {
namespace {

std::string Bytes(size_t n) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(n) / (1 << 20));
  return buf;
}

}  // namespace

Result<CudaStream> CreateStream() {
  cudaStream_t s = nullptr;
  RF_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return CudaStream(s);
}

Result<CudaEvent> CreateEvent(bool timing) {
  cudaEvent_t e = nullptr;
  RF_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return CudaEvent(e);
}

Result<CudnnHandle> CreateCudnn() {
  cudnnHandle_t h = nullptr;
  RF_CUDA_CHECK(cudnnCreate(&h));
  return CudnnHandle(h);
}

Result<CublasHandle> CreateCublas() {
  cublasHandle_t h = nullptr;
  RF_CUDA_CHECK(cublasCreate(&h));
  return CublasHandle(h);
}

Result<TensorDesc> CreateTensorDesc() {
  cudnnTensorDescriptor_t d = nullptr;
  RF_CUDA_CHECK(cudnnCreateTensorDescriptor(&d));
  return TensorDesc(d);
}

Result<FilterDesc> CreateFilterDesc() {
  cudnnFilterDescriptor_t d = nullptr;
  RF_CUDA_CHECK(cudnnCreateFilterDescriptor(&d));
  return FilterDesc(d);
}

Result<ConvDesc> CreateConvDesc() {
  cudnnConvolutionDescriptor_t d = nullptr;
  RF_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&d));
  return ConvDesc(d);
}

Result<ActivationDesc> CreateActivationDesc() {
  cudnnActivationDescriptor_t d = nullptr;
  RF_CUDA_CHECK(cudnnCreateActivationDescriptor(&d));
  return ActivationDesc(d);
}

Result<PoolingDesc> CreatePoolingDesc() {
  cudnnPoolingDescriptor_t d = nullptr;
  RF_CUDA_CHECK(cudnnCreatePoolingDescriptor(&d));
  return PoolingDesc(d);
}

DeviceBuffer::~DeviceBuffer() {
  if (p_ != nullptr) (void)cudaFree(p_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) (void)cudaFree(p_);
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

Result<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes, const char* what) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  const cudaError_t e = cudaMalloc(&b.p_, bytes);
  if (e != cudaSuccess) {
    b.p_ = nullptr;
    (void)cudaGetLastError();  // not sticky: clear it, or the next launch check would report it
    return Status::Aborted("cudaMalloc of " + Bytes(bytes) + " for " + what +
                           " failed: " + ErrorString(e));
  }
  b.bytes_ = bytes;
  return b;
}

PinnedBuffer::~PinnedBuffer() {
  if (p_ != nullptr) (void)cudaFreeHost(p_);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) (void)cudaFreeHost(p_);
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

Result<PinnedBuffer> PinnedBuffer::Allocate(size_t bytes, const char* what) {
  PinnedBuffer b;
  if (bytes == 0) return b;
  const cudaError_t e = cudaMallocHost(&b.p_, bytes);
  if (e != cudaSuccess) {
    b.p_ = nullptr;
    (void)cudaGetLastError();
    return Status::Aborted("cudaMallocHost of " + Bytes(bytes) + " for " + what +
                           " failed: " + ErrorString(e));
  }
  b.bytes_ = bytes;
  return b;
}

}  // namespace rf::cuda
