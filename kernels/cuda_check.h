// The one way CUDA runtime, cuDNN and cuBLAS calls are checked: RF_CUDA_CHECK(call) evaluates the
// call and, where it failed, returns from the enclosing function (which returns Status or
// Result<T>) a Status::Aborted whose message names the call as written, where it is and the
// library's own error string:
//   "cudnnConvolutionForward(...) failed at kernels/cuda_conv_block.cc:120: CUDNN_STATUS_BAD_PARAM"
// Aborted, because a failed GPU call is not something the caller's data or arguments can fix:
// the run stops with that one line.
//
// Destructors of the owners in kernels/cuda_handles.h do not use it: they cannot return, and a
// failed release there changes nothing the program can act on.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>
#include <string_view>

#include "io/status.h"

namespace rf::cuda {

inline bool Succeeded(cudaError_t e) { return e == cudaSuccess; }
inline bool Succeeded(cudnnStatus_t e) { return e == CUDNN_STATUS_SUCCESS; }
inline bool Succeeded(cublasStatus_t e) { return e == CUBLAS_STATUS_SUCCESS; }

inline std::string ErrorString(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}
inline std::string ErrorString(cudnnStatus_t e) { return cudnnGetErrorString(e); }
inline std::string ErrorString(cublasStatus_t e) { return cublasGetStatusString(e); }

// The path from the source tree's root ("kernels/cuda_backend.cc"): __FILE__ is absolute in a
// CMake build, and the build machine's directories mean nothing to whoever reads the message.
inline const char* SourcePath(const char* file) {
  const std::string_view f(file);
  for (const char* dir : {"/kernels/", "/tools/", "/tests/", "/pipeline/", "/src/"}) {
    const size_t at = f.rfind(dir);
    if (at != std::string_view::npos) return file + at + 1;
  }
  return file;
}

// A failed runtime call also leaves its error as the thread's "last error" (unless it is sticky),
// where the next kernel launch's cudaGetLastError() would report it again under another name:
// reporting it consumes it.
inline void Consume(cudaError_t) { (void)cudaGetLastError(); }
inline void Consume(cudnnStatus_t) {}
inline void Consume(cublasStatus_t) {}

template <typename E>
Status Failure(E e, const char* call, const char* file, int line) {
  Consume(e);
  return Status::Aborted(std::string(call) + " failed at " + SourcePath(file) + ":" +
                         std::to_string(line) + ": " + ErrorString(e));
}

}  // namespace rf::cuda

#define RF_CUDA_CHECK(call)                                              \
  do {                                                                   \
    const auto rf_cuda_e_ = (call);                                      \
    if (!::rf::cuda::Succeeded(rf_cuda_e_)) {                            \
      return ::rf::cuda::Failure(rf_cuda_e_, #call, __FILE__, __LINE__); \
    }                                                                    \
  } while (0)
