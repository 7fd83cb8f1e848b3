// One move-only owner per cuDNN and cuBLAS handle and cuDNN descriptor the CUDA backend holds,
// on cuda/handles.h's UniqueHandle (the CUDA runtime's own owners live there). Each is made by a
// factory that returns Result (a failed create names the call, as RF_CUDA_CHECK does), and
// released once by its destructor, which never throws. The raw cuDNN and cuBLAS create/destroy
// calls live only here.
//
// Thread safety: none; an owner is used by one thread at a time.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include "core/status.h"
#include "cuda/handles.h"

// The legacy cuDNN API (descriptors, cudnnConvolutionForward, ...) is deprecated in cuDNN 9 but
// present in every 9.x; its warnings show only where CUDNN_WARN_DEPRECATED is defined. The
// backend uses it on purpose (see kernels/cuda_conv_block.h), so silence them for these names.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace rf::cuda {

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

using CudnnHandle = UniqueHandle<cudnnHandle_t, CudnnDestroy>;
using CublasHandle = UniqueHandle<cublasHandle_t, CublasDestroy>;
using TensorDesc = UniqueHandle<cudnnTensorDescriptor_t, TensorDescDestroy>;
using FilterDesc = UniqueHandle<cudnnFilterDescriptor_t, FilterDescDestroy>;
using ConvDesc = UniqueHandle<cudnnConvolutionDescriptor_t, ConvDescDestroy>;
using ActivationDesc = UniqueHandle<cudnnActivationDescriptor_t, ActivationDescDestroy>;
using PoolingDesc = UniqueHandle<cudnnPoolingDescriptor_t, PoolingDescDestroy>;

Result<CudnnHandle> CreateCudnn();
Result<CublasHandle> CreateCublas();
Result<TensorDesc> CreateTensorDesc();
Result<FilterDesc> CreateFilterDesc();
Result<ConvDesc> CreateConvDesc();
Result<ActivationDesc> CreateActivationDesc();
Result<PoolingDesc> CreatePoolingDesc();

}  // namespace rf::cuda

#pragma GCC diagnostic pop
