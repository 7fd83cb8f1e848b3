// CudaOutputPool: OutputPool (pipeline/output/output_pool.h) in the memory of one GPU. Per buffer:
//
//   MarkReady        records `ready` on the producer stream after the batch's writes
//   WaitOn(stream)   the consumer's stream waits for `ready` (no host wait); the stream is noted,
//                    and a second WaitOn of it before the release queues nothing
//   release          records a `released` event on every noted consumer stream: the work those
//                    streams had queued when the consumer let go (its reads of the batch)
//   BeforeReuse      the producer stream waits for those events before the next write
//
// so a buffer is rewritten only after every read a consumer queued on a stream it named, and the
// host never waits. A consumer stream must still exist when the batch is released (as with any
// DLPack producer); if recording on it fails, the next reuse synchronizes the whole device
// instead, as it does for a consumer that named cudaStreamPerThread (whose meaning depends on
// the thread that records on it).
//
// Thread safety: as OutputPool. Calls made on a consumer's thread set the pool's device for
// their duration only (cuda::ScopedDevice).
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/handles.h"
#include "pipeline/output/output_pool.h"

namespace rf {

class CudaOutputPool final : public OutputPool {
 public:
  // `producer`: the stream the loader writes batches on (used by MarkReady and Acquire only, so
  // from the loader's thread while the loader lives).
  static Result<std::shared_ptr<CudaOutputPool>> Create(size_t sample_bytes, uint32_t batch,
                                                        uint32_t buffers, int device,
                                                        cudaStream_t producer);
  // Waits until no queued work reads or writes the pool's memory.
  ~CudaOutputPool() override;

  Status WaitOn(uint32_t slot, void* stream) override;
  Status Synchronize(uint32_t slot) override;

 private:
  CudaOutputPool(size_t sample_bytes, uint32_t batch, int device, cudaStream_t producer)
      : OutputPool(sample_bytes, batch, device), producer_(producer) {}
  Result<Buffer> AddBuffer(size_t sample_bytes) override;
  Result<Buffer> ReplaceBuffer(uint32_t slot, size_t sample_bytes) override;
  Result<Buffer> Allocate(size_t sample_bytes, cuda::DeviceBuffer* memory);
  Status OnReady(uint32_t slot) override;
  Status BeforeReuse(uint32_t slot) override;
  void OnRelease(uint32_t slot) override;

  struct PerBuffer {
    cuda::DeviceBuffer memory;
    cuda::CudaEvent ready;
    std::vector<cudaStream_t> consumers;    // streams named by WaitOn since the last reuse
    std::vector<cuda::CudaEvent> released;  // recorded on them at the release
    size_t pending = 0;                     // released[0 .. pending) to wait for
    bool sync_device = false;               // a release could not record: synchronize instead
  };
  const cudaStream_t producer_;
  std::mutex mu_;                  // guards buffers_ and what each holds
  std::deque<PerBuffer> buffers_;  // by slot; a deque, so growing never moves a buffer's state
};

}  // namespace rf
