// The one way CUDA calls are checked: RF_CUDA_CHECK(call) evaluates the call and, where it
// failed, returns from the enclosing function (which returns Status or Result<T>) a
// Status::Aborted whose message names the call as written, where it is and the library's own
// error string:
//   "cudaMemcpyAsync(...) failed at pipeline/stage/cuda_chunk_staging.cc:61: cudaErrorInvalidValue
//   (...)"
// Aborted, because a failed GPU call is not something the caller's data or arguments can fix:
// the run stops with that one line.
//
// This header knows the CUDA runtime's error type; kernels/dnn_check.h adds cuDNN's and
// cuBLAS's (an overload of Succeeded and Describe each), so the macro checks their calls too
// where that header is included. Destructors of the owners in cuda/handles.h do not use it:
// they cannot return, and a failed release there changes nothing the program can act on.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace rf::cuda {

inline bool Succeeded(cudaError_t e) { return e == cudaSuccess; }

// The error's name and text. A failed runtime call also leaves its error as the thread's "last
// error" (unless it is sticky), where the next kernel launch's cudaGetLastError() would report
// it again under another name: describing it consumes it.
inline std::string Describe(cudaError_t e) {
  (void)cudaGetLastError();
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

// The path from the source tree's root ("kernels/cuda_backend.cc"): __FILE__ is absolute in a
// CMake build, and the build machine's directories mean nothing to whoever reads the message.
inline const char* SourcePath(const char* file) {
  const std::string_view f(file);
  for (const char* dir : {"/cuda/", "/kernels/", "/pipeline/", "/dist/", "/io/", "/src/",
                          "/python/", "/tools/", "/tests/"}) {
    const size_t at = f.rfind(dir);
    if (at != std::string_view::npos) return file + at + 1;
  }
  return file;
}

inline Status Failure(const std::string& error, const char* call, const char* file, int line) {
  return Status::Aborted(std::string(call) + " failed at " + SourcePath(file) + ":" +
                         std::to_string(line) + ": " + error);
}

}  // namespace rf::cuda

// Both helpers are named with qualified names where the macro is expanded, so every overload
// declared by then (this header's, kernels/dnn_check.h's) takes part.
#define RF_CUDA_CHECK(call)                                                                    \
  do {                                                                                         \
    const auto rf_cuda_e_ = (call);                                                            \
    if (!::rf::cuda::Succeeded(rf_cuda_e_)) {                                                  \
      return ::rf::cuda::Failure(::rf::cuda::Describe(rf_cuda_e_), #call, __FILE__, __LINE__); \
    }                                                                                          \
  } while (0)
