// OutputPool: the buffers decoded batches (pipeline/output/loaded_batch.h) live in, and the rule
// for when a buffer may be written again. A buffer holds one full batch of decoded samples and its
// int64 labels. Acquire hands out a free buffer as a LoadedBatch; the LoadedBatch's destructor
// (its last holder letting go, on any thread) hands it back.
//
//   HostOutputPool (here)                 host memory; a released buffer is free at once
//   CudaOutputPool (cuda_output_pool.h)   device memory of one GPU, with the stream events that
//                                         order its reuse after the consumers' reads
//
// The pool starts with `buffers` buffers and grows by one whenever every buffer is held by a
// consumer (a consumer holding batches must never deadlock the loader); it never shrinks. The
// pool is shared: each LoadedBatch holds it, so its memory outlives the loader while batches do.
//
// Thread safety: Acquire and MarkReady from the loader's thread; Release (through ~LoadedBatch),
// WaitOn and Synchronize from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "pipeline/output/loaded_batch.h"

namespace rf {

class OutputPool : public std::enable_shared_from_this<OutputPool> {
 public:
  virtual ~OutputPool() = default;

  // A free buffer as a batch of n samples of `dtype` shaped `shape` (n first), growing the pool
  // when none is free. Where the memory was read by consumers before, the work that writes it next
  // (queued after this call) is ordered after their reads.
  Result<std::shared_ptr<LoadedBatch>> Acquire(uint32_t n, DType dtype, std::vector<int64_t> shape);
  // Records of any size: makes b's buffer hold `bytes` of values (b is just acquired, nothing
  // written to it yet), replacing it with a larger one (1.5x at least) where it is smaller.
  Status Reserve(LoadedBatch& b, size_t bytes);
  // The batch is written (its writes queued, on the GPU): consumers may wait for it from now on.
  Status MarkReady(const LoadedBatch& b) { return OnReady(b.slot_); }

  // LoadedBatch's WaitOn / Synchronize / destructor.
  virtual Status WaitOn(uint32_t slot, void* stream) = 0;
  virtual Status Synchronize(uint32_t slot) = 0;
  void Release(uint32_t slot);

  size_t buffers() const;
  size_t sample_bytes() const { return sample_bytes_; }

 protected:
  // `sample_bytes`: one batch's decoded samples; `batch`: its largest size (for the labels).
  OutputPool(size_t sample_bytes, uint32_t batch, int gpu_device)
      : sample_bytes_(sample_bytes), batch_(batch), gpu_device_(gpu_device) {}
  // Makes `initial` buffers (called by the implementations' Create).
  Status Grow(uint32_t initial);

  // `sample_bytes` of samples, then batch labels and batch + 1 offsets (records of any size).
  struct Buffer {
    void* samples = nullptr;
    int64_t* labels = nullptr;
    size_t sample_bytes = 0;
  };
  // A new buffer of `sample_bytes` of samples: its memory and whatever the implementation keeps
  // per buffer.
  virtual Result<Buffer> AddBuffer(size_t sample_bytes) = 0;
  // The buffer in `slot` (acquired, free of earlier readers: BeforeReuse ran) replaced by one of
  // `sample_bytes`; the old memory is freed once no queued work uses it.
  virtual Result<Buffer> ReplaceBuffer(uint32_t slot, size_t sample_bytes) = 0;
  // The bytes of one buffer's labels and offsets.
  size_t LabelAreaBytes() const { return (2 * size_t{batch_} + 1) * sizeof(int64_t); }
  // MarkReady of the buffer in `slot`.
  virtual Status OnReady(uint32_t slot) = 0;
  // Before a released buffer is written again (the loader's thread).
  virtual Status BeforeReuse(uint32_t slot) = 0;
  // A buffer released (any thread, under the pool's lock): note what its next writer must wait
  // for.
  virtual void OnRelease(uint32_t slot) = 0;

  const size_t sample_bytes_;
  const uint32_t batch_;
  const int gpu_device_;  // -1: host memory

 private:
  mutable std::mutex mu_;
  std::vector<Buffer> all_;     // every buffer, by slot
  std::vector<uint32_t> free_;  // slots no consumer holds
};

// Host memory (the CPU loader): the consumer's reads are done when it releases the batch.
class HostOutputPool final : public OutputPool {
 public:
  static Result<std::shared_ptr<HostOutputPool>> Create(size_t sample_bytes, uint32_t batch,
                                                        uint32_t buffers);

  Status WaitOn(uint32_t, void*) override { return Status::Ok(); }
  Status Synchronize(uint32_t) override { return Status::Ok(); }

 private:
  HostOutputPool(size_t sample_bytes, uint32_t batch) : OutputPool(sample_bytes, batch, -1) {}
  Result<Buffer> AddBuffer(size_t sample_bytes) override;
  Result<Buffer> ReplaceBuffer(uint32_t slot, size_t sample_bytes) override;
  Result<std::pair<void*, Buffer>> Allocate(size_t sample_bytes) const;
  Status OnReady(uint32_t) override { return Status::Ok(); }
  Status BeforeReuse(uint32_t) override { return Status::Ok(); }
  void OnRelease(uint32_t) override {}

  struct Aligned {
    void operator()(void* p) const;
  };
  std::vector<std::unique_ptr<void, Aligned>> memory_;
};

}  // namespace rf
