// LoaderDevice: where a Loader (pipeline/loader.h) puts its batches, chosen once at Open. It
// makes the device-specific parts of the one pipeline:
//
//   HostLoaderDevice (host_loader_device.h)  host memory: HostChunkStaging, DecodeSamplesOnHost on
//                                            the caller's thread, a HostOutputPool, the CPU image
//                                            decoder
//   CudaLoaderDevice (cuda_loader_device.h)  one GPU: CudaChunkStaging (copy streams), the managed
//                                            mode's source, CudaBatchDecoder on the stream, a
//                                            CudaOutputPool; the CPU image decoder too, for now
//                                            (its images copied to the GPU: an nvJPEG decoder
//                                            writing device memory is the step to come)
//
// MakeLoaderDevice (make_loader_device.h) chooses one. The stream: the GPU device's work goes on
// one stream (the loader's own, or the caller's).
//
// Thread safety: the loader's thread only.
#pragma once

#include <memory>
#include <string>

#include "core/batch.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/output/batch_decode.h"
#include "pipeline/output/output_pool.h"
#include "pipeline/sources/pipeline_config.h"
#include "pipeline/sources/streaming_source.h"
#include "pipeline/sources/training_source.h"
#include "pipeline/stage/host_buffer.h"

namespace rf {

class LoaderDevice {
 public:
  virtual ~LoaderDevice() = default;

  virtual int gpu() const = 0;  // -1: host memory
  // The stream the device's work goes on (a cudaStream_t), for the stages that queue work of
  // their own before it (the nvJPEG decoder); null on the host.
  virtual void* stream_handle() const = 0;
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
  // `bytes` of pageable host memory into the output at `out` (queued, on a GPU): the copy has
  // read `host` when the call returns, so it may be written again at once (CUDA's rule for
  // pageable memory; not memory of HostArea, which is pinned on a GPU).
  virtual Status PutBytes(const void* host, void* out, size_t bytes) = 0;
  // `bytes` from `from` to `to`, both in the output's memory and not overlapping (queued, on a
  // GPU, after the work queued before it).
  virtual Status MoveWithin(void* to, const void* from, size_t bytes) = 0;
  // Copies from host memory of HostArea (pinned on a GPU: the copy runs on while the caller goes
  // on) go as one of `kPutSlots` slots: the slot's memory may be written again once
  // WaitPut(slot) returns (its last copy has read it). Any thread, one at a time.
  static constexpr uint32_t kPutSlots = 3;
  virtual Status WaitPut(uint32_t slot) = 0;
  // Packed token sequences (pipeline/sequences/sequence_loader.h) finished on the device: the
  // loader packs a batch's tokens in a narrow width on the host (`host`, HostArea memory of slot
  // `slot`: the tokens [rows, row] at 0, a row's ids past its length anything; the rows' int64
  // lengths at lengths_at; the segments + 1 int32 cu_seqlens at cu_at; `bytes` in all); the device
  // copies it over and writes the batch (queued): `tokens` widened to int64 or int32 with pad past
  // each row's length, `lengths`, `cu` and the int64 `positions` [rows, row - 1] (each input's
  // place in its segment, from cu). Where WidensSequences() is false the loader packs the batch
  // whole on the host instead (the host's PutSequencesAsync widens on the host, at once, for
  // SequenceOptions::pack_narrow).
  struct SequencePut {
    const uint8_t* host = nullptr;
    size_t bytes = 0, lengths_at = 0, cu_at = 0;
    size_t capacity = 0;        // the most `bytes` will be (the device's own copy of the area)
    uint32_t narrow_bytes = 2;  // a token's on the host: 2 uint16, 4 int32, 8 int64
    uint64_t rows = 0, row = 0, segments = 0;
    bool out_int32 = false;
    int64_t pad = 0;
    void* tokens = nullptr;
    int64_t* lengths = nullptr;
    int32_t* cu = nullptr;
    int64_t* positions = nullptr;
  };
  virtual bool WidensSequences() const { return false; }
  virtual Status PutSequencesAsync(const SequencePut& /*p*/, uint32_t /*slot*/) {
    return Status::Unsupported("this device does not widen packed sequences");
  }
  // Makes the calling thread's CUDA calls go to the device's GPU (a worker thread's, before its
  // first: the pool's events and the stream are that GPU's). Host: nothing.
  virtual Status BindThread() = 0;
  // Host memory for PutSequencesAsync: pinned on a GPU, plain on the host.
  virtual Result<HostBuffer> HostArea(size_t bytes) = 0;
  // Waits for the work queued so far.
  virtual Status Drain() = 0;
  virtual std::string Describe() const = 0;
};

// What PutSequencesAsync's kernel does, on the host, with p.host and the outputs in host memory
// (the host device's PutSequencesAsync; the reference the GPU's is tested against).
void WidenSequencesOnHost(const LoaderDevice::SequencePut& p);

}  // namespace rf
