#include "cuda/device.h"

#if RINGFEED_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace rf {

bool CudaDevicePresent() {
#if RINGFEED_HAVE_CUDA
  static const bool present = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky "no device" error
      return false;
    }
    return n > 0;
  }();
  return present;
#else
  return false;
#endif
}

}  // namespace rf
