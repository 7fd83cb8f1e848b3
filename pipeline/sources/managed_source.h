// ManagedSource: the managed-memory mode, ringfeed's predecessor's approach kept as the baseline
// the streaming mode is measured against. The whole dataset sits in one cudaMallocManaged
// allocation, read from the files straight into it at Create (threads of pread, no host staging
// copy; every chunk's checksum verified). Batches are gathered on the GPU from it in WindowOrder
// (the same order as the streaming mode for the same seed), and page faults migrate the pages the
// GPU touches.
//
// Ranks (options.order.rank / world_size): batches follow the rank's part of WindowOrder, as in
// the streaming mode, but every rank still loads the WHOLE dataset: managed mode is the
// single-GPU baseline, not a way to shard a dataset (the streaming mode reads only the rank's
// chunks). sample_count() is the dataset's; epoch_samples() the rank's, of the epoch StartEpoch
// began (a resumed epoch's, options.order.resumed, may differ from the others').
//
// Options, from the CUDA memory notes:
//   prefetch_batches N  cudaMemPrefetchAsync, on a side stream, of the chunks the batch N ahead
//                       reads (each chunk once per window)
//   advise              cudaMemAdvise: read-mostly, preferred location the GPU, accessed by it
// Safety: Create refuses an allocation larger than the GPU's free memory (unless oversubscribe)
// or than the host's available memory, naming both sizes: more managed memory than a shared GPU
// has free can hang it.
//
// Thread safety: one thread calls the BatchSource methods.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/handles.h"
#include "io/dataset.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/training_source.h"
#include "pipeline/stage/cuda_batch_gather.h"

namespace rf {

struct ManagedOptions {
  OrderSettings order;  // the batch size, drop_last and the epoch order
  uint32_t prefetch_batches = 0;
  bool advise = false;
  bool oversubscribe = false;
  bool verify = true;
  uint32_t load_threads = 8;
};

class ManagedSource final : public TrainingSource {
 public:
  // `compute` is the backend's stream; it must outlive the source.
  static Result<std::unique_ptr<ManagedSource>> Create(const Dataset& dataset,
                                                       const ManagedOptions& options,
                                                       cudaStream_t compute);
  ~ManagedSource() override;

  uint64_t sample_count() const override { return order_.sample_count(); }
  uint64_t epoch_samples() const override;
  Status StartEpoch(uint64_t epoch, uint64_t position) override;
  Result<Batch> Next() override;
  uint64_t position() const override { return position_; }

  const std::vector<uint64_t>& batch_samples() const override { return batch_samples_; }
  uint64_t bytes_read() const override { return loaded_bytes_; }
  uint64_t bytes_delivered() const override { return loaded_bytes_ != 0 ? total_bytes_ : 0; }
  double wait_seconds() const override { return 0; }  // page faults stall the GPU, not the host
  std::string Describe() const override;

  const WindowOrder& order() const { return order_; }

 private:
  ManagedSource(const Dataset& d, const ManagedOptions& o, WindowOrder order);
  Status Load();
  Status PrefetchAhead(uint32_t samples);
  uint64_t EpochSamplesOf(uint64_t epoch) const;

  const Dataset& dataset_;
  ManagedOptions options_;
  WindowOrder order_;
  std::vector<uint64_t> offset_;  // of each chunk in the managed allocation
  uint64_t total_bytes_ = 0, loaded_bytes_ = 0;
  cuda::ManagedBuffer data_;
  cuda::CudaStream prefetch_stream_;
  std::unique_ptr<CudaBatchGather> gather_;
  cudaStream_t compute_ = nullptr;
  int device_ = 0;
  double load_seconds_ = 0;

  uint64_t epoch_ = 0, position_ = 0;
  WindowCursor cursor_, ahead_;              // the next batch's samples; the prefetcher's
  std::vector<uint64_t> prefetched_window_;  // per chunk: 1 + the window it was prefetched for
  std::vector<SampleRef> refs_;
  std::vector<uint64_t> batch_samples_;
};

}  // namespace rf
