#include "pipeline/output/cuda_output_pool.h"

#include <algorithm>
#include <string>

#include "cuda/check.h"

namespace rf {

Result<std::shared_ptr<CudaOutputPool>> CudaOutputPool::Create(size_t sample_bytes, uint32_t batch,
                                                               uint32_t buffers, int device,
                                                               cudaStream_t producer) {
  std::shared_ptr<CudaOutputPool> pool(new CudaOutputPool(sample_bytes, batch, device, producer));
  RF_RETURN_IF_ERROR(pool->Grow(buffers));
  return pool;
}

CudaOutputPool::~CudaOutputPool() {
  // Every batch is released by now (each held the pool), but reads queued on consumer streams and
  // the last writes may still run: the memory is freed after them.
  cuda::ScopedDevice on(gpu_device_);
  (void)cudaDeviceSynchronize();
}

Result<OutputPool::Buffer> CudaOutputPool::Allocate(size_t sample_bytes,
                                                    cuda::DeviceBuffer* memory) {
  cuda::ScopedDevice on(gpu_device_);
  constexpr size_t kAlign = 256;
  const size_t labels_at = (sample_bytes + kAlign - 1) / kAlign * kAlign;
  RF_ASSIGN_OR_RETURN(
      *memory, cuda::DeviceBuffer::Allocate(labels_at + LabelAreaBytes(), "a decoded batch"));
  uint8_t* base = memory->as<uint8_t>();
  return Buffer{base, reinterpret_cast<int64_t*>(base + labels_at), sample_bytes};
}

Result<OutputPool::Buffer> CudaOutputPool::AddBuffer(size_t sample_bytes) {
  PerBuffer b;
  RF_ASSIGN_OR_RETURN(const Buffer made, Allocate(sample_bytes, &b.memory));
  RF_ASSIGN_OR_RETURN(b.ready, cuda::CreateEvent(/*timing=*/false));
  std::lock_guard<std::mutex> lock(mu_);
  buffers_.push_back(std::move(b));
  return made;
}

Result<OutputPool::Buffer> CudaOutputPool::ReplaceBuffer(uint32_t slot, size_t sample_bytes) {
  cuda::DeviceBuffer memory;
  RF_ASSIGN_OR_RETURN(const Buffer made, Allocate(sample_bytes, &memory));
  cuda::ScopedDevice on(gpu_device_);
  // The old memory's readers are ordered before the producer's stream (BeforeReuse); once that
  // has run, nothing uses it.
  RF_CUDA_CHECK(cudaStreamSynchronize(producer_));
  std::lock_guard<std::mutex> lock(mu_);
  buffers_[slot].memory = std::move(memory);
  return made;
}

Status CudaOutputPool::OnReady(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  RF_CUDA_CHECK(cudaEventRecord(buffers_[slot].ready.get(), producer_));
  return Status::Ok();
}

Status CudaOutputPool::WaitOn(uint32_t slot, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cuda::ScopedDevice on(gpu_device_);
  std::lock_guard<std::mutex> lock(mu_);
  PerBuffer& b = buffers_[slot];
  // A stream noted since the last reuse already waits for this `ready` (recorded once a reuse):
  // the labels' export after the samples' queues nothing more.
  if (std::find(b.consumers.begin(), b.consumers.end(), s) != b.consumers.end()) {
    return Status::Ok();
  }
  RF_CUDA_CHECK(cudaStreamWaitEvent(s, b.ready.get(), 0));
  if (s == cudaStreamPerThread) {
    // The waiting thread's own default stream: the release may come on another thread, whose
    // cudaStreamPerThread is another stream, so the reuse waits for the whole device instead.
    b.sync_device = true;
    return Status::Ok();
  }
  if (s != producer_) b.consumers.push_back(s);
  return Status::Ok();
}

Status CudaOutputPool::Synchronize(uint32_t slot) {
  cudaEvent_t ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready = buffers_[slot].ready.get();
  }
  cuda::ScopedDevice on(gpu_device_);
  RF_CUDA_CHECK(cudaEventSynchronize(ready));
  return Status::Ok();
}

void CudaOutputPool::OnRelease(uint32_t slot) {
  cuda::ScopedDevice on(gpu_device_);
  std::lock_guard<std::mutex> lock(mu_);
  PerBuffer& b = buffers_[slot];
  for (cudaStream_t s : b.consumers) {
    if (b.pending == b.released.size()) {
      Result<cuda::CudaEvent> e = cuda::CreateEvent(/*timing=*/false);
      if (!e.ok()) {
        b.sync_device = true;
        break;
      }
      b.released.push_back(std::move(*e));
    }
    if (cudaEventRecord(b.released[b.pending].get(), s) != cudaSuccess) {
      (void)cudaGetLastError();  // a stream gone: fall back to a device-wide wait at the reuse
      b.sync_device = true;
      continue;
    }
    ++b.pending;
  }
  b.consumers.clear();
}

Status CudaOutputPool::BeforeReuse(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  PerBuffer& b = buffers_[slot];
  if (b.sync_device) {
    RF_CUDA_CHECK(cudaDeviceSynchronize());
    b.sync_device = false;
  }
  for (size_t i = 0; i < b.pending; ++i) {
    RF_CUDA_CHECK(cudaStreamWaitEvent(producer_, b.released[i].get(), 0));
  }
  b.pending = 0;
  return Status::Ok();
}

}  // namespace rf
