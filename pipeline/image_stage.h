// ImageStage: the library loader's stage for image/jpeg records (pipeline/loader.h, where
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
// Crops are keyed by (seed, epoch, global sample index) (core/resized_crop.h), so the batches
// are the same whatever the depth, the thread count or where a run stopped and resumed.
//
// Bad records (a JPEG the decoder refuses: truncated, corrupt, too large): without
// skip_bad_records the first stops the stage with a Corruption naming the file, the chunk, the
// record's byte offset and the record (its number in its file and its global index), and the
// stage stays failed until StartEpoch. With it, the batch comes out without them (its samples
// moved up, n smaller; LoadedBatch::span() still the samples of the epoch it covers), and each
// is counted in the epoch's SkippedRecords.
//
// Memory: `depth` slots, each the records of one batch (grown to the largest batch met) and,
// where the decoder writes other memory than the pool's (the CPU decoder on a GPU loader), a
// host buffer of one decoded batch, copied to the batch's own; where the output is on a GPU,
// the batch's labels, made on the host and copied; the output buffers are the pool's.
//
// Thread safety: the loader's thread only (the decoder's threads are its own).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "pipeline/image_decoder.h"
#include "pipeline/loader.h"
#include "pipeline/loader_device.h"
#include "pipeline/output_pool.h"
#include "pipeline/training_source.h"

namespace rf {

class ImageStage {
 public:
  // The stage over `source` (batches of image/jpeg records of `dataset`, both outliving the
  // stage), decoding with `decoder` into buffers of `pool` on `device`, `depth` (>= 1) batches
  // ahead, batches of at most `batch` samples.
  static Result<std::unique_ptr<ImageStage>> Create(const Dataset& dataset, TrainingSource& source,
                                                    LoaderDevice& device,
                                                    std::shared_ptr<OutputPool> pool,
                                                    std::unique_ptr<ImageDecoder> decoder,
                                                    uint32_t batch, uint32_t depth,
                                                    bool skip_bad_records);
  // Waits for the batches in flight (their buffers go back to the pool), then stops the
  // decoder's threads.
  ~ImageStage();

  // Drops the batches decoded ahead and starts the source at (epoch, position).
  Status StartEpoch(uint64_t epoch, uint64_t position);
  // The next decoded batch (not yet marked ready: the loader does), null at the epoch's end.
  Result<std::shared_ptr<LoadedBatch>> Next();
  // Where the next batch handed out starts in the epoch's order (the source's position is
  // ahead of it by the batches in flight).
  uint64_t position() const { return position_; }

  // The records skipped in the epoch StartEpoch began last (skip_bad_records).
  const SkippedRecords& skipped() const { return skipped_; }
  uint64_t skipped_total() const { return skipped_total_; }
  const ImageDecoder& decoder() const { return *decoder_; }
  std::string Describe() const;

  // The samples a skipped record report names, at most.
  static constexpr size_t kNamedSkips = 10;

 private:
  struct Slot {
    ImageJob job;
    std::vector<uint8_t> bytes;
    std::vector<int64_t> offsets;
    std::vector<uint64_t> indices;
    // Where staged_: the decoded samples and the labels, in pageable memory (LoaderDevice::
    // PutBytes has read it when it returns, so the slot is free again at once).
    std::vector<uint8_t> staging;
    std::vector<int64_t> labels;
    std::shared_ptr<LoadedBatch> out;
    uint64_t position = 0;
  };

  ImageStage(const Dataset& dataset, TrainingSource& source, LoaderDevice& device,
             std::shared_ptr<OutputPool> pool, std::unique_ptr<ImageDecoder> decoder,
             bool skip_bad_records)
      : dataset_(dataset),
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
  // "sample G (FILE chunk C record R)" for a report.
  std::string NameRecord(uint64_t index) const;

  const Dataset& dataset_;
  TrainingSource& source_;
  LoaderDevice& device_;
  std::shared_ptr<OutputPool> pool_;
  std::unique_ptr<ImageDecoder> decoder_;
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
};

}  // namespace rf
