// CudaChunkStaging: the streaming mode's staging area in device memory
// (pipeline/stage/chunk_staging.h).
//
//   CopyIn    (copy thread)    copy stream k (round robin over K) waits for the slot's "retired"
//                              event -> cudaMemcpyAsync host slot -> device slot -> records the
//                              slot's "copied" event -> a host callback hands the ring slot back
//   AwaitCopy (compute thread) the compute stream waits for "copied" (no host wait)
//   Retire    (compute thread) records "retired" on the compute stream: the next copy into the
//                              slot waits for every batch queued before it
//   Gather    (compute thread) CudaBatchGather (pipeline/stage/cuda_batch_gather.h) from the slots
//
// So host-to-device copies of later chunks run on their own streams while the compute stream
// trains, and the host ring's slots go back to the reader as soon as their copies land, not after
// compute. Memory: slots x slot_bytes of device memory and the gather's; nothing per batch.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <vector>

#include "cuda/handles.h"
#include "pipeline/stage/chunk_staging.h"
#include "pipeline/stage/cuda_batch_gather.h"

namespace rf {

class CudaChunkStaging final : public ChunkStaging {
 public:
  // compute: the backend's stream, which must outlive the staging. copy_streams >= 1.
  static Result<std::unique_ptr<CudaChunkStaging>> Create(const StagingLayout& layout,
                                                          cudaStream_t compute,
                                                          uint32_t copy_streams);
  ~CudaChunkStaging() override;

  const StagingLayout& layout() const override { return layout_; }
  Status CopyIn(uint32_t slot, const uint8_t* src, size_t bytes, ReleaseFn release,
                void* arg) override;
  Status AwaitCopy(uint32_t slot) override;
  Status Retire(uint32_t slot) override;
  Result<Batch> GatherFrom(const uint8_t* base, const SampleRef* refs, const uint64_t* indices,
                           uint32_t n) override;
  const uint8_t* area() const override { return area_.as<uint8_t>(); }
  Status Drain() override;

 private:
  CudaChunkStaging() = default;

  StagingLayout layout_;
  int device_ = 0;  // current at Create; CopyIn makes it current on the copy thread
  cudaStream_t compute_ = nullptr;
  std::vector<cuda::CudaStream> copy_;
  uint32_t next_copy_ = 0;
  cuda::DeviceBuffer area_;
  std::vector<cuda::CudaEvent> copied_, retired_;
  std::vector<uint8_t> retired_recorded_;  // whether retired_[slot] was ever recorded
  std::unique_ptr<CudaBatchGather> gather_;
};

}  // namespace rf
