#include "pipeline/cuda_chunk_staging.h"

#include <cstring>
#include <string>

#include "kernels/cuda_check.h"
#include "kernels/cuda_gather.cuh"

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
  for (uint32_t k = 0; k < copy_streams; ++k) {
    RF_ASSIGN_OR_RETURN(auto stream, cuda::CreateStream());
    s->copy_.push_back(std::move(stream));
  }
  RF_ASSIGN_OR_RETURN(s->area_, cuda::DeviceBuffer::Allocate(layout.slots * layout.slot_bytes,
                                                             "the device staging slots"));
  RF_ASSIGN_OR_RETURN(s->samples_, cuda::DeviceBuffer::Allocate(
                                       layout.max_batch * layout.sample_bytes, "a gathered batch"));
  RF_ASSIGN_OR_RETURN(s->labels_, cuda::DeviceBuffer::Allocate(
                                      layout.max_batch * layout.label_bytes, "gathered labels"));
  for (uint32_t i = 0; i < layout.slots; ++i) {
    RF_ASSIGN_OR_RETURN(auto copied, cuda::CreateEvent(/*timing=*/false));
    RF_ASSIGN_OR_RETURN(auto retired, cuda::CreateEvent(/*timing=*/false));
    s->copied_.push_back(std::move(copied));
    s->retired_.push_back(std::move(retired));
  }
  s->retired_recorded_.assign(layout.slots, 0);
  const size_t ref_bytes = layout.max_batch * sizeof(SampleRef);
  for (int i = 0; i < kRefBuffers; ++i) {
    RF_ASSIGN_OR_RETURN(s->host_refs_[i], cuda::PinnedBuffer::Allocate(ref_bytes, "batch refs"));
    RF_ASSIGN_OR_RETURN(s->device_refs_[i],
                        cuda::DeviceBuffer::Allocate(ref_bytes, "device batch refs"));
    RF_ASSIGN_OR_RETURN(s->refs_sent_[i], cuda::CreateEvent(/*timing=*/false));
  }
  return s;
}

CudaChunkStaging::~CudaChunkStaging() { (void)Drain(); }

Status CudaChunkStaging::CopyIn(uint32_t slot, const uint8_t* src, size_t bytes, ReleaseFn release,
                                void* arg) {
  if (slot >= layout_.slots || bytes > layout_.slot_bytes) {
    return Status::InvalidArgument("chunk of " + std::to_string(bytes) +
                                   " bytes does not fit staging slot " + std::to_string(slot));
  }
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

Result<Batch> CudaChunkStaging::Gather(const SampleRef* refs, uint32_t n) {
  if (n > layout_.max_batch) return Status::InvalidArgument("batch larger than the staging's");
  const int i = next_refs_;
  next_refs_ = (next_refs_ + 1) % kRefBuffers;
  if (refs_pending_[i]) RF_CUDA_CHECK(cudaEventSynchronize(refs_sent_[i].get()));
  std::memcpy(host_refs_[i].as<SampleRef>(), refs, n * sizeof(SampleRef));
  RF_CUDA_CHECK(cudaMemcpyAsync(device_refs_[i].data(), host_refs_[i].as<SampleRef>(),
                                n * sizeof(SampleRef), cudaMemcpyHostToDevice, compute_));
  RF_CUDA_CHECK(cudaEventRecord(refs_sent_[i].get(), compute_));
  refs_pending_[i] = true;
  static_assert(sizeof(SampleRef) == 2 * sizeof(uint64_t));
  RF_CUDA_CHECK(cuda::GatherSamples(area_.as<uint8_t>(), device_refs_[i].as<uint64_t>(), n,
                                    layout_.sample_bytes, layout_.label_bytes,
                                    samples_.as<uint8_t>(), labels_.as<uint8_t>(), compute_));
  Batch b;
  b.samples = samples_.data();
  b.sample_dtype = layout_.sample_dtype;
  b.labels = labels_.data();
  b.label_dtype = layout_.label_dtype;
  b.n = n;
  return b;
}

Status CudaChunkStaging::Drain() {
  for (const auto& s : copy_) RF_CUDA_CHECK(cudaStreamSynchronize(s.get()));
  if (compute_ != nullptr) RF_CUDA_CHECK(cudaStreamSynchronize(compute_));
  return Status::Ok();
}

}  // namespace rf
