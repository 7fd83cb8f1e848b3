#include "pipeline/output/cuda_loader_device.h"

#include <algorithm>

#include "cuda/check.h"
#include "cuda/handles.h"
#include "pipeline/output/cuda_output_pool.h"
#include "pipeline/output/cuda_sequence_pack.cuh"
#include "pipeline/sources/managed_source.h"
#include "pipeline/stage/cuda_chunk_staging.h"

namespace rf {

Result<std::unique_ptr<CudaLoaderDevice>> CudaLoaderDevice::Create(int gpu, void* stream) {
  std::unique_ptr<CudaLoaderDevice> d(new CudaLoaderDevice);
  if (gpu < 0) {
    RF_CUDA_CHECK(cudaGetDevice(&gpu));
  } else {
    int count = 0;
    RF_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (gpu >= count) {
      return Status::Usage("device cuda:" + std::to_string(gpu) + ": this machine has " +
                           std::to_string(count) + " GPU(s)");
    }
  }
  d->gpu_ = gpu;
  RF_CUDA_CHECK(cudaSetDevice(gpu));
  if (stream != nullptr) {
    d->stream_ = static_cast<cudaStream_t>(stream);
  } else {
    RF_ASSIGN_OR_RETURN(d->own_stream_, cuda::CreateStream());
    d->stream_ = d->own_stream_.get();
  }
  return d;
}

CudaLoaderDevice::~CudaLoaderDevice() { (void)Drain(); }

StagingFactory CudaLoaderDevice::Staging(const PipelineConfig& c) {
  const cudaStream_t stream = stream_;
  const uint32_t copy_streams = c.streaming.copy_streams;
  return [stream, copy_streams](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
    RF_ASSIGN_OR_RETURN(auto s, CudaChunkStaging::Create(l, stream, copy_streams));
    return std::unique_ptr<ChunkStaging>(std::move(s));
  };
}

Result<std::unique_ptr<TrainingSource>> CudaLoaderDevice::Managed(const Dataset& d,
                                                                  const PipelineConfig& c) {
  RF_ASSIGN_OR_RETURN(auto s, ManagedSource::Create(d, ManagedOptionsFor(c), stream_));
  return std::unique_ptr<TrainingSource>(std::move(s));
}

Result<std::shared_ptr<OutputPool>> CudaLoaderDevice::MakePool(size_t sample_bytes, uint32_t batch,
                                                               uint32_t buffers) {
  RF_ASSIGN_OR_RETURN(auto pool,
                      CudaOutputPool::Create(sample_bytes, batch, buffers, gpu_, stream_));
  return std::shared_ptr<OutputPool>(std::move(pool));
}

Status CudaLoaderDevice::PrepareDecode(const DecodeSpec& spec, uint32_t max_batch) {
  RF_ASSIGN_OR_RETURN(decoder_, CudaBatchDecoder::Create(spec, max_batch));
  return Status::Ok();
}

Status CudaLoaderDevice::Decode(const Batch& stored, void* out, int64_t* labels) {
  RF_ASSIGN_OR_RETURN(const AugmentBatch augment, decoder_->spec().AugmentFor(stored));
  return decoder_->Decode(stored.samples, stored.labels, stored.label_dtype, stored.n, out, labels,
                          stream_, augment);
}

Status CudaLoaderDevice::PutRecords(const Batch& host, void* values, int64_t* offsets,
                                    int64_t* labels) {
  // From pageable memory: each copy has read its source when the call returns (CUDA's rule for
  // pageable host-to-device copies), so `host` and record_labels_ may be reused at once.
  record_labels_.resize(host.n);
  DecodeLabelsOnHost(host.label_dtype, host.labels, host.n, record_labels_.data());
  RF_CUDA_CHECK(
      cudaMemcpyAsync(values, host.samples, host.values_bytes, cudaMemcpyHostToDevice, stream_));
  RF_CUDA_CHECK(cudaMemcpyAsync(offsets, host.offsets, (size_t{host.n} + 1) * sizeof(int64_t),
                                cudaMemcpyHostToDevice, stream_));
  RF_CUDA_CHECK(cudaMemcpyAsync(labels, record_labels_.data(), size_t{host.n} * sizeof(int64_t),
                                cudaMemcpyHostToDevice, stream_));
  return Status::Ok();
}

Status CudaLoaderDevice::PutBytes(const void* host, void* out, size_t bytes) {
  // Pageable memory: the copy has read `host` when the call returns. The stream's GPU made
  // current for the call (any thread).
  cuda::ScopedDevice on(gpu_);
  RF_CUDA_CHECK(cudaMemcpyAsync(out, host, bytes, cudaMemcpyHostToDevice, stream_));
  return Status::Ok();
}

Status CudaLoaderDevice::MoveWithin(void* to, const void* from, size_t bytes) {
  cuda::ScopedDevice on(gpu_);
  RF_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_));
  return Status::Ok();
}

Status CudaLoaderDevice::PutSequencesAsync(const SequencePut& p, uint32_t slot) {
  cuda::ScopedDevice on(gpu_);
  if (!put_done_[slot]) {
    RF_ASSIGN_OR_RETURN(put_done_[slot], cuda::CreateEvent(false));
  }
  cuda::DeviceBuffer& area = sequence_area_[slot];
  if (area.bytes() < p.bytes) {
    // The kernels queued so far may read the old area: freed after them.
    RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
    RF_ASSIGN_OR_RETURN(area, cuda::DeviceBuffer::Allocate(std::max(p.bytes, p.capacity),
                                                           "packed sequences before widening"));
  }
  uint8_t* d = area.as<uint8_t>();
  RF_CUDA_CHECK(cudaMemcpyAsync(d, p.host, p.bytes, cudaMemcpyHostToDevice, stream_));
  // The host area is free again once the copy has read it; the device area is reused in the
  // stream's order (the next copy into it queued after this kernel).
  RF_CUDA_CHECK(cudaEventRecord(put_done_[slot].get(), stream_));
  if (p.rows == 0) {  // an empty batch (a state at its epoch's end): its cu_seqlens, {0}
    RF_CUDA_CHECK(
        cudaMemcpyAsync(p.cu, d + p.cu_at, sizeof(int32_t), cudaMemcpyDeviceToDevice, stream_));
    return Status::Ok();
  }
  RF_CUDA_CHECK(
      cuda::WidenSequences(d, p.narrow_bytes, reinterpret_cast<const int64_t*>(d + p.lengths_at),
                           reinterpret_cast<const int32_t*>(d + p.cu_at), p.segments, p.rows, p.row,
                           p.out_int32, p.pad, p.tokens, p.lengths, p.cu, p.positions, stream_));
  return Status::Ok();
}

Status CudaLoaderDevice::WaitPut(uint32_t slot) {
  if (!put_done_[slot]) return Status::Ok();  // nothing put from it yet
  RF_CUDA_CHECK(cudaEventSynchronize(put_done_[slot].get()));
  return Status::Ok();
}

Status CudaLoaderDevice::BindThread() {
  RF_CUDA_CHECK(cudaSetDevice(gpu_));
  return Status::Ok();
}

Result<HostBuffer> CudaLoaderDevice::HostArea(size_t bytes) {
  cuda::ScopedDevice on(gpu_);
  return HostBuffer::Allocate(bytes, PinMode::kOn);
}

Status CudaLoaderDevice::Drain() {
  if (stream_ == nullptr) return Status::Ok();
  RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

std::string CudaLoaderDevice::Describe() const {
  cudaDeviceProp prop{};
  const bool known = cudaGetDeviceProperties(&prop, gpu_) == cudaSuccess;
  return "cuda:" + std::to_string(gpu_) + (known ? std::string(" (") + prop.name + ")" : "");
}

}  // namespace rf
