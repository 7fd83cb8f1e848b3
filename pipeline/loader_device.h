// LoaderDevice: where a Loader (pipeline/loader.h) puts its batches, chosen once at Open. It
// makes the device-specific parts of the one pipeline:
//
//   HostLoaderDevice (here)                  host memory: HostChunkStaging, DecodeSamplesOnHost on
//                                            the caller's thread, a HostOutputPool, the CPU image
//                                            decoder
//   CudaLoaderDevice (cuda_loader_device.h)  one GPU: CudaChunkStaging (copy streams), the managed
//                                            mode's source, CudaBatchDecoder on the stream, a
//                                            CudaOutputPool; the CPU image decoder too, for now
//                                            (its images copied to the GPU: an nvJPEG decoder
//                                            writing device memory is the step to come)
//
// The stream: the GPU device's work goes on one stream (the loader's own, or the caller's).
//
// Thread safety: the loader's thread only.
#pragma once

#include <memory>
#include <string>

#include "core/batch.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/batch_decode.h"
#include "pipeline/host_buffer.h"
#include "pipeline/image_decoder.h"
#include "pipeline/output_pool.h"
#include "pipeline/pipeline_config.h"
#include "pipeline/streaming_source.h"
#include "pipeline/training_source.h"

namespace rf {

class LoaderDevice {
 public:
  virtual ~LoaderDevice() = default;

  virtual int gpu() const = 0;  // -1: host memory
  // The staging area of the streaming source.
  virtual StagingFactory Staging(const PipelineConfig& c) = 0;
  // The managed mode's source (Usage error on the host).
  virtual Result<std::unique_ptr<TrainingSource>> Managed(const Dataset& d,
                                                          const PipelineConfig& c) = 0;
  virtual Result<std::shared_ptr<OutputPool>> MakePool(size_t sample_bytes, uint32_t batch,
                                                       uint32_t buffers) = 0;
  // Decodes `stored` (a batch of at most max_batch samples from the source) into out / labels
  // per `spec` (queued, on a GPU).
  virtual Status PrepareDecode(const DecodeSpec& spec, uint32_t max_batch) = 0;
  virtual Status Decode(const Batch& stored, void* out, int64_t* labels) = 0;
  // Records of any size: `host` (a batch gathered in host memory, with its offsets and
  // values_bytes) into the output: the values as they are, the n + 1 offsets, the labels as int64
  // (queued, on a GPU; `host` may be reused once this returns).
  virtual Status PutRecords(const Batch& host, void* values, int64_t* offsets, int64_t* labels) = 0;
  // The decoder of image/jpeg records (pipeline/image_decoder.h) for this device: `threads`
  // CPU threads where it decodes on the CPU.
  virtual Result<std::unique_ptr<ImageDecoder>> MakeImageDecoder(const ImageDecodeSpec& spec,
                                                                 uint32_t threads) = 0;
  // `bytes` of host memory into the output at `out` (queued, on a GPU; `host` may be reused once
  // this returns).
  virtual Status PutBytes(const void* host, void* out, size_t bytes) = 0;
  // The same from host memory of HostArea (pinned on a GPU: the copy runs on while the caller
  // goes on), as one of `kPutSlots` slots: `host` may be written again once WaitPut(slot)
  // returns. Any thread, one at a time.
  static constexpr uint32_t kPutSlots = 2;
  virtual Status PutBytesAsync(const void* host, void* out, size_t bytes, uint32_t slot) = 0;
  virtual Status WaitPut(uint32_t slot) = 0;
  // Makes the calling thread's CUDA calls go to the device's GPU (a worker thread's, before its
  // first: the pool's events and the stream are that GPU's). Host: nothing.
  virtual Status BindThread() = 0;
  // Host memory for PutBytesAsync: pinned on a GPU, plain on the host.
  virtual Result<HostBuffer> HostArea(size_t bytes) = 0;
  // Waits for the work queued so far.
  virtual Status Drain() = 0;
  virtual std::string Describe() const = 0;
};

// The device for `kind`: kCpu the host; kCuda GPU `gpu` (-1: the calling thread's current
// device), Usage error where the build or the machine has none; kAuto a GPU where one is found.
// `stream` (a cudaStream_t, or null for a stream of the device's own) must outlive the device.
Result<std::unique_ptr<LoaderDevice>> MakeLoaderDevice(DeviceKind kind, int gpu, void* stream);

}  // namespace rf
