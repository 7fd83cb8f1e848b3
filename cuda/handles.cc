#include "cuda/handles.h"

#include <string>

#include "core/units.h"
#include "cuda/check.h"

namespace rf::cuda {

Result<CudaStream> CreateStream(bool highest_priority) {
  int least = 0, greatest = 0;
  if (highest_priority) RF_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t s = nullptr;
  RF_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
  return CudaStream(s);
}

Result<CudaEvent> CreateEvent(bool timing) {
  cudaEvent_t e = nullptr;
  RF_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return CudaEvent(e);
}

Result<CudaGraphExec> EndCaptureAndInstantiate(cudaStream_t stream, const Status& captured) {
  cudaGraph_t raw = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &raw);
  const CudaGraph graph(raw);
  RF_RETURN_IF_ERROR(captured);
  RF_CUDA_CHECK(end);
  cudaGraphExec_t exec = nullptr;
  RF_CUDA_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
  return CudaGraphExec(exec);
}

Status AllocationFailure(const char* call, size_t bytes, const char* what, cudaError_t e) {
  return Status::Aborted(std::string(call) + " of " + FormatBytes(bytes) + " for " + what +
                         " failed: " + Describe(e));
}

Result<HostRegistration> RegisterHost(void* p, size_t bytes) {
  const cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
  if (e != cudaSuccess) {
    return Status::Aborted("cudaHostRegister of " + std::to_string(bytes) +
                           " bytes failed: " + Describe(e));
  }
  return HostRegistration(p);
}

}  // namespace rf::cuda
