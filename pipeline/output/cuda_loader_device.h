// CudaLoaderDevice: a Loader's batches on one GPU (pipeline/output/loader_device.h). Its stream
// (its own, or the caller's) is the one the streaming source gathers on, the managed source gathers
// on, the decoder decodes on and the output pool marks batches ready on. The device is made current
// on the creating thread, which must keep it current while it drives the loader (as
// torch.cuda.set_device leaves a data-parallel rank's thread); the pipeline's own copy thread
// makes it current itself (CudaChunkStaging::CopyIn), and calls on consumers' threads set it for
// their duration (CudaOutputPool).
//
// Thread safety: the loader's thread only.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/handles.h"
#include "pipeline/output/cuda_batch_decode.h"
#include "pipeline/output/loader_device.h"

namespace rf {

class CudaLoaderDevice final : public LoaderDevice {
 public:
  // gpu -1: the calling thread's current device. stream null: one of its own.
  static Result<std::unique_ptr<CudaLoaderDevice>> Create(int gpu, void* stream);
  ~CudaLoaderDevice() override;  // waits for the work queued on the stream

  int gpu() const override { return gpu_; }
  cudaStream_t stream() const { return stream_; }
  void* stream_handle() const override { return stream_; }
  StagingFactory Staging(const PipelineConfig& c) override;
  Result<std::unique_ptr<TrainingSource>> Managed(const Dataset& d,
                                                  const PipelineConfig& c) override;
  Result<std::shared_ptr<OutputPool>> MakePool(size_t sample_bytes, uint32_t batch,
                                               uint32_t buffers) override;
  Status PrepareDecode(const DecodeSpec& spec, uint32_t max_batch) override;
  Status Decode(const Batch& stored, void* out, int64_t* labels) override;
  Status PutRecords(const Batch& host, void* values, int64_t* offsets, int64_t* labels) override;
  Status PutBytes(const void* host, void* out, size_t bytes) override;
  Status MoveWithin(void* to, const void* from, size_t bytes) override;
  Status WaitPut(uint32_t slot) override;
  bool WidensSequences() const override { return true; }
  Status PutSequencesAsync(const SequencePut& p, uint32_t slot) override;
  Status BindThread() override;
  Result<HostBuffer> HostArea(size_t bytes) override;
  Status Drain() override;
  std::string Describe() const override;

 private:
  CudaLoaderDevice() = default;

  int gpu_ = 0;
  cuda::CudaStream own_stream_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaBatchDecoder> decoder_;
  std::vector<int64_t> record_labels_;   // PutRecords' labels as int64, before their copy
  cuda::CudaEvent put_done_[kPutSlots];  // after each slot's last copy
  // PutSequencesAsync's narrow batch on the device, a slot each (reused in the stream's order).
  cuda::DeviceBuffer sequence_area_[kPutSlots];
};

}  // namespace rf
