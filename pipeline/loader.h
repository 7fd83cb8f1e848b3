// Loader: the library's one public interface to the data pipeline. `ringfeed train`, the Python
// package and every data-parallel rank open a dataset through it; there is no second pipeline.
//
//   Loader::Open(options)           opens the dataset and builds the pipeline once: the epoch
//                                   order (WindowOrder, this rank's part), the source (streaming:
//                                   io_uring reader -> pinned ring -> staging on the GPU or in
//                                   host memory; managed: one cudaMallocManaged allocation) and,
//                                   for decoded batches, the decoder and the output pool
//   StartEpoch(epoch, position)     where the next batch comes from (position: the index in the
//                                   epoch's order of the next sample; 0 for a fresh epoch)
//   Next()                          the next batch, decoded into the output dtype and layout, in
//                                   a buffer of its own; null at the epoch's end
//   source()                        the raw level: the TrainingSource itself, batches in the
//                                   stored dtype valid until its next call (`ringfeed train`'s
//                                   backends decode for themselves); for decoded images, a
//                                   TrainingSource of Next()'s batches
//
// image records (io/format.h's bytes records of that media type) are decoded into images of
// options.image.size (pipeline/images/image_stage.h: decode threads ahead of the consumer, the crop
// a function of the seed, the epoch and the sample's index; a mixture's batches too, each sample
// keyed as pipeline/sources/mixed_source.h says), unless that size is 0: then they come
// out as stored, as any records of any size do.
//
// A decoded batch (LoadedBatch) owns its buffer through a shared_ptr: it stays valid, unchanged,
// for as long as any holder keeps it, whatever the loader does meanwhile, even after the loader is
// destroyed. When the last holder lets go, the buffer goes back to the loader's pool.
//
// Memory, fixed at Open whatever the dataset's size: the source's (StreamingSource: the ring,
// ring_slots x the largest chunk, pinned where a GPU is; the staging area, three shuffle windows
// of chunks, on the GPU or in host memory), the decoder's, and output_buffers decoded batches. A
// consumer that holds more than output_buffers batches at once makes the pool allocate one more
// buffer per extra batch held; buffers are never freed before the loader and its batches are.
//
// GPU streams and events (device == kCuda). The loader has one stream of its own (or uses the
// caller's: options.stream). On it, Next() queues the gather of the batch from the staging slots,
// the decode into the batch's buffer, and records the batch's `ready` event; the host does not
// wait. A consumer on another stream calls LoadedBatch::WaitOn(stream): that stream waits for
// `ready` (cudaStreamWaitEvent, no host synchronization) and is remembered, so that when the batch
// is released the loader's stream waits for the work that stream had queued by then before the
// buffer is written again. Memory the consumer reads on streams it did not name is the consumer's
// business (as with any DLPack producer).
//
// Errors: a read error, a checksum mismatch or a bad position comes back as a Status naming file,
// chunk and offset; after a data error the loader stays failed until StartEpoch restarts it.
//
// Thread safety: one thread at a time calls a Loader's methods (the Python binding holds the
// loader's lock). LoadedBatch's methods and its release may run on any thread. With
// options.worker, the loader's worker thread runs the source and the decode between the calls;
// StartEpoch stops it (dropping the batches it made ahead) and the next Next() restarts it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/output/batch_decode.h"
#include "pipeline/output/loaded_batch.h"
#include "pipeline/output/loader_stats.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/plan/loader_plan.h"
#include "pipeline/sequences/sequence_state.h"
#include "pipeline/sources/pipeline_config.h"
#include "pipeline/sources/training_source.h"

namespace rf {

class OutputPool;    // pipeline/output/output_pool.h
class LoaderDevice;  // pipeline/output/loader_device.h
class BatchWorker;   // pipeline/batch_worker.h
class BatchMaker;    // pipeline/makers/batch_maker.h

class Loader {
 public:
  // Opens options.pipeline.data and builds the pipeline. Usage errors for options that do not fit
  // each other or the dataset (ResolveLoader, pipeline/plan/loader_plan.h: an option the kind of
  // batch does nothing with, a decode the dataset's dtype cannot take, managed mode where it cannot
  // serve; device cuda without a GPU; stretches the dataset cannot have had: PipelineConfig::
  // ValidateFor); the dataset's own errors as Dataset::Open gives them.
  static Result<std::unique_ptr<Loader>> Open(const LoaderOptions& options);
  // The same over a dataset the caller has opened; it must outlive the loader.
  static Result<std::unique_ptr<Loader>> Create(const Dataset& dataset,
                                                const LoaderOptions& options);
  // A weighted mixture of `datasets` (options.pipeline.weights, one a dataset; each dataset
  // outliving the loader): pipeline/sources/mixed_source.h, starting where options.pipeline.mixture
  // says. Usage errors besides Create's: weights NormalizeWeights refuses, datasets whose samples
  // differ (CheckMixable), managed mode, a start state that cannot be of these datasets. One
  // dataset without weights is Create's loader.
  static Result<std::unique_ptr<Loader>> Create(const std::vector<const Dataset*>& datasets,
                                                const LoaderOptions& options);
  // Stops the pipeline's threads and reads and waits for the work queued on its stream. Batches
  // handed out stay valid.
  ~Loader();

  const Dataset& dataset() const { return *datasets_[0]; }  // a mixture's first
  // A mixture's datasets (one for a single dataset), and its normalized weights (none).
  const std::vector<const Dataset*>& datasets() const { return datasets_; }
  const std::vector<double>& weights() const { return plan_.weights; }
  bool mixture() const { return plan_.mixture(); }
  const LoaderOptions& options() const { return options_; }
  // What ResolveLoader decided: the kind of batch, its output shape and dtype, the decode.
  const LoaderPlan& plan() const { return plan_; }
  bool on_gpu() const { return gpu_device_ >= 0; }
  int gpu_device() const { return gpu_device_; }
  // The output shape of one sample ({C, H, W}, {H, W, C}, or the stored shape).
  // Records of any size (tokens, bytes): empty, each record being 1-D of its own length.
  const std::vector<int64_t>& sample_shape() const { return plan_.sample_shape; }

  // Samples and batches for this rank of the epoch StartEpoch began last (epoch 0 before any):
  // the same for every rank, and for every epoch but a resumed one
  // (options.pipeline.order.resumed).
  // Packed sequences (a maker of its own sources): 0.
  uint64_t epoch_samples() const {
    return worker_ ? epoch_samples_ : source_ ? source_->epoch_samples() : 0;
  }
  uint64_t batches_per_epoch() const;

  Status StartEpoch(uint64_t epoch, uint64_t position);
  // The next decoded batch of the epoch started last; null once the epoch is over.
  Result<std::shared_ptr<LoadedBatch>> Next();
  uint64_t epoch() const { return epoch_; }
  // Where the batches handed out leave off in the epoch (the worker, or the image stage, may
  // have made more).
  uint64_t position() const;

  // The samples each rank trains on in epoch `epoch` for a loader of these options whose order
  // resumed `resumed` instead (a state dict's, checked: Usage for stretches the data cannot have
  // had), less a partial last batch with drop_last; known without opening one.
  Result<uint64_t> EpochSamplesFor(uint64_t epoch, const ResumedEpoch& resumed) const;
  // A mixture: where its stream stands after the last batch handed out (null for one dataset),
  // and continuing `s` (at this world size: ContinueMixture) with `resumed` as the mixture
  // epoch's stretches; the next StartEpoch names the epoch and position (MixedSource::Restore).
  // (A mixture's batches are made on the caller's thread, whatever options.worker says: its
  // state and a restart's place are the source's, which the worker would have moved ahead. A
  // mixture of decoded images is decoded ahead by the image stage, which keeps the state of each
  // batch and rewinds the source to the last one handed out: pipeline/images/image_stage.h.)
  const MixtureState* mixture_state() const;
  Status RestoreMixture(const MixtureState& s, const ResumedEpoch& resumed);
  // Packed sequences (plan().kind kSequences): where the stream stands after the last batch
  // handed out (none for the other kinds), and continuing `s` at this loader's world size
  // (SequenceLoader::Restore, pipeline/sequences/sequence_loader.h); dataset i's sequences an
  // epoch.
  std::optional<SequenceState> sequence_state() const;
  Status RestoreSequences(const SequenceState& s);
  uint64_t epoch_sequences(size_t dataset) const;

  // The raw level (stored-dtype batches; `ringfeed train`). Not to be mixed with Next(). For
  // decoded images, Next()'s batches (in the output dtype and layout, labels int64, each valid
  // until the next call) as a TrainingSource. None for packed sequences (their maker reads
  // sources of its own): not to be called for them.
  TrainingSource& source() { return decoded_source_ ? *decoded_source_ : *source_; }
  // The bad image records skipped in the epoch StartEpoch began last (skip_bad_records).
  SkippedRecords skipped() const;

  LoaderStats stats() const;
  // One line: the mode, device and memory.
  std::string Describe() const;

 private:
  Loader() = default;
  Status Build(const std::vector<const Dataset*>& datasets, const LoaderOptions& options);
  // The source the plan stages: a mixture's, the managed one, or one dataset's StreamingSource.
  Status BuildSource();
  // A mixture's source, each dataset's StreamingSource made as a single dataset's would be.
  Status BuildMixture();
  // A batch the maker made (its writes queued), marked ready.
  Result<std::shared_ptr<LoadedBatch>> Make();
  // The source's figures, read on the thread that runs it (stats() reads them there without the
  // worker, from the worker's last snapshot with it).
  LoaderStats SourceStats() const;
  // With the worker: snapshot_ and the maker's skipped records, read on the thread that runs
  // the source (the worker's, or StartEpoch's while the worker is stopped).
  void TakeSnapshot();
  // The source's poll: options.poll on the consumer's thread; on the worker's, whether Stop()
  // waits for it.
  Status Poll() const;

  std::vector<std::unique_ptr<Dataset>> owned_datasets_;
  std::vector<const Dataset*> datasets_;
  LoaderOptions options_;
  LoaderPlan plan_;
  int gpu_device_ = -1;
  std::unique_ptr<LoaderDevice> device_;
  std::shared_ptr<OutputPool> pool_;
  // Declared after device_ (whose stream it uses), so destroyed first.
  std::unique_ptr<TrainingSource> source_;
  // The plan's kind of batch over source_ and pool_, destroyed before source_ (~Loader); and for
  // a maker whose batches are not the source's (decoded images), Next() as a TrainingSource.
  std::unique_ptr<BatchMaker> maker_;
  std::unique_ptr<TrainingSource> decoded_source_;
  uint64_t epoch_ = 0;
  // With the worker (which runs the source meanwhile): epoch_'s samples as the source said at
  // StartEpoch, and the place the batches handed out leave off. Without it, the source's own
  // (raw-level callers move it themselves).
  uint64_t epoch_samples_ = 0;
  uint64_t position_ = 0;
  uint64_t batches_ = 0;
  uint64_t clock_start_ns_ = 0;  // the first StartEpoch or Next: stats()'s clock
  // options.worker: made at the first Next(), destroyed before the source and pool it uses
  // (declared last). `started_`: producing since the last StartEpoch. `snapshot_`: SourceStats()
  // as of the worker's last batch, under snapshot_mu_; so are the maker's skipped records (the
  // worker runs the maker).
  bool started_ = false;
  mutable std::mutex snapshot_mu_;
  LoaderStats snapshot_;
  SkippedRecords skipped_snapshot_;
  uint64_t skipped_total_snapshot_ = 0;
  std::unique_ptr<BatchWorker> worker_;
};

}  // namespace rf
