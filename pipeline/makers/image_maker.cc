// Decoded images (BatchKind::kImages, and kFields' image field): image records decoded into images
// of the plan's ImageDecodeSpec by the image stage (pipeline/images/image_stage.h: decode threads
// or nvJPEG ahead of the consumer, `depth` batches in flight), whose decoder pipeline/images/
// image_decoder.h chooses. A mixture's batches are decoded as one dataset's, each sample keyed as
// pipeline/sources/mixed_source.h says.
#include <algorithm>
#include <utility>

#include "io/format.h"
#include "pipeline/images/image_decoder.h"
#include "pipeline/images/image_stage.h"
#include "pipeline/makers/makers.h"

namespace rf {
namespace {

class ImageMaker final : public BatchMaker {
 public:
  explicit ImageMaker(std::unique_ptr<ImageStage> stage) : stage_(std::move(stage)) {}

  Status StartEpoch(uint64_t epoch, uint64_t position) override {
    return stage_->StartEpoch(epoch, position);
  }
  // The stage has written the batch (on a GPU: queued its copy) and set its place.
  Result<std::shared_ptr<LoadedBatch>> Make(uint64_t /*epoch*/) override { return stage_->Next(); }
  uint64_t position() const override { return stage_->position(); }
  const MixtureState* mixture_state() const override { return stage_->mixture_state(); }
  void SourceRestored() override { stage_->SourceRestored(); }
  // The stage keeps its own batches in flight; the worker's queue holds one finished batch (the
  // pool's buffer for it is the plan's worker_buffers).
  uint32_t WorkerDepth(uint32_t /*output_buffers*/) const override { return 1; }
  bool decodes_records() const override { return true; }
  SkippedRecords skipped(uint64_t /*epoch*/) const override { return stage_->skipped(); }
  uint64_t skipped_total() const override { return stage_->skipped_total(); }
  void AddStats(LoaderStats* s) const override {
    s->image_threads = stage_->decoder().threads();
    s->image_busy_seconds = stage_->decoder().busy_seconds();
    s->images_decoded = stage_->decoder().records();
    s->image_wait_seconds = stage_->decoder_wait_seconds();
  }
  std::string Describe() const override { return ", " + stage_->Describe(); }

 private:
  std::unique_ptr<ImageStage> stage_;
};

}  // namespace

Result<std::unique_ptr<BatchMaker>> MakeImageMaker(const MakerParts& parts,
                                                   std::shared_ptr<OutputPool>* pool) {
  return MakeImageFieldMaker(parts, pool, nullptr);
}

Result<std::unique_ptr<BatchMaker>> MakeImageFieldMaker(const MakerParts& parts,
                                                        std::shared_ptr<OutputPool>* pool,
                                                        std::shared_ptr<const FieldSplit> fields) {
  const LoaderOptions& options = parts.options;
  const ImageDecodeSpec& spec = parts.plan.image;
  const uint32_t batch = options.pipeline.order.batch_size;
  bool compressed = false, jpeg = false;  // jpeg: a record may be a JPEG (nvJPEG may take it)
  for (const Dataset* d : parts.datasets) {
    compressed = compressed || d->compressed();
    const format::Header& h = d->header();
    jpeg = jpeg || format::MayHoldJpeg(
                       fields ? h.fields[static_cast<size_t>(parts.plan.image_field)].media_type
                              : h.media_type);
  }
  RF_ASSIGN_OR_RETURN(*pool,
                      parts.device.MakePool(spec.OutputSampleBytes() * batch, batch,
                                            options.output_buffers + parts.plan.worker_buffers));
  const uint32_t threads = options.image.threads != 0
                               ? options.image.threads
                               : DefaultImageThreads(parts.source->decode_threads(), compressed);
  RF_ASSIGN_OR_RETURN(std::unique_ptr<ImageDecoder> decoder,
                      MakeImageDecoder(spec, parts.device.gpu(), parts.device.stream_handle(),
                                       threads, options.image, jpeg));
  // Batches decoded ahead: the pool's buffers less the one the consumer holds and the one it
  // may still hold while asking for the next (more are allocated, never deadlocked, if it holds
  // more).
  const uint32_t depth =
      std::max<uint32_t>(1, options.output_buffers - std::min<uint32_t>(2, options.output_buffers));
  RF_ASSIGN_OR_RETURN(
      std::unique_ptr<ImageStage> stage,
      ImageStage::Create(parts.datasets, *parts.source, parts.device, *pool, std::move(decoder),
                         batch, depth, options.image.skip_bad_records, std::move(fields)));
  return std::unique_ptr<BatchMaker>(new ImageMaker(std::move(stage)));
}

}  // namespace rf
