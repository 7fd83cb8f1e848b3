#include "pipeline/loader.h"

#include <algorithm>
#include <utility>

#include "core/clock.h"
#include "pipeline/batch_worker.h"
#include "pipeline/makers/makers.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/make_loader_device.h"
#include "pipeline/output/output_pool.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sources/mixed_source.h"
#include "pipeline/sources/mixture.h"
#include "pipeline/sources/streaming_source.h"
#include "pipeline/stage/chunk_staging.h"

namespace rf {
namespace {

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

Result<std::unique_ptr<Loader>> Loader::Open(const LoaderOptions& options) {
  RF_RETURN_IF_ERROR(options.pipeline.Validate());
  std::unique_ptr<Loader> l(new Loader);
  RF_ASSIGN_OR_RETURN(const std::vector<std::string> paths, options.pipeline.DataPaths());
  std::vector<const Dataset*> datasets;
  for (const std::string& path : paths) {
    RF_ASSIGN_OR_RETURN(Dataset d,
                        OpenDataset(options.pipeline, path, static_cast<uint32_t>(paths.size())));
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
  // The worker first (it runs the maker), the maker (an image stage's decode threads write the
  // pool's buffers and it reads the source), then the source: its threads stop and its staging
  // drains; then the device's stream drains.
  decoded_source_.reset();
  worker_.reset();
  maker_.reset();
  source_.reset();
  if (device_) (void)device_->Drain();
}

Status Loader::Build(const std::vector<const Dataset*>& datasets, const LoaderOptions& options) {
  datasets_ = datasets;
  options_ = options;
  RF_ASSIGN_OR_RETURN(plan_, ResolveLoader(options, datasets));
  options_.output = plan_.output_options;
  RF_ASSIGN_OR_RETURN(device_,
                      MakeLoaderDevice(options.pipeline.device, options.gpu, options.stream));
  gpu_device_ = device_->gpu();
  if (plan_.staged) RF_RETURN_IF_ERROR(BuildSource());
  const MakerParts parts{plan_, options_, datasets_, source_.get(), *device_};
  RF_ASSIGN_OR_RETURN(maker_, MakeBatchMaker(parts, &pool_));
  if (maker_->decodes_records())
    decoded_source_ = std::make_unique<DecodedImageSource>(*this, *source_);
  epoch_samples_ = epoch_samples();
  return Status::Ok();
}

Status Loader::BuildSource() {
  if (plan_.mixture()) return BuildMixture();
  if (options_.pipeline.mode == PipelineMode::kManaged) {
    RF_ASSIGN_OR_RETURN(source_, device_->Managed(*datasets_[0], options_.pipeline));
    return Status::Ok();
  }
  StreamingOptions so = StreamingOptionsFor(options_.pipeline, options_.epochs);
  // A ring whose chunks are copied to host staging (the host's, or the plan's host staging) is
  // never read by a GPU's copy engine: pinning it would only make the loader's start pay for it
  // (cudaHostRegister of ring_slots x the largest chunk, faulted in first).
  if (plan_.host_staging || gpu_device_ < 0) so.pin = PinMode::kOff;
  // Records and images are gathered in host memory whatever the device (pipeline/stage/
  // chunk_staging.h), then copied to it or decoded batch by batch: they are compact, and their
  // sizes are known on the host.
  const StagingFactory staging =
      plan_.host_staging ? HostStaging() : device_->Staging(options_.pipeline);
  so.poll = [this] { return Poll(); };
  RF_ASSIGN_OR_RETURN(auto s, StreamingSource::Create(*datasets_[0], so, staging));
  source_ = std::move(s);
  return Status::Ok();
}

uint64_t Loader::position() const {
  if (worker_) return position_;
  return maker_->position();
}

SkippedRecords Loader::skipped() const {
  if (!worker_) return maker_->skipped(epoch_);
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  return skipped_snapshot_;
}

Status Loader::Poll() const {
  if (worker_ && worker_->on_worker_thread()) {
    return worker_->stopping() ? Status::Aborted("the loader's worker was stopped") : Status::Ok();
  }
  return options_.poll ? options_.poll() : Status::Ok();
}

Status Loader::BuildMixture() {
  // Each dataset's source is the one a single dataset's loader of these options makes: its own
  // staging (records and decoded images gathered on the host, from a ring left unpinned), an
  // endless read plan (its epochs are its own), its own order. The mixture's gather reads every
  // source's staging area, of one layout.
  const LoaderOptions& options = options_;
  const StagingFactory staging =
      plan_.host_staging ? HostStaging() : device_->Staging(options.pipeline);
  const bool unpinned = plan_.host_staging || gpu_device_ < 0;
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
  RF_ASSIGN_OR_RETURN(auto m, MixedSource::Create(datasets_, plan_.weights, options.pipeline.order,
                                                  options.pipeline.mixture, std::move(make)));
  source_ = std::move(m);
  return Status::Ok();
}

Result<uint64_t> Loader::EpochSamplesFor(uint64_t epoch, const ResumedEpoch& resumed) const {
  PipelineConfig p = options_.pipeline;
  p.order.resumed = resumed;
  if (!mixture()) return p.EpochSamplesFor(datasets_[0]->ChunkSampleCounts(), epoch);
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
  maker_->SourceRestored();
  return Status::Ok();
}

const MixtureState* Loader::mixture_state() const { return maker_->mixture_state(); }

std::optional<SequenceState> Loader::sequence_state() const { return maker_->sequence_state(); }

Status Loader::RestoreSequences(const SequenceState& s) { return maker_->RestoreSequences(s); }

uint64_t Loader::epoch_sequences(size_t dataset) const { return maker_->epoch_sequences(dataset); }

uint64_t Loader::batches_per_epoch() const {
  if (!source_) return maker_->epoch_batches();
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
  RF_RETURN_IF_ERROR(maker_->StartEpoch(epoch, position));
  epoch_ = epoch;
  epoch_samples_ = source_ ? source_->epoch_samples() : 0;
  position_ = position;

  if (worker_) TakeSnapshot();
  return Status::Ok();
}

void Loader::TakeSnapshot() {
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  snapshot_ = SourceStats();
  skipped_snapshot_ = maker_->skipped(epoch_);
  skipped_total_snapshot_ = maker_->skipped_total();
}

Result<std::shared_ptr<LoadedBatch>> Loader::Next() {
  if (!plan_.decoded) {
    return Status::Usage("this loader serves its raw source only (opened with output_buffers 0)");
  }
  if (clock_start_ns_ == 0) clock_start_ns_ = SteadyNowNs();
  Result<std::shared_ptr<LoadedBatch>> b = [&]() -> Result<std::shared_ptr<LoadedBatch>> {
    // A mixture's batches, and those of a maker with threads of its own, on this thread.
    if (!options_.worker || mixture() || maker_->runs_ahead()) return Make();
    if (!worker_) {
      worker_ = std::make_unique<BatchWorker>(
          maker_->WorkerDepth(options_.output_buffers), [this] { return device_->BindThread(); },
          [this] {
            Result<std::shared_ptr<LoadedBatch>> made = Make();
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

Result<std::shared_ptr<LoadedBatch>> Loader::Make() {
  RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> out, maker_->Make(epoch_));
  if (out && !maker_->runs_ahead()) RF_RETURN_IF_ERROR(pool_->MarkReady(*out));
  return out;
}

LoaderStats Loader::SourceStats() const {
  LoaderStats s;
  if (!source_) return s;  // a maker of its own sources adds its figures (AddStats)
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
  maker_->AddStats(&s);
  if (worker_) {
    std::lock_guard<std::mutex> lock(snapshot_mu_);
    s.records_skipped = skipped_total_snapshot_;
  } else {
    s.records_skipped = maker_->skipped_total();
  }
  return s;
}

std::string Loader::Describe() const {
  if (!source_) return maker_->Describe();  // packed sequences: the device and their sources
  return device_->Describe() + ", " + source_->Describe() + maker_->Describe();
}

}  // namespace rf
