// HostLoaderDevice: a Loader's batches in host memory (pipeline/output/loader_device.h):
// HostChunkStaging, the decode on the caller's thread (DecodeSamplesOnHost), a HostOutputPool, the
// packed sequences widened on the host.
//
// Thread safety: the loader's thread only (as LoaderDevice).
#pragma once

#include <cstring>
#include <memory>
#include <string>

#include "pipeline/output/batch_decode.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/output_pool.h"
#include "pipeline/stage/chunk_staging.h"

namespace rf {

class HostLoaderDevice final : public LoaderDevice {
 public:
  int gpu() const override { return -1; }
  void* stream_handle() const override { return nullptr; }
  StagingFactory Staging(const PipelineConfig&) override { return HostStaging(); }
  Result<std::unique_ptr<TrainingSource>> Managed(const Dataset&, const PipelineConfig&) override {
    return Status::Usage(
        "mode managed needs a GPU (CUDA managed memory); without one, use mode streaming");
  }
  Result<std::shared_ptr<OutputPool>> MakePool(size_t sample_bytes, uint32_t batch,
                                               uint32_t buffers) override {
    RF_ASSIGN_OR_RETURN(auto pool, HostOutputPool::Create(sample_bytes, batch, buffers));
    return std::shared_ptr<OutputPool>(std::move(pool));
  }
  Status PrepareDecode(const DecodeSpec& spec, uint32_t /*max_batch*/) override {
    spec_ = spec;
    return Status::Ok();
  }
  Status Decode(const Batch& stored, void* out, int64_t* labels) override {
    RF_ASSIGN_OR_RETURN(const AugmentBatch augment, spec_.AugmentFor(stored));
    DecodeSamplesOnHost(spec_, stored.samples, stored.n, out, augment);
    DecodeLabelsOnHost(stored.label_dtype, stored.labels, stored.n, labels);
    return Status::Ok();
  }
  Status PutRecords(const Batch& host, void* values, int64_t* offsets, int64_t* labels) override {
    std::memcpy(values, host.samples, host.values_bytes);
    std::memcpy(offsets, host.offsets, (size_t{host.n} + 1) * sizeof(int64_t));
    DecodeLabelsOnHost(host.label_dtype, host.labels, host.n, labels);
    return Status::Ok();
  }
  Status PutBytes(const void* host, void* out, size_t bytes) override {
    std::memcpy(out, host, bytes);
    return Status::Ok();
  }
  Status MoveWithin(void* to, const void* from, size_t bytes) override {
    std::memcpy(to, from, bytes);
    return Status::Ok();
  }
  Status WaitPut(uint32_t) override { return Status::Ok(); }
  Status PutSequencesAsync(const SequencePut& p, uint32_t) override {
    WidenSequencesOnHost(p);
    return Status::Ok();
  }
  Status BindThread() override { return Status::Ok(); }
  Result<HostBuffer> HostArea(size_t bytes) override {
    return HostBuffer::Allocate(bytes, PinMode::kOff);
  }
  Status Drain() override { return Status::Ok(); }
  std::string Describe() const override { return "cpu"; }

 private:
  DecodeSpec spec_;
};

}  // namespace rf
