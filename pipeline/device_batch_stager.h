// DeviceBatchStager: a BatchSource that hands the CUDA backend device copies of another source's
// host batches. Each batch is copied host -> pinned staging -> device on the consumer's stream,
// into one of two device buffers used in turn (double buffering):
//
//   Next(k): record "done" for buffer (k-1)%2 on the stream (after the consumer's step k-1) ->
//            wait for buffer k%2's "done" (step k-2 has read it) -> gather into pinned[k%2] ->
//            cudaMemcpyAsync to device[k%2] on the stream -> return device pointers
//
// The copy and the step that reads it are on the one stream, so they are ordered without a host
// wait; the host waits only before overwriting a buffer, for the step two batches back. This is
// the simple path for in-memory datasets; the streaming pipeline copies whole chunks on their own
// streams instead.
//
// Memory: two pinned and two device buffers sized for a full batch, allocated by Create;
// nothing is allocated per batch.
//
// Thread safety: none; one thread drives it (the one that drives the backend).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>

#include "cuda/handles.h"
#include "pipeline/batch_source.h"

namespace rf {

class DeviceBatchStager final : public BatchSource {
 public:
  // `host` delivers host batches of at most `max_batch` samples of `sample_bytes` each, with
  // labels of `label_bytes` each; it must outlive the stager. `stream` is the consumer's.
  static Result<std::unique_ptr<DeviceBatchStager>> Create(BatchSource& host, uint32_t max_batch,
                                                           size_t sample_bytes, size_t label_bytes,
                                                           cudaStream_t stream);
  ~DeviceBatchStager() override;  // waits for the copies and steps that use its buffers

  uint64_t sample_count() const override { return host_.sample_count(); }
  uint64_t epoch_samples() const override { return host_.epoch_samples(); }
  Status StartEpoch(uint64_t epoch, uint64_t position) override {
    return host_.StartEpoch(epoch, position);
  }
  Result<Batch> Next() override;
  uint64_t position() const override { return host_.position(); }

 private:
  struct Buffers {
    cuda::PinnedBuffer pinned_samples, pinned_labels;
    cuda::DeviceBuffer samples, labels;
    cuda::CudaEvent done;  // recorded after the last work that reads this pair
    bool in_flight = false;
  };
  DeviceBatchStager(BatchSource& host, size_t sample_bytes, size_t label_bytes, cudaStream_t stream)
      : host_(host), sample_bytes_(sample_bytes), label_bytes_(label_bytes), stream_(stream) {}

  BatchSource& host_;
  size_t sample_bytes_, label_bytes_;
  cudaStream_t stream_;
  std::array<Buffers, 2> buffers_;
  int next_ = 0;         // the pair the next batch goes into
  int handed_out_ = -1;  // the pair the consumer holds (-1: none)
};

}  // namespace rf
