#include "kernels/dnn_handles.h"

#include "kernels/dnn_check.h"

// Deprecated in cuDNN 9 but present in every 9.x: see kernels/dnn_handles.h.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace rf::cuda {
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

}  // namespace rf::cuda
