// CudaBatchGather: gathers a batch on the GPU from samples scattered over device-readable memory
// (device staging slots, or a managed dataset), for the streaming and managed modes alike. The
// batch's SampleRefs are written to one of 16 pinned buffers, which the gather kernel
// (pipeline/stage/cuda_gather.cuh) reads in place over PCIe (pinned memory is device-addressable
// under unified addressing: no copy node on the compute stream), copying samples and labels into
// one batch buffer. The host waits only to reuse a ref buffer, 16 batches back, which also bounds
// how far it runs ahead of the GPU: 16 steps (about 7 ms at batch 256 on an H100) absorb a
// host-side hiccup (a window change, a page fault, the scheduler) without starving the GPU; 4 left
// it 1.6 ms. Memory: one batch and the ref buffers (4 KiB each at batch 256), allocated by Create.
//
// Thread safety: none; the compute thread uses it.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>

#include "cuda/handles.h"
#include "pipeline/stage/chunk_staging.h"

namespace rf {

class CudaBatchGather {
 public:
  static Result<CudaBatchGather> Create(const StagingLayout& layout, cudaStream_t compute);

  // A batch of n <= max_batch samples from `base`, valid until the work queued before the next
  // Gather has run; its sample_indices (device memory) are a copy of `indices` (host memory, n
  // global sample indices), made by the gather kernel itself.
  Result<Batch> Gather(const uint8_t* base, const SampleRef* refs, const uint64_t* indices,
                       uint32_t n);

 private:
  static constexpr int kRefBuffers = 16;
  StagingLayout layout_;
  cudaStream_t compute_ = nullptr;
  cuda::DeviceBuffer samples_, labels_, indices_;
  // Each ref buffer: max_batch SampleRefs, then max_batch global sample indices.
  std::array<cuda::PinnedBuffer, kRefBuffers> refs_;
  std::array<cuda::CudaEvent, kRefBuffers> refs_read_;  // after the kernel that read refs_[i]
  std::array<bool, kRefBuffers> refs_pending_{};
  int next_ = 0;
};

}  // namespace rf
