// ImageStage: the library loader's stage for image records (pipeline/loader.h, where
// ImageOptions::size is not 0). It turns the source's batches of JPEG bytes into batches of
// decoded images, running ahead of the consumer:
//
//   Next()   keep `depth` batches in flight: each the source's next batch, its records' bytes,
//            offsets and indices copied into a slot of the stage's (the source's memory is
//            valid only until its next call), its labels widened to int64, an output buffer
//            taken from the loader's pool, and handed to the ImageDecoder (pipeline/
//            image_decoder.h: worker threads decode while the consumer trains on the batch
//            before); then wait for the oldest, and hand it out.
//
// Crops are keyed by (seed, epoch, index) (core/resized_crop.h) as the source's batch names them
// for augmentation (core/batch.h's Batch::epoch and sample_indices): one dataset's batches by
// their epoch and the samples' global indices; a mixture's (pipeline/sources/mixed_source.h) by
// epoch 0 and e_i T + first_i + j, for sample j of dataset i in that dataset's epoch e_i. So the
// batches are the same whatever the depth, the thread count or where a run stopped and resumed.
//
// A mixture of datasets (the source's mixture_state() not null): the source's stream runs ahead
// of the batches handed out by those in flight, so each slot keeps the stream's state after its
// batch, and mixture_state() is the state after the last batch handed out (what a checkpoint
// records). StartEpoch after batches were decoded ahead (a restart mid-epoch, an error) rewinds
// the source to that state first (TrainingSource::RewindMixture), so the batches after a restart
// are those the uninterrupted run hands out.
//
// Bad records (a JPEG the decoder refuses: truncated, corrupt, too large): without
// skip_bad_records the first stops the stage with a Corruption naming the file, the chunk, the
// record's byte offset and the record (its number in its file and its global index), and the
// stage stays failed until StartEpoch. A mixture's record is named in its own dataset (its file,
// its index there) and by its index in the mixture. With it, the batch comes out without them (its
// samples moved up, n smaller; LoadedBatch::span() still the samples of the epoch it covers), and
// each is counted in the epoch's SkippedRecords.
//
// Memory: `depth` slots, each the records of one batch (grown to the largest batch met) and,
// where the decoder writes other memory than the pool's (the CPU decoder on a GPU loader), a
// host buffer of one decoded batch, copied to the batch's own; where the output is on a GPU,
// the batch's labels, made on the host and copied; the output buffers are the pool's.
//
// Thread safety: the loader's thread only (the decoder's threads are its own).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/dataset.h"
#include "pipeline/fields/field_split.h"
#include "pipeline/images/image_decoder.h"
#include "pipeline/output/loaded_batch.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/loader_stats.h"
#include "pipeline/output/output_pool.h"
#include "pipeline/sources/training_source.h"

namespace rf {

class ImageStage {
 public:
  // The stage over `source` (batches of image records of `datasets`: one dataset, or a
  // mixture's, whose batch indices count the datasets one after another; all outliving the
  // stage), decoding with `decoder` into buffers of `pool` on `device`, `depth` (>= 1) batches
  // ahead, batches of at most `batch` samples. `fields`: samples of several fields, whose image
  // field (fields->decoded()) is decoded; the others are laid out after the batch's images and
  // handed out beside them (LoadedBatch::fields()), the skipped samples' left out.
  static Result<std::unique_ptr<ImageStage>> Create(
      const std::vector<const Dataset*>& datasets, TrainingSource& source, LoaderDevice& device,
      std::shared_ptr<OutputPool> pool, std::unique_ptr<ImageDecoder> decoder, uint32_t batch,
      uint32_t depth, bool skip_bad_records, std::shared_ptr<const FieldSplit> fields = nullptr);
  // Waits for the batches in flight (their buffers go back to the pool), then stops the
  // decoder's threads.
  ~ImageStage();

  // Drops the batches decoded ahead and starts the source at (epoch, position) (a mixture's
  // rewound first to the last batch handed out, where batches were decoded ahead of it).
  Status StartEpoch(uint64_t epoch, uint64_t position);
  // A mixture: the stream's state after the last batch handed out (or where the source was put
  // last: Create, SourceRestored); null for one dataset.
  const MixtureState* mixture_state() const { return mixture_ ? &mark_ : nullptr; }
  // The caller has put the source elsewhere (MixedSource::Restore): the batches decoded ahead are
  // dropped and the source's state is the stage's.
  void SourceRestored();
  // The next decoded batch (not yet marked ready: the loader does), null at the epoch's end.
  Result<std::shared_ptr<LoadedBatch>> Next();
  // Where the next batch handed out starts in the epoch's order (the source's position is
  // ahead of it by the batches in flight).
  uint64_t position() const { return position_; }

  // The records skipped in the epoch StartEpoch began last (skip_bad_records).
  const SkippedRecords& skipped() const { return skipped_; }
  uint64_t skipped_total() const { return skipped_total_; }
  const ImageDecoder& decoder() const { return *decoder_; }
  // Next()'s wait for the decoder, since Create (any thread).
  double decoder_wait_seconds() const { return decoder_wait_ns_.load() * 1e-9; }
  std::string Describe() const;

  // The samples a skipped record report names, at most.
  static constexpr size_t kNamedSkips = 10;

 private:
  struct Slot {
    ImageJob job;
    std::vector<uint8_t> bytes;
    std::vector<int64_t> offsets;
    std::vector<uint64_t> indices;  // the batch's samples (LoadedBatch::indices)
    std::vector<uint64_t> keys;     // their crops' keys (the batch's sample_indices)
    MixtureState mixture;           // a mixture: the stream's state after this batch
    // Where staged_: the decoded samples and the labels, in pageable memory (LoaderDevice::
    // PutBytes has read it when it returns, so the slot is free again at once).
    std::vector<uint8_t> staging;
    std::vector<int64_t> labels;
    std::shared_ptr<LoadedBatch> out;
    uint64_t position = 0;
    // Samples of several fields: the batch's whole samples and their fields' spans, and at the
    // hand-out the kept ones and their other fields' area (pageable: PutBytes has read it when
    // it returns).
    std::vector<uint8_t> records;
    std::vector<format::FieldSpan> spans;
    std::vector<uint32_t> keep;
    std::vector<uint8_t> area;
    std::vector<FieldSplit::Part> parts;
  };

  ImageStage(const std::vector<const Dataset*>& datasets, TrainingSource& source,
             LoaderDevice& device, std::shared_ptr<OutputPool> pool,
             std::unique_ptr<ImageDecoder> decoder, bool skip_bad_records)
      : datasets_(datasets),
        source_(source),
        device_(device),
        pool_(std::move(pool)),
        decoder_(std::move(decoder)),
        skip_(skip_bad_records) {}
  // Submits the source's next batches until `depth` are in flight or the epoch's are all.
  Status Fill();
  // Waits for every batch in flight and frees its slot.
  void Drain();
  // The slot's batch without its bad records (skip_bad_records), or the first one's Status.
  Status Settle(Slot& s);
  // The Corruption of a bad record: the global sample index, its bytes, why.
  Status BadRecordStatus(uint64_t index, size_t bytes, const std::string& why) const;
  // Samples of several fields: the other fields of the slot's kept samples put after out's
  // images, and out's fields set.
  Status PutFields(Slot& s, LoadedBatch& out);
  // A batch of n decoded images' bytes, rounded up to FieldSplit::kFieldAlign.
  size_t ImagesBytes(uint32_t n) const;
  // "sample G (FILE chunk C record R)" for a report.
  std::string NameRecord(uint64_t index) const;
  // The dataset holding batch index `index` and the sample's index in it.
  std::pair<const Dataset*, uint64_t> Locate(uint64_t index) const;

  const std::vector<const Dataset*> datasets_;
  std::vector<uint64_t> firsts_;  // each dataset's first batch index
  TrainingSource& source_;
  LoaderDevice& device_;
  std::shared_ptr<OutputPool> pool_;
  std::unique_ptr<ImageDecoder> decoder_;
  std::shared_ptr<const FieldSplit> fields_;
  const bool skip_;
  bool staged_ = false;   // the decoder writes other memory than the pool's: slots' staging
  bool gpu_out_ = false;  // the decoder writes the pool's GPU memory: slots' labels
  size_t sample_bytes_ = 0;
  std::vector<int64_t> sample_shape_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_;
  std::deque<Slot*> in_flight_;  // submitted, oldest first
  bool source_done_ = false;     // the source's epoch has no batch left
  uint64_t position_ = 0;
  Status failure_;
  SkippedRecords skipped_;
  uint64_t skipped_total_ = 0;
  // A mixture: the stream's state after the last batch handed out, and whether the source has
  // made batches past it (decoded ahead, or failed).
  bool mixture_ = false;
  MixtureState mark_;
  bool ahead_ = false;
  std::atomic<uint64_t> decoder_wait_ns_{0};
};

}  // namespace rf
