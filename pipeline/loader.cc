#include "pipeline/loader.h"

#include <algorithm>
#include <utility>

#include "core/augment_spec.h"
#include "core/clock.h"
#include "pipeline/batch_worker.h"
#include "pipeline/images/image_decoder.h"
#include "pipeline/images/image_stage.h"
#include "pipeline/loader_options.h"
#include "pipeline/order/window_order.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/make_loader_device.h"
#include "pipeline/output/output_pool.h"
#include "pipeline/sources/mixed_source.h"
#include "pipeline/sources/mixture.h"
#include "pipeline/sources/streaming_source.h"
#include "pipeline/stage/chunk_staging.h"

namespace rf {
namespace {

// The decode a loader's options ask of this dataset (augment: o.augment parsed).
DecodeSpec DecodeFor(const format::Header& h, const OutputOptions& o, const AugmentParams& augment,
                     uint64_t seed) {
  DecodeSpec s;
  s.stored = h.sample_dtype;
  s.output = o.dtype;
  s.layout = o.layout;
  s.normalize = o.normalize;
  s.channels = h.channels;
  s.height = h.height;
  s.width = h.width;
  s.augment = augment;
  s.seed = seed;
  s.mean.assign(h.mean.begin(), h.mean.begin() + h.channels);
  s.stddev.assign(h.stddev.begin(), h.stddev.begin() + h.channels);
  if (!o.mean.empty() || !o.stddev.empty()) {  // DecodeSpec::Validate checks their counts
    s.mean = o.mean;
    s.stddev = o.stddev;
  }
  return s;
}

// One sample's output shape: the stored shape, or for images (C, H, W) in NCHW, (H, W, C) in
// NHWC. Usage for NHWC on samples that are not images.
Result<std::vector<int64_t>> SampleShape(const format::Header& h, SampleLayout layout) {
  const std::vector<uint64_t> stored = h.Shape();
  std::vector<int64_t> shape(stored.begin(), stored.end());
  if (layout == SampleLayout::kNCHW) return shape;
  if (shape.size() != 3) {
    return Status::Usage("layout NHWC needs image samples (C, H, W); this dataset's are " +
                         format::ShapeText(stored));
  }
  return std::vector<int64_t>{shape[1], shape[2], shape[0]};
}

// Next()'s decoded images as a TrainingSource (Loader::source() for images): each batch valid
// until the next call, in the loader's output dtype and layout, labels int64.
class DecodedImageSource final : public TrainingSource {
 public:
  DecodedImageSource(Loader& loader, TrainingSource& source) : loader_(loader), source_(source) {}

  uint64_t sample_count() const override { return source_.sample_count(); }
  uint64_t epoch_samples() const override { return source_.epoch_samples(); }
  Status StartEpoch(uint64_t epoch, uint64_t position) override {
    held_.reset();
    return loader_.StartEpoch(epoch, position);
  }
  Result<Batch> Next() override {
    held_.reset();  // back to the pool: the consumer is done with it
    RF_ASSIGN_OR_RETURN(held_, loader_.Next());
    if (!held_) return Batch{};
    Batch b;
    b.samples = held_->samples();
    b.sample_dtype = held_->dtype();
    b.labels = held_->labels();
    b.label_dtype = DType::kInt64;
    b.n = held_->size();
    b.sample_indices = held_->indices().data();  // host memory: for --dump-order, not a kernel
    b.epoch = held_->epoch();
    return b;
  }
  uint64_t position() const override { return loader_.position(); }
  const std::vector<uint64_t>& batch_samples() const override {
    return held_ ? held_->indices() : none_;
  }
  uint64_t bytes_read() const override { return source_.bytes_read(); }
  double wait_seconds() const override { return source_.wait_seconds(); }
  uint64_t bytes_delivered() const override { return source_.bytes_delivered(); }
  double decode_busy_seconds() const override { return source_.decode_busy_seconds(); }
  uint32_t decode_threads() const override { return source_.decode_threads(); }
  double reader_held_seconds() const override { return source_.reader_held_seconds(); }
  std::string Describe() const override { return loader_.Describe(); }
  std::string EpochReport() const override {
    const SkippedRecords s = loader_.skipped();
    return s.Text(s.epoch + 1);  // `ringfeed train` counts epochs from 1
  }
  // A mixture's stream after the last batch handed out (the image stage's, not the source's,
  // which is ahead by the batches decoded ahead).
  const MixtureState* mixture_state() const override { return loader_.mixture_state(); }

 private:
  Loader& loader_;
  TrainingSource& source_;
  std::shared_ptr<LoadedBatch> held_;
  const std::vector<uint64_t> none_;
};

}  // namespace

Status CheckAugmentFits(const AugmentParams& augment, const format::Header& h,
                        const std::string& flag) {
  if (!augment.enabled()) return Status::Ok();
  const std::vector<uint64_t> shape = h.Shape();
  const std::string spec = flag + " " + AugmentSpecText(augment);
  if (!IsImageDType(h.sample_dtype) || (shape.size() != 2 && shape.size() != 3)) {
    return Status::Usage(spec +
                         ": augmentation transforms images, and this dataset's samples are " +
                         std::string(DTypeName(h.sample_dtype)) + " of shape " +
                         format::ShapeText(shape) + "; leave it off");
  }
  const uint32_t side = std::min(h.height, h.width);
  if (augment.crop_pad >= side) {
    return Status::Usage(
        spec + ": a crop padding of " + std::to_string(augment.crop_pad) +
        " pixels is not below the " + std::to_string(h.height) + "x" + std::to_string(h.width) +
        " images' side, so every crop would be padding only; at most " + std::to_string(side - 1));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Loader>> Loader::Open(const LoaderOptions& options) {
  RF_RETURN_IF_ERROR(options.pipeline.Validate());
  std::unique_ptr<Loader> l(new Loader);
  RF_ASSIGN_OR_RETURN(const std::vector<std::string> paths, options.pipeline.DataPaths());
  std::vector<const Dataset*> datasets;
  for (const std::string& path : paths) {
    RF_ASSIGN_OR_RETURN(Dataset d, Dataset::Open(path));
    l->owned_datasets_.push_back(std::make_unique<Dataset>(std::move(d)));
    datasets.push_back(l->owned_datasets_.back().get());
  }
  if (options.pipeline.weights.empty())
    RF_RETURN_IF_ERROR(options.pipeline.ValidateFor(datasets[0]->ChunkSampleCounts()));
  RF_RETURN_IF_ERROR(l->Build(datasets, options));
  return l;
}

Result<std::unique_ptr<Loader>> Loader::Create(const Dataset& dataset,
                                               const LoaderOptions& options) {
  RF_RETURN_IF_ERROR(options.pipeline.ValidateFor(dataset.ChunkSampleCounts()));
  std::unique_ptr<Loader> l(new Loader);
  RF_RETURN_IF_ERROR(l->Build({&dataset}, options));
  return l;
}

Result<std::unique_ptr<Loader>> Loader::Create(const std::vector<const Dataset*>& datasets,
                                               const LoaderOptions& options) {
  if (datasets.empty()) return Status::Usage("data: no dataset");
  if (datasets.size() == 1 && options.pipeline.weights.empty())
    return Create(*datasets[0], options);
  RF_RETURN_IF_ERROR(options.pipeline.Validate());
  std::unique_ptr<Loader> l(new Loader);
  RF_RETURN_IF_ERROR(l->Build(datasets, options));
  return l;
}

Loader::~Loader() {
  // The worker first (it runs the image stage or the source), the image stage (its decode
  // threads write the pool's buffers and it reads the source), then the source: its threads stop
  // and its staging drains; then the device's stream drains.
  decoded_source_.reset();
  worker_.reset();
  images_.reset();
  source_.reset();
  if (device_) (void)device_->Drain();
}

Status Loader::Build(const std::vector<const Dataset*>& datasets, const LoaderOptions& options) {
  datasets_ = datasets;
  dataset_ = datasets[0];
  const Dataset& dataset = *dataset_;
  options_ = options;
  format::Header h = dataset.header();
  const bool decoded = options.output_buffers > 0;
  const SequenceOptions& seq = options.sequence;
  if (seq.length != 0)
    return Status::Usage("sequence_length: packed sequences come from a SequenceLoader");
  if (seq.eod_token != -1 || seq.pad_token != 0 || seq.pad)
    return Status::Usage(
        "eod_token, pad_token and packing shape packed sequences: give sequence_length too");
  if (datasets.size() > 1 || !options.pipeline.weights.empty()) {
    // A mixture: samples of one shape and type, normalized with the mixture's statistics.
    RF_ASSIGN_OR_RETURN(weights_, NormalizeWeights(options.pipeline.weights, datasets.size()));
    RF_RETURN_IF_ERROR(CheckMixable(datasets));
    if (options.pipeline.mode == PipelineMode::kManaged)
      return Status::Usage(
          "managed mode loads one dataset into GPU memory; a mixture of datasets streams "
          "(streaming mode, the default)");
    std::vector<const format::Header*> headers;
    for (const Dataset* d : datasets) headers.push_back(&d->header());
    if (!MixtureStatistics(headers, weights_, h.channels, &h.mean, &h.stddev))
      return Status::Usage("weights: the datasets' channel statistics, mixed, overflow float32");
  } else if (!options.pipeline.mixture.sources.empty()) {
    return Status::Usage("a mixture's state is for a mixture of datasets (weights)");
  }
  records_ = h.variable();
  const ImageOptions& image = options.image;
  const bool images = decoded && format::HoldsJpegRecords(h) && image.size != 0;
  if (!images) {
    // What only decoded images take does nothing here.
    const ImageOptions plain;
    const char* idle = image.crop != plain.crop           ? "image_crop"
                       : image.threads != plain.threads   ? "image_threads"
                       : image.skip_bad_records           ? "skip_bad_records"
                       : image.max_side != plain.max_side ? "max_image_side"
                       : image.decoder != plain.decoder   ? "image_decoder"
                                                          : nullptr;
    if (idle != nullptr) {
      return Status::Usage(std::string(idle) + ": " +
                           (format::HoldsJpegRecords(h) && decoded
                                ? "image_size 0 hands out the JPEG bytes as stored"
                                : "this dataset's batches are no decoded images "
                                  "(it holds no image/jpeg records)") +
                           "; leave it out");
    }
  }
  if (images) return BuildImages(options);
  if (records_) {
    // Records of any size come out as they are stored: values and offsets, no decode.
    const OutputOptions& out = options.output;
    const std::string kind = format::RecordKindName(h.record_kind);
    if (!out.augment.empty() && out.augment != "none")
      return Status::Usage("augment: " + kind + " records are not images; leave it off");
    if (!out.mean.empty() || !out.stddev.empty())
      return Status::Usage("mean and std: " + kind + " records are not normalized");
    if (options.pipeline.mode == PipelineMode::kManaged)
      return Status::Usage("mode managed serves fixed-shape tensors; " + kind +
                           " records stream (mode streaming)");
    if (options.output_buffers > kMaxOutputBuffers) {
      return Status::Usage("prefetch must be at most " + std::to_string(kMaxOutputBuffers) +
                           " batches, got " + std::to_string(options.output_buffers));
    }
  }
  if (decoded && !records_) {
    const OutputOptions& out = options.output;
    if (!out.normalize && (!out.mean.empty() || !out.stddev.empty())) {
      return Status::Usage("mean and std: given with normalize off, they would do nothing");
    }
    RF_ASSIGN_OR_RETURN(const AugmentParams augment, ParseAugmentSpec(out.augment));
    RF_RETURN_IF_ERROR(CheckAugmentFits(augment, h, "augment"));
    if (options.output_buffers > kMaxOutputBuffers) {
      return Status::Usage("prefetch must be at most " + std::to_string(kMaxOutputBuffers) +
                           " batches, got " + std::to_string(options.output_buffers));
    }
    decode_ = DecodeFor(h, out, augment, options.pipeline.order.seed);
    RF_RETURN_IF_ERROR(decode_.Validate());
    RF_ASSIGN_OR_RETURN(sample_shape_, SampleShape(h, options.output.layout));
  }
  RF_RETURN_IF_ERROR(CheckDropLast());
  RF_ASSIGN_OR_RETURN(device_,
                      MakeLoaderDevice(options.pipeline.device, options.gpu, options.stream));
  gpu_device_ = device_->gpu();
  if (mixture()) {
    RF_RETURN_IF_ERROR(BuildMixture(options, /*host_staging=*/records_));
  } else if (options.pipeline.mode == PipelineMode::kManaged) {
    RF_ASSIGN_OR_RETURN(source_, device_->Managed(dataset, options.pipeline));
  } else {
    StreamingOptions so = StreamingOptionsFor(options.pipeline, options.epochs);
    // A ring whose chunks are copied to host staging (the host's, or records') is never read by
    // a GPU's copy engine: pinning it would only make the loader's start pay for it
    // (cudaHostRegister of ring_slots x the largest chunk, faulted in first).
    if (records_ || gpu_device_ < 0) so.pin = PinMode::kOff;
    // Records are gathered in host memory whatever the device (pipeline/stage/chunk_staging.h),
    // then copied to it batch by batch: they are compact, and their sizes are known on the host.
    const StagingFactory staging = records_ ? HostStaging() : device_->Staging(options.pipeline);
    so.poll = [this] { return Poll(); };
    RF_ASSIGN_OR_RETURN(auto s, StreamingSource::Create(dataset, so, staging));
    source_ = std::move(s);
  }
  if (decoded && records_) {
    // The values' room grows with the batches (OutputPool::Reserve); it starts at twice a batch
    // of the dataset's mean record.
    const uint32_t batch = options.pipeline.order.batch_size;
    const uint64_t mean = std::max<uint64_t>(1, dataset.data_bytes() / h.total_samples);
    const uint64_t start = std::min<uint64_t>(uint64_t{batch} * h.SampleBytes(), 2 * batch * mean);
    RF_ASSIGN_OR_RETURN(pool_, device_->MakePool(start, batch, options.output_buffers));
  } else if (decoded) {
    const uint32_t batch = options.pipeline.order.batch_size;
    RF_RETURN_IF_ERROR(device_->PrepareDecode(decode_, batch));
    RF_ASSIGN_OR_RETURN(pool_, device_->MakePool(decode_.OutputSampleBytes() * batch, batch,
                                                 options.output_buffers));
  }
  epoch_samples_ = source_->epoch_samples();
  return Status::Ok();
}

Status Loader::CheckDropLast() const {
  const OrderSettings& order = options_.pipeline.order;
  if (!order.drop_last) return Status::Ok();
  // An epoch shorter than one batch would hand out nothing, every epoch.
  uint64_t per_rank = 0;
  if (mixture()) {
    std::vector<uint64_t> samples;
    for (const Dataset* d : datasets_) samples.push_back(d->sample_count());
    OrderSettings ordinary = order;
    ordinary.resumed = {};
    RF_ASSIGN_OR_RETURN(per_rank,
                        MixtureEpochCount(MixtureSamples(samples, weights_), ordinary, 0));
  } else {
    per_rank = WindowOrder(dataset_->ChunkSampleCounts(), order).EpochSampleCount();
  }
  if (per_rank < order.batch_size) {
    return Status::Usage("--drop-last with --batch-size " + std::to_string(order.batch_size) +
                         " drops every batch: an epoch holds " + std::to_string(per_rank) +
                         " samples" + (order.world_size > 1 ? " a rank" : "") +
                         "; leave --drop-last out or take a smaller batch");
  }
  return Status::Ok();
}

Status Loader::BuildImages(const LoaderOptions& options) {
  const OutputOptions& out = options.output;
  records_ = false;  // the batches are fixed-shape images
  if (!out.augment.empty() && out.augment != "none") {
    return Status::Usage(
        "augment: image/jpeg records are decoded with their own random resized crop and flip "
        "(image_crop); leave augment off");
  }
  if (options.pipeline.mode == PipelineMode::kManaged)
    return Status::Usage("mode managed serves fixed-shape tensors; image/jpeg records stream");
  if (options.output_buffers > kMaxOutputBuffers) {
    return Status::Usage("prefetch must be at most " + std::to_string(kMaxOutputBuffers) +
                         " batches, got " + std::to_string(options.output_buffers));
  }
  if (!out.normalize && (!out.mean.empty() || !out.stddev.empty()))
    return Status::Usage("mean and std: given with normalize off, they would do nothing");
  ImageDecodeSpec spec;
  spec.size = options.image.size;
  spec.crop = options.image.crop;
  spec.output = out.dtype;
  spec.channels_last = out.layout == SampleLayout::kNHWC;
  spec.normalize = out.normalize;
  spec.max_side = options.image.max_side;
  spec.seed = options.pipeline.order.seed;
  if (!out.mean.empty() || !out.stddev.empty()) {
    if (out.mean.size() != 3 || out.stddev.size() != 3) {
      return Status::Usage(
          "mean and std: decoded images have 3 channels, so one value a channel (" +
          std::to_string(out.mean.size()) + " means and " + std::to_string(out.stddev.size()) +
          " stds given), in pixel units "
          "(0 to 255)");
    }
    std::copy(out.mean.begin(), out.mean.end(), spec.mean.begin());
    std::copy(out.stddev.begin(), out.stddev.end(), spec.stddev.begin());
  }
  RF_RETURN_IF_ERROR(spec.Validate());
  const int64_t size = spec.size;
  sample_shape_ = spec.channels_last ? std::vector<int64_t>{size, size, 3}
                                     : std::vector<int64_t>{3, size, size};
  RF_RETURN_IF_ERROR(CheckDropLast());
  RF_ASSIGN_OR_RETURN(device_,
                      MakeLoaderDevice(options.pipeline.device, options.gpu, options.stream));
  gpu_device_ = device_->gpu();
  // The records are gathered in host memory (the decoder reads them there), whatever the device:
  // no GPU's copy engine reads the ring, so it is not pinned. A mixture's datasets each so
  // (BuildMixture), their batches gathered into one host batch of records.
  if (mixture()) {
    RF_RETURN_IF_ERROR(BuildMixture(options, /*host_staging=*/true));
  } else {
    StreamingOptions so = StreamingOptionsFor(options.pipeline, options.epochs);
    so.pin = PinMode::kOff;
    so.poll = [this] { return Poll(); };
    RF_ASSIGN_OR_RETURN(auto source, StreamingSource::Create(*dataset_, so, HostStaging()));
    source_ = std::move(source);
  }
  const uint32_t batch = options.pipeline.order.batch_size;
  bool compressed = false;
  for (const Dataset* d : datasets_) compressed = compressed || d->compressed();
  // With the worker (one dataset), the stage runs on its thread and one finished batch may wait
  // in its queue: one buffer more.
  const uint32_t worker_buffer = options.worker && !mixture() ? 1 : 0;
  RF_ASSIGN_OR_RETURN(pool_, device_->MakePool(spec.OutputSampleBytes() * batch, batch,
                                               options.output_buffers + worker_buffer));
  const uint32_t threads = options.image.threads != 0
                               ? options.image.threads
                               : DefaultImageThreads(source_->decode_threads(), compressed);
  RF_ASSIGN_OR_RETURN(
      std::unique_ptr<ImageDecoder> decoder,
      MakeImageDecoder(spec, device_->gpu(), device_->stream_handle(), threads, options.image));
  // Batches decoded ahead: the pool's buffers less the one the consumer holds and the one it
  // may still hold while asking for the next (more are allocated, never deadlocked, if it holds
  // more).
  const uint32_t depth =
      std::max<uint32_t>(1, options.output_buffers - std::min<uint32_t>(2, options.output_buffers));
  RF_ASSIGN_OR_RETURN(
      images_, ImageStage::Create(datasets_, *source_, *device_, pool_, std::move(decoder), batch,
                                  depth, options.image.skip_bad_records));
  decoded_source_ = std::make_unique<DecodedImageSource>(*this, *source_);
  epoch_samples_ = source_->epoch_samples();
  return Status::Ok();
}

uint64_t Loader::position() const {
  if (worker_) return position_;
  return images_ ? images_->position() : source_->position();
}

SkippedRecords Loader::skipped() const {
  if (!images_) return SkippedRecords{epoch_, 0, {}};
  if (!worker_) return images_->skipped();
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  return skipped_snapshot_;
}

Status Loader::Poll() const {
  if (worker_ && worker_->on_worker_thread()) {
    return worker_->stopping() ? Status::Aborted("the loader's worker was stopped") : Status::Ok();
  }
  return options_.poll ? options_.poll() : Status::Ok();
}

Status Loader::BuildMixture(const LoaderOptions& options, bool host_staging) {
  // Each dataset's source is the one a single dataset's loader of these options makes: its own
  // staging (records and decoded images gathered on the host, from a ring left unpinned), an
  // endless read plan (its epochs are its own), its own order. The mixture's gather reads every
  // source's staging area, of one layout.
  const StagingFactory staging = host_staging ? HostStaging() : device_->Staging(options.pipeline);
  const bool unpinned = host_staging || gpu_device_ < 0;
  MixedSource::SourceFactory make =
      [this, staging, unpinned, options](
          size_t i, const OrderSettings& order) -> Result<std::unique_ptr<StreamingSource>> {
    PipelineConfig p = options.pipeline;
    p.order = order;
    StreamingOptions so = StreamingOptionsFor(p, /*epochs=*/0);
    if (unpinned) so.pin = PinMode::kOff;
    so.poll = [this] { return Poll(); };
    return StreamingSource::Create(*datasets_[i], so, staging);
  };
  RF_ASSIGN_OR_RETURN(auto m, MixedSource::Create(datasets_, weights_, options.pipeline.order,
                                                  options.pipeline.mixture, std::move(make)));
  source_ = std::move(m);
  return Status::Ok();
}

Result<uint64_t> Loader::EpochSamplesFor(uint64_t epoch, const ResumedEpoch& resumed) const {
  PipelineConfig p = options_.pipeline;
  p.order.resumed = resumed;
  if (!mixture()) return p.EpochSamplesFor(dataset_->ChunkSampleCounts(), epoch);
  RF_ASSIGN_OR_RETURN(const uint64_t count,
                      static_cast<const MixedSource&>(*source_).EpochCount(epoch, resumed));
  return EpochSamples(count, p.order.batch_size, p.order.drop_last);
}

Status Loader::RestoreMixture(const MixtureState& s, const ResumedEpoch& resumed) {
  if (!mixture()) return Status::Usage("a mixture's state: this loader reads one dataset");
  if (worker_) {  // it runs the source being restored; what it made ahead is of the old place
    worker_->Stop();
    started_ = false;
  }

  RF_RETURN_IF_ERROR(static_cast<MixedSource&>(*source_).Restore(s, resumed));
  if (images_) images_->SourceRestored();
  return Status::Ok();
}

const MixtureState* Loader::mixture_state() const {
  return images_ ? images_->mixture_state() : source_->mixture_state();
}

uint64_t Loader::batches_per_epoch() const {
  const uint64_t b = options_.pipeline.order.batch_size;
  return (epoch_samples() + b - 1) / b;
}

Status Loader::StartEpoch(uint64_t epoch, uint64_t position) {
  // The clock of stats() starts here, so the wait for the first window (in StartEpoch) is inside
  // the time it is a share of.
  if (clock_start_ns_ == 0) clock_start_ns_ = SteadyNowNs();
  if (worker_) {
    worker_->Stop();  // the batches made ahead of the old place are dropped
    started_ = false;
  }
  RF_RETURN_IF_ERROR(images_ ? images_->StartEpoch(epoch, position)
                             : source_->StartEpoch(epoch, position));
  epoch_ = epoch;
  epoch_samples_ = source_->epoch_samples();
  position_ = position;

  if (worker_) TakeSnapshot();
  return Status::Ok();
}

void Loader::TakeSnapshot() {
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  snapshot_ = SourceStats();
  if (images_) {
    skipped_snapshot_ = images_->skipped();
    skipped_total_snapshot_ = images_->skipped_total();
  }
}

Result<std::shared_ptr<LoadedBatch>> Loader::Next() {
  if (!pool_) {
    return Status::Usage("this loader serves its raw source only (opened with output_buffers 0)");
  }
  if (clock_start_ns_ == 0) clock_start_ns_ = SteadyNowNs();
  Result<std::shared_ptr<LoadedBatch>> b = [&]() -> Result<std::shared_ptr<LoadedBatch>> {
    if (!options_.worker || mixture()) return images_ ? MakeImages() : Make();
    if (!worker_) {
      // Decoded images: the stage keeps its own batches in flight; the worker's queue holds one
      // finished batch (the pool's buffer for it is BuildImages').
      const uint32_t depth = images_                       ? 1
                             : options_.output_buffers > 2 ? options_.output_buffers - 2
                                                           : 1;
      worker_ = std::make_unique<BatchWorker>(
          depth, [this] { return device_->BindThread(); },
          [this] {
            Result<std::shared_ptr<LoadedBatch>> made = images_ ? MakeImages() : Make();
            TakeSnapshot();
            return made;
          });
    }
    if (!started_) {
      worker_->Start();
      started_ = true;
    }
    Result<std::shared_ptr<LoadedBatch>> taken = worker_->Take(options_.poll);
    // The end of the epoch, or an error, is the last of the worker's run (it parks): the next
    // Next() starts it again, so that it asks the source again, as a Next() without it would.
    if (!taken.ok() || *taken == nullptr) started_ = false;
    return taken;
  }();
  if (b.ok() && *b != nullptr) {
    position_ = (*b)->position() + (*b)->span();
    ++batches_;
  }
  return b;
}

Result<std::shared_ptr<LoadedBatch>> Loader::MakeImages() {
  // The stage has written the batch (on a GPU: queued its copy) and set its place.
  RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> out, images_->Next());
  if (out) RF_RETURN_IF_ERROR(pool_->MarkReady(*out));
  return out;
}

Result<std::shared_ptr<LoadedBatch>> Loader::Make() {
  const uint64_t position = source_->position();
  RF_ASSIGN_OR_RETURN(const Batch stored, source_->Next());
  if (stored.n == 0) return std::shared_ptr<LoadedBatch>();
  if (records_) {
    const int64_t elems = stored.offsets[stored.n];
    RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> out,
                        pool_->Acquire(stored.n, stored.sample_dtype, {elems}));
    RF_RETURN_IF_ERROR(pool_->Reserve(*out, stored.values_bytes));
    int64_t* offsets = out->UseRecordOffsets();
    RF_RETURN_IF_ERROR(device_->PutRecords(stored, out->samples(), offsets, out->labels()));
    return HandOut(std::move(out), position);
  }
  std::vector<int64_t> shape;
  shape.reserve(sample_shape_.size() + 1);
  shape.push_back(stored.n);
  shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
  // The buffer is free of earlier readers from here on (its next writes are ordered after them);
  // the decode writes it, and the batch is ready once that has run.
  RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> out,
                      pool_->Acquire(stored.n, decode_.output, std::move(shape)));
  RF_RETURN_IF_ERROR(device_->Decode(stored, out->samples(), out->labels()));
  return HandOut(std::move(out), position);
}

Result<std::shared_ptr<LoadedBatch>> Loader::HandOut(std::shared_ptr<LoadedBatch> out,
                                                     uint64_t position) {
  RF_RETURN_IF_ERROR(pool_->MarkReady(*out));
  out->mutable_indices() = source_->batch_samples();
  out->SetPlace(epoch_, position);
  return out;
}

LoaderStats Loader::SourceStats() const {
  LoaderStats s;
  s.bytes_read = source_->bytes_read();
  s.bytes_delivered = source_->bytes_delivered();
  s.decode_busy_seconds = source_->decode_busy_seconds();
  s.decode_threads = source_->decode_threads();
  s.wait_seconds = source_->wait_seconds();
  s.reader_held_seconds = source_->reader_held_seconds();
  return s;
}

LoaderStats Loader::stats() const {
  LoaderStats s;
  if (worker_) {
    std::lock_guard<std::mutex> lock(snapshot_mu_);
    s = snapshot_;
    // The consumer's wait: for the worker's batches (its own waits for data are ahead of time).
    s.wait_seconds = static_cast<double>(worker_->wait_ns()) * 1e-9;
  } else {
    s = SourceStats();
  }
  s.seconds = clock_start_ns_ == 0 ? 0 : (SteadyNowNs() - clock_start_ns_) * 1e-9;
  s.batches = batches_;
  if (images_) {
    s.image_threads = images_->decoder().threads();
    s.image_busy_seconds = images_->decoder().busy_seconds();
    s.images_decoded = images_->decoder().records();
    s.image_wait_seconds = images_->decoder_wait_seconds();
    if (worker_) {
      std::lock_guard<std::mutex> lock(snapshot_mu_);
      s.records_skipped = skipped_total_snapshot_;
    } else {
      s.records_skipped = images_->skipped_total();
    }
  }
  return s;
}

std::string Loader::Describe() const {
  return device_->Describe() + ", " + source_->Describe() +
         (images_ ? ", " + images_->Describe() : std::string());
}

}  // namespace rf
