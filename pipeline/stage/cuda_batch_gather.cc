#include "pipeline/stage/cuda_batch_gather.h"

#include <cstring>

#include "cuda/check.h"
#include "pipeline/stage/cuda_gather.cuh"

namespace rf {

Result<CudaBatchGather> CudaBatchGather::Create(const StagingLayout& layout, cudaStream_t compute) {
  CudaBatchGather g;
  g.layout_ = layout;
  g.compute_ = compute;
  RF_ASSIGN_OR_RETURN(g.samples_, cuda::DeviceBuffer::Allocate(
                                      layout.max_batch * layout.sample_bytes, "a gathered batch"));
  RF_ASSIGN_OR_RETURN(g.labels_, cuda::DeviceBuffer::Allocate(layout.max_batch * layout.label_bytes,
                                                              "gathered labels"));
  RF_ASSIGN_OR_RETURN(g.indices_, cuda::DeviceBuffer::Allocate(layout.max_batch * sizeof(uint64_t),
                                                               "gathered indices"));
  const size_t ref_bytes = layout.max_batch * (sizeof(SampleRef) + sizeof(uint64_t));
  for (int i = 0; i < kRefBuffers; ++i) {
    RF_ASSIGN_OR_RETURN(g.refs_[i], cuda::PinnedBuffer::Allocate(ref_bytes, "batch refs"));
    RF_ASSIGN_OR_RETURN(g.refs_read_[i], cuda::CreateEvent(/*timing=*/false));
  }
  return g;
}

Result<Batch> CudaBatchGather::Gather(const uint8_t* base, const SampleRef* refs,
                                      const uint64_t* indices, uint32_t n) {
  if (n > layout_.max_batch) return Status::InvalidArgument("batch larger than the gather's");
  const int i = next_;
  next_ = (next_ + 1) % kRefBuffers;
  if (refs_pending_[i]) RF_CUDA_CHECK(cudaEventSynchronize(refs_read_[i].get()));
  std::memcpy(refs_[i].as<SampleRef>(), refs, n * sizeof(SampleRef));
  static_assert(sizeof(SampleRef) == 3 * sizeof(uint64_t));  // cuda_gather.cu's kRefWords
  uint64_t* pinned_indices = refs_[i].as<uint64_t>() + 3 * size_t{layout_.max_batch};
  std::memcpy(pinned_indices, indices, n * sizeof(uint64_t));
  RF_CUDA_CHECK(cuda::GatherSamples(
      base, refs_[i].as<uint64_t>(), pinned_indices, n, layout_.sample_bytes, layout_.label_bytes,
      samples_.as<uint8_t>(), labels_.as<uint8_t>(), indices_.as<uint64_t>(), compute_));
  RF_CUDA_CHECK(cudaEventRecord(refs_read_[i].get(), compute_));
  refs_pending_[i] = true;
  Batch b = layout_.BatchAt(samples_.data(), labels_.data(), n);
  b.sample_indices = indices_.as<uint64_t>();
  return b;
}

}  // namespace rf
