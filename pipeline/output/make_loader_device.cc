#include "pipeline/output/make_loader_device.h"

#include "cuda/device.h"
#include "pipeline/output/host_loader_device.h"
#if RINGFEED_HAVE_CUDA
#include "pipeline/output/cuda_loader_device.h"
#endif

namespace rf {

Result<std::unique_ptr<LoaderDevice>> MakeLoaderDevice(DeviceKind kind, int gpu, void* stream) {
#if RINGFEED_HAVE_CUDA
  if (kind == DeviceKind::kCuda || (kind == DeviceKind::kAuto && CudaDevicePresent())) {
    if (!CudaDevicePresent()) return Status::Usage("device cuda: no CUDA device found");
    RF_ASSIGN_OR_RETURN(auto d, CudaLoaderDevice::Create(gpu, stream));
    return std::unique_ptr<LoaderDevice>(std::move(d));
  }
#else
  (void)gpu;
  (void)stream;
  if (kind == DeviceKind::kCuda) return Status::Usage("device cuda: this build has no CUDA");
#endif
  return std::unique_ptr<LoaderDevice>(new HostLoaderDevice);
}

}  // namespace rf
