// RF_CUDA_CHECK (cuda/check.h) for NCCL calls: ncclResult_t's overloads of Succeeded and Describe,
// so a failed NCCL call is named like a runtime one, with NCCL's last error where it has one:
//   "ncclCommInitRank(...) failed at dist/nccl_reducer.cc:40: unhandled system error (...)"
#pragma once

#include <nccl.h>

#include <string>

#include "cuda/check.h"

namespace rf::cuda {

inline bool Succeeded(ncclResult_t e) { return e == ncclSuccess; }
inline std::string Describe(ncclResult_t e) {
  std::string s = ncclGetErrorString(e);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') s += std::string(" (") + last + ")";
  return s;
}

}  // namespace rf::cuda
