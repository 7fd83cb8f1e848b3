#include "pipeline/loader.h"

#include <algorithm>
#include <utility>

#include "core/augment_spec.h"
#include "core/clock.h"
#include "pipeline/batch_worker.h"
#include "pipeline/chunk_staging.h"
#include "pipeline/loader_device.h"
#include "pipeline/loader_options.h"
#include "pipeline/mixed_source.h"
#include "pipeline/mixture.h"
#include "pipeline/output_pool.h"
#include "pipeline/streaming_source.h"
#include "pipeline/window_order.h"

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
  // The worker first (it runs the source), then the source: its threads stop and its staging
  // drains; then the device's stream drains.
  worker_.reset();
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
  const OrderSettings& order = options.pipeline.order;
  if (order.drop_last) {
    // An epoch shorter than one batch would hand out nothing, every epoch.
    uint64_t per_rank = 0;
    if (mixture()) {
      std::vector<uint64_t> samples;
      for (const Dataset* d : datasets) samples.push_back(d->sample_count());
      OrderSettings ordinary = order;
      ordinary.resumed = {};
      RF_ASSIGN_OR_RETURN(per_rank,
                          MixtureEpochCount(MixtureSamples(samples, weights_), ordinary, 0));
    } else {
      per_rank = WindowOrder(dataset.ChunkSampleCounts(), order).EpochSampleCount();
    }
    if (per_rank < order.batch_size) {
      return Status::Usage("--drop-last with --batch-size " + std::to_string(order.batch_size) +
                           " drops every batch: an epoch holds " + std::to_string(per_rank) +
                           " samples" + (order.world_size > 1 ? " a rank" : "") +
                           "; leave --drop-last out or take a smaller batch");
    }
  }
  RF_ASSIGN_OR_RETURN(device_,
                      MakeLoaderDevice(options.pipeline.device, options.gpu, options.stream));
  gpu_device_ = device_->gpu();
  if (mixture()) {
    RF_RETURN_IF_ERROR(BuildMixture(options));
  } else if (options.pipeline.mode == PipelineMode::kManaged) {
    RF_ASSIGN_OR_RETURN(source_, device_->Managed(dataset, options.pipeline));
  } else {
    StreamingOptions so = StreamingOptionsFor(options.pipeline, options.epochs);
    // A ring whose chunks are copied to host staging (the host's, or records') is never read by
    // a GPU's copy engine: pinning it would only make the loader's start pay for it
    // (cudaHostRegister of ring_slots x the largest chunk, faulted in first).
    if (records_ || gpu_device_ < 0) so.pin = PinMode::kOff;
    // Records are gathered in host memory whatever the device (pipeline/chunk_staging.h), then
    // copied to it batch by batch: they are compact, and their sizes are known on the host.
    StagingFactory staging = device_->Staging(options.pipeline);
    if (records_) {
      staging = [](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
        RF_ASSIGN_OR_RETURN(auto s, HostChunkStaging::Create(l));
        return std::unique_ptr<ChunkStaging>(std::move(s));
      };
    }
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

Status Loader::Poll() const {
  if (worker_ && worker_->on_worker_thread()) {
    return worker_->stopping() ? Status::Aborted("the loader's worker was stopped") : Status::Ok();
  }
  return options_.poll ? options_.poll() : Status::Ok();
}

Status Loader::BuildMixture(const LoaderOptions& options) {
  // Each dataset's source is the one a single dataset's loader of these options makes: its own
  // staging (records gathered on the host), an endless read plan (its epochs are its own), its
  // own order. The mixture's gather reads every source's staging area, of one layout.
  const StagingFactory device_staging = device_->Staging(options.pipeline);
  const bool records = records_;
  MixedSource::SourceFactory make =
      [this, device_staging, records, options](
          size_t i, const OrderSettings& order) -> Result<std::unique_ptr<StreamingSource>> {
    PipelineConfig p = options.pipeline;
    p.order = order;
    StreamingOptions so = StreamingOptionsFor(p, /*epochs=*/0);
    so.poll = [this] { return Poll(); };
    StagingFactory staging = device_staging;
    if (records) {
      staging = [](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
        RF_ASSIGN_OR_RETURN(auto s, HostChunkStaging::Create(l));
        return std::unique_ptr<ChunkStaging>(std::move(s));
      };
    }
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

  return static_cast<MixedSource&>(*source_).Restore(s, resumed);
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
  RF_RETURN_IF_ERROR(source_->StartEpoch(epoch, position));
  epoch_ = epoch;
  epoch_samples_ = source_->epoch_samples();
  position_ = position;

  if (worker_) {
    std::lock_guard<std::mutex> lock(snapshot_mu_);
    snapshot_ = SourceStats();
  }
  return Status::Ok();
}

Result<std::shared_ptr<LoadedBatch>> Loader::Next() {
  if (!pool_) {
    return Status::Usage("this loader serves its raw source only (opened with output_buffers 0)");
  }
  if (clock_start_ns_ == 0) clock_start_ns_ = SteadyNowNs();
  Result<std::shared_ptr<LoadedBatch>> b = [&]() -> Result<std::shared_ptr<LoadedBatch>> {
    if (!options_.worker || mixture()) return Make();
    if (!worker_) {
      const uint32_t depth = options_.output_buffers > 2 ? options_.output_buffers - 2 : 1;
      worker_ = std::make_unique<BatchWorker>(
          depth, [this] { return device_->BindThread(); },
          [this] {
            Result<std::shared_ptr<LoadedBatch>> made = Make();
            std::lock_guard<std::mutex> lock(snapshot_mu_);
            snapshot_ = SourceStats();
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
    position_ = (*b)->position() + (*b)->size();
    ++batches_;
  }
  return b;
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
    out->records_ = true;
    RF_RETURN_IF_ERROR(device_->PutRecords(stored, out->samples(), out->offsets_, out->labels()));
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
  out->indices_ = source_->batch_samples();
  out->epoch_ = epoch_;
  out->position_ = position;
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
  return s;
}

std::string Loader::Describe() const { return device_->Describe() + ", " + source_->Describe(); }

}  // namespace rf
