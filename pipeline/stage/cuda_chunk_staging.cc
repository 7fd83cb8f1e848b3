#include "pipeline/stage/cuda_chunk_staging.h"

#include <string>

#include "cuda/check.h"

namespace rf {

Result<std::unique_ptr<CudaChunkStaging>> CudaChunkStaging::Create(const StagingLayout& layout,
                                                                   cudaStream_t compute,
                                                                   uint32_t copy_streams) {
  if (layout.slots == 0 || layout.slot_bytes == 0 || layout.max_batch == 0 || copy_streams == 0) {
    return Status::InvalidArgument(
        "device staging needs slots, a slot size, a batch size and a copy stream");
  }
  std::unique_ptr<CudaChunkStaging> s(new CudaChunkStaging());
  s->layout_ = layout;
  s->compute_ = compute;
  RF_CUDA_CHECK(cudaGetDevice(&s->device_));
  for (uint32_t k = 0; k < copy_streams; ++k) {
    RF_ASSIGN_OR_RETURN(auto stream, cuda::CreateStream());
    s->copy_.push_back(std::move(stream));
  }
  RF_ASSIGN_OR_RETURN(s->area_, cuda::DeviceBuffer::Allocate(layout.slots * layout.slot_bytes,
                                                             "the device staging slots"));
  RF_ASSIGN_OR_RETURN(CudaBatchGather gather, CudaBatchGather::Create(layout, compute));
  s->gather_ = std::make_unique<CudaBatchGather>(std::move(gather));
  for (uint32_t i = 0; i < layout.slots; ++i) {
    RF_ASSIGN_OR_RETURN(auto copied, cuda::CreateEvent(/*timing=*/false));
    RF_ASSIGN_OR_RETURN(auto retired, cuda::CreateEvent(/*timing=*/false));
    s->copied_.push_back(std::move(copied));
    s->retired_.push_back(std::move(retired));
  }
  s->retired_recorded_.assign(layout.slots, 0);
  return s;
}

CudaChunkStaging::~CudaChunkStaging() { (void)Drain(); }

Status CudaChunkStaging::CopyIn(uint32_t slot, const uint8_t* src, size_t bytes, ReleaseFn release,
                                void* arg) {
  if (slot >= layout_.slots || bytes > layout_.slot_bytes) {
    return Status::InvalidArgument("chunk of " + std::to_string(bytes) +
                                   " bytes does not fit staging slot " + std::to_string(slot));
  }
  // The copy thread is not the creating one, and a new thread's current device is 0: make the
  // staging's own device current there (a no-op after the first call, and on one GPU).
  RF_CUDA_CHECK(cudaSetDevice(device_));
  const cudaStream_t stream = copy_[next_copy_++ % copy_.size()].get();
  // The source orders Retire before this on the host, so the event holds the last retirement.
  if (retired_recorded_[slot]) {
    RF_CUDA_CHECK(cudaStreamWaitEvent(stream, retired_[slot].get(), 0));
  }
  RF_CUDA_CHECK(cudaMemcpyAsync(area_.as<uint8_t>() + slot * layout_.slot_bytes, src, bytes,
                                cudaMemcpyHostToDevice, stream));
  RF_CUDA_CHECK(cudaEventRecord(copied_[slot].get(), stream));
  RF_CUDA_CHECK(cudaLaunchHostFunc(stream, release, arg));
  return Status::Ok();
}

Status CudaChunkStaging::AwaitCopy(uint32_t slot) {
  RF_CUDA_CHECK(cudaStreamWaitEvent(compute_, copied_[slot].get(), 0));
  return Status::Ok();
}

Status CudaChunkStaging::Retire(uint32_t slot) {
  RF_CUDA_CHECK(cudaEventRecord(retired_[slot].get(), compute_));
  retired_recorded_[slot] = 1;
  return Status::Ok();
}

Result<Batch> CudaChunkStaging::GatherFrom(const uint8_t* base, const SampleRef* refs,
                                           const uint64_t* indices, uint32_t n) {
  return gather_->Gather(base, refs, indices, n);
}

Status CudaChunkStaging::Drain() {
  for (const auto& s : copy_) RF_CUDA_CHECK(cudaStreamSynchronize(s.get()));
  if (compute_ != nullptr) RF_CUDA_CHECK(cudaStreamSynchronize(compute_));
  return Status::Ok();
}

}  // namespace rf
