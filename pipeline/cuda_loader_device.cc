#include "pipeline/cuda_loader_device.h"

#include "cuda/check.h"
#include "cuda/handles.h"
#include "pipeline/cuda_chunk_staging.h"
#include "pipeline/cuda_output_pool.h"
#include "pipeline/managed_source.h"

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
  // Pageable memory: the copy has read `host` when the call returns. Any thread (a packing
  // worker's too): the stream's GPU made current for the call.
  cuda::ScopedDevice on(gpu_);
  RF_CUDA_CHECK(cudaMemcpyAsync(out, host, bytes, cudaMemcpyHostToDevice, stream_));
  return Status::Ok();
}

Status CudaLoaderDevice::PutBytesAsync(const void* host, void* out, size_t bytes, uint32_t slot) {
  cuda::ScopedDevice on(gpu_);
  if (!put_done_[slot]) {
    RF_ASSIGN_OR_RETURN(put_done_[slot], cuda::CreateEvent(false));
  }
  RF_CUDA_CHECK(cudaMemcpyAsync(out, host, bytes, cudaMemcpyHostToDevice, stream_));
  RF_CUDA_CHECK(cudaEventRecord(put_done_[slot].get(), stream_));
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
