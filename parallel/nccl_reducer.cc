#include "parallel/nccl_reducer.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>

#include "parallel/nccl_check.h"

namespace rf {

Result<std::unique_ptr<NcclReducer>> NcclReducer::Create(World& world, int device) {
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);  // an explicit setting is the user's
  std::unique_ptr<NcclReducer> r(new NcclReducer);
  r->device_ = device;
  ncclUniqueId id{};
  if (world.rank() == 0) RF_CUDA_CHECK(ncclGetUniqueId(&id));
  RF_RETURN_IF_ERROR(world.Broadcast(&id, sizeof id, 0));
  RF_CUDA_CHECK(cudaSetDevice(device));
  RF_CUDA_CHECK(ncclCommInitRank(&r->comm_, static_cast<int>(world.size()), id,
                                 static_cast<int>(world.rank())));
  return r;
}

NcclReducer::~NcclReducer() {
  if (comm_ == nullptr || aborted_.load()) return;
  cudaSetDevice(device_);
  cudaDeviceSynchronize();  // the stream's queued reductions still use the communicator
  ncclCommDestroy(comm_);
}

Status NcclReducer::MeanOverRanks(float* grads, size_t n, void* stream) {
  if (aborted_.load()) return Status::Aborted("the NCCL communicator was aborted");
  RF_CUDA_CHECK(ncclAllReduce(grads, grads, n, ncclFloat32, ncclAvg, comm_,
                              static_cast<cudaStream_t>(stream)));
  return Status::Ok();
}

Status NcclReducer::AsyncError() const {
  if (aborted_.load()) return Status::Ok();
  ncclResult_t async = ncclSuccess;
  RF_CUDA_CHECK(ncclCommGetAsyncError(comm_, &async));
  if (async != ncclSuccess && async != ncclInProgress) {
    return Status::Aborted("NCCL: " + cuda::Describe(async));
  }
  return Status::Ok();
}

void NcclReducer::Abort() {
  if (aborted_.exchange(true)) return;
  ncclCommAbort(comm_);
}

std::string NcclReducer::Describe() const {
  int v = 0;
  ncclGetVersion(&v);
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9.
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace rf
