// RF_CUDA_CHECK (cuda/check.h) for cuDNN and cuBLAS calls: their status types' overloads of
// Succeeded and Describe. Include this where such calls are checked; the macro then names a
// failed cuDNN or cuBLAS call as it names a runtime one:
//   "cudnnConvolutionForward(...) failed at kernels/cuda_conv_block.cc:120: CUDNN_STATUS_BAD_PARAM"
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "cuda/check.h"

namespace rf::cuda {

inline bool Succeeded(cudnnStatus_t e) { return e == CUDNN_STATUS_SUCCESS; }
inline bool Succeeded(cublasStatus_t e) { return e == CUBLAS_STATUS_SUCCESS; }
inline std::string Describe(cudnnStatus_t e) { return cudnnGetErrorString(e); }
inline std::string Describe(cublasStatus_t e) { return cublasGetStatusString(e); }

}  // namespace rf::cuda
