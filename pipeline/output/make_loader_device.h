// MakeLoaderDevice: the LoaderDevice (pipeline/output/loader_device.h) a Loader's options ask for,
// chosen once at Open: the host (host_loader_device.h) or one GPU (cuda_loader_device.h).
#pragma once

#include <memory>

#include "core/status.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/sources/pipeline_config.h"

namespace rf {

// The device for `kind`: kCpu the host; kCuda GPU `gpu` (-1: the calling thread's current
// device), Usage error where the build or the machine has none; kAuto a GPU where one is found.
// `stream` (a cudaStream_t, or null for a stream of the device's own) must outlive the device.
Result<std::unique_ptr<LoaderDevice>> MakeLoaderDevice(DeviceKind kind, int gpu, void* stream);

}  // namespace rf
