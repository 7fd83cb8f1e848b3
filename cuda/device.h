// Whether this process can use a CUDA device. Compiles in every build (no CUDA header): a build
// without CUDA answers false.
//
// Thread safety: any thread; the answer is computed once.
#pragma once

namespace rf {

// Whether this build has CUDA and a device is visible (cached after the first call).
bool CudaDevicePresent();

}  // namespace rf
