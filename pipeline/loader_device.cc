#include "pipeline/loader_device.h"

#include <cstring>

#include "cuda/device.h"
#include "pipeline/chunk_staging.h"
#if RINGFEED_HAVE_CUDA
#include "pipeline/cuda_loader_device.h"
#endif

namespace rf {
namespace {

class HostLoaderDevice final : public LoaderDevice {
 public:
  int gpu() const override { return -1; }
  StagingFactory Staging(const PipelineConfig&) override {
    return [](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
      RF_ASSIGN_OR_RETURN(auto s, HostChunkStaging::Create(l));
      return std::unique_ptr<ChunkStaging>(std::move(s));
    };
  }
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
  Result<std::unique_ptr<ImageDecoder>> MakeImageDecoder(const ImageDecodeSpec& spec,
                                                         uint32_t threads,
                                                         const ImageOptions& image) override {
    if (image.decoder == ImageDecoderChoice::kNvjpeg) {
      return Status::Usage(
          "image_decoder nvjpeg decodes on a GPU: give device cuda, or image_decoder cpu or auto");
    }
    return MakeCpuImageDecoder(spec, threads);
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

template <typename In, typename Out>
void Widen(const LoaderDevice::SequencePut& p) {
  const auto* narrow = reinterpret_cast<const In*>(p.host);
  const auto* lengths = reinterpret_cast<const int64_t*>(p.host + p.lengths_at);
  const auto* cu = reinterpret_cast<const int32_t*>(p.host + p.cu_at);
  auto* tokens = static_cast<Out*>(p.tokens);
  for (uint64_t r = 0; r < p.rows; ++r) {
    for (uint64_t c = 0; c < p.row; ++c) {
      const uint64_t i = r * p.row + c;
      tokens[i] = static_cast<int64_t>(c) < lengths[r] ? static_cast<Out>(narrow[i])
                                                       : static_cast<Out>(p.pad);
    }
  }
  std::memcpy(p.lengths, lengths, p.rows * sizeof(int64_t));
  std::memcpy(p.cu, cu, (p.segments + 1) * sizeof(int32_t));
  // Each input's place in the last segment that starts at or before it.
  const int64_t inputs = static_cast<int64_t>(p.rows * (p.row - 1));
  uint64_t k = 0;
  for (int64_t at = 0; at < inputs; ++at) {
    while (k + 1 < p.segments && cu[k + 1] <= at) ++k;
    p.positions[at] = at - cu[k];
  }
}

template <typename Out>
void WidenFrom(const LoaderDevice::SequencePut& p) {
  switch (p.narrow_bytes) {
    case 2:
      return Widen<uint16_t, Out>(p);
    case 4:
      return Widen<int32_t, Out>(p);
    default:
      return Widen<int64_t, Out>(p);
  }
}

}  // namespace

void WidenSequencesOnHost(const LoaderDevice::SequencePut& p) {
  if (p.out_int32) {
    WidenFrom<int32_t>(p);
  } else {
    WidenFrom<int64_t>(p);
  }
}

Result<std::unique_ptr<LoaderDevice>> MakeLoaderDevice(DeviceKind kind, int gpu, void* stream) {
#if RINGFEED_HAVE_CUDA
  if (kind == DeviceKind::kCuda || (kind == DeviceKind::kAuto && CudaDevicePresent())) {
    if (!CudaDevicePresent()) return Status::Usage("device cuda: no CUDA device found");
    RF_ASSIGN_OR_RETURN(auto d, CudaLoaderDevice::Create(gpu, stream));
    return std::unique_ptr<LoaderDevice>(std::move(d));
  }
#else
  (void)gpu;
  (void)stream;
  if (kind == DeviceKind::kCuda) return Status::Usage("device cuda: this build has no CUDA");
#endif
  return std::unique_ptr<LoaderDevice>(new HostLoaderDevice);
}

}  // namespace rf
