// StreamingSource: the streaming mode's BatchSource. Datasets of any size train through fixed
// host and device memory, every stage on its own resource at the same time:
//
//   feeder thread   io_uring O_DIRECT reads of whole chunks, in the run's chunk plan, into free
//                   slots of the host ring (pinned where a GPU is), checksums verified
//                   (pipeline/stage/chunk_feeder.h)
//   copy thread     ring slot ready -> a free staging slot -> ChunkStaging::CopyIn (a copy stream
//                   on the GPU); the ring slot goes back to the reader when the copy has read it
//                   (pipeline/stage/chunk_copier.h)
//   compute thread  (the caller of Next) window w's chunks copied -> AwaitCopy (the compute
//                   stream waits on the copy events, the host does not) -> Gather the batch's
//                   samples from the staging slots -> the caller's TrainStep; a window's slots are
//                   retired once the batches that read them are queued
//
// The order is WindowOrder's (pipeline/order/window_order.h): a function of the seed, W and the
// epoch only. The chunk plan is every epoch from the start to the last one, back to back, so the
// next epoch's first window is read while the current epoch ends; the feeder thread makes each
// epoch's chunk list when its reads reach that epoch. With epochs == 0 (a library loader that does
// not know how many epochs its caller will run) the plan has no end: StartEpoch(e + 1, 0) after
// epoch e continues it without a restart, whatever e. The cost: when the caller stops, the
// reader has read up to ring_slots + StagingSlots() chunks ahead that nothing trains on (a fixed
// count ends the plan with its last epoch instead).
//
// Ranks (options.order.rank / world_size): the source delivers this rank's part of every epoch
// and its plan holds this rank's chunks only (WindowOrder::EpochChunks: its dealt chunks plus the
// epoch's shared ones), so each rank reads about 1/N of the dataset. sample_count() stays the
// dataset's; epoch_samples() is the rank's (the same on every rank) of the epoch StartEpoch
// began. A resumed epoch (options.order.resumed) is this rank's share of what earlier runs at
// other world sizes left of it: its plan holds the windows of those runs' ranks that its share
// comes from, whole, each once (pipeline/order/window_order.h); the epochs after it are ordinary.
//
// Memory, fixed at Create and independent of the dataset's size: the host ring (ring_slots x
// the largest chunk), the staging area (StagingSlots(): three windows plus a batch's worth of
// chunks, or more for a resumed epoch's windows), one batch, one window's order; and two epochs'
// chunk lists, the compute thread's and the feeder's (8 bytes per dataset chunk each).
//
// Failures: a read error or a checksum mismatch fails the ring with a Status naming file, chunk
// and offset; Next() returns it. Nothing waits forever: the destructor fails the ring and wakes
// every thread.
//
// Thread safety: one thread calls the BatchSource methods; the feeder and copy threads are the
// source's own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "io/dataset.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/training_source.h"
#include "pipeline/stage/chunk_copier.h"
#include "pipeline/stage/chunk_feeder.h"
#include "pipeline/stage/chunk_staging.h"
#include "pipeline/stage/slot_ring.h"

namespace rf {

struct StreamingOptions {
  OrderSettings order;       // the batch size, drop_last and the epoch order
  uint32_t ring_slots = 16;  // host ring slots, one chunk each
  PinMode pin = PinMode::kAuto;
  FeederOptions feeder;
  // The plan reads up to (not including) this epoch; 0: no end (StartEpoch takes any epoch below
  // kMaxEpoch).
  uint64_t epochs = 1;
  // The ranks of this machine that share a remote dataset's node-local cache, consecutive, this
  // one among them (RemoteConfig::machine_ranks): the cache is told their reads interleaved
  // (WindowOrder::MachineChunks; the cache's schedule, 16 bytes an entry, then holds
  // machine_ranks times this rank's chunks of two epochs); 1: this rank's own.
  uint32_t machine_ranks = 1;
  // With order.world_size 1: null, every chunk; else only these global chunks, ascending (a
  // machine's part of packed sequences under the node partition: WindowOrder's part).
  std::shared_ptr<const std::vector<uint64_t>> part;
  // Called about every ChunkCopier::kPollInterval on the consumer's thread while StartEpoch or
  // Next waits for data; a status other than OK ends the wait and the call returns it (the Python
  // binding raises KeyboardInterrupt this way). The source is then where a failed read leaves it:
  // StartEpoch restarts it.
  std::function<Status()> poll;
};

using StagingFactory =
    std::function<Result<std::unique_ptr<ChunkStaging>>(const StagingLayout& layout)>;
// Staging in host memory (HostChunkStaging): the host's, and that of every source whose batches
// are gathered on the host whatever the device (records of any size, decoded images).
StagingFactory HostStaging();

class StreamingSource final : public TrainingSource {
 public:
  // Fails for a batch size of 0, fewer than 2 ring slots, an empty dataset, or what the staging
  // factory refuses.
  static Result<std::unique_ptr<StreamingSource>> Create(const Dataset& dataset,
                                                         const StreamingOptions& options,
                                                         const StagingFactory& make_staging);
  ~StreamingSource() override;

  // Staging slots for a layout: three of its largest windows (the last one holds the shared
  // chunks too), plus the chunks one batch can span beyond them; and at least, with a resumed
  // epoch, the chunks of the windows one batch of it can take samples from plus one window more
  // (WindowOrder::ResumedBatchSpanChunks: fewer and a batch would wait for chunks no slot is free
  // for).
  static uint32_t StagingSlots(const WindowOrder& order, uint32_t batch_size);

  uint64_t sample_count() const override { return order_.sample_count(); }
  // Of the epoch StartEpoch began last (epoch 0 before any).
  uint64_t epoch_samples() const override;
  // Continues the plan where the last epoch ended, or restarts the pipeline at (epoch, position).
  // InvalidArgument for an epoch at or past a fixed options.epochs, or for a position past that
  // epoch's samples.
  Status StartEpoch(uint64_t epoch, uint64_t position) override;
  Result<Batch> Next() override;
  // Host staging only (the records' and the host device's): the batch's samples in the staging
  // area, as Next() would gather them. batch_samples() is not kept by it.
  Result<uint32_t> NextInPlace(std::vector<HostSpan>* out) override;
  uint64_t position() const override { return position_; }

  // A mixture's part of a batch (pipeline/sources/mixed_source.h): up to `max` (at most the batch
  // size) of the epoch's next samples, as refs into the staging area (offsets from
  // staging().area()) and their global indices, not gathered: the mixture gathers the samples of
  // all its datasets into one batch. 0 at the epoch's end. With DeferRetire, the windows the refs
  // read, and those of an epoch that StartEpoch continued past, stay resident until Release(),
  // which the caller calls once the batch that reads them is queued (Next retires them itself, at
  // its next call).
  Result<uint32_t> Take(uint32_t max, SampleRef* refs, uint64_t* indices);
  void DeferRetire() { defer_retire_ = true; }
  Status Release() { return RetirePending(); }

  const std::vector<uint64_t>& batch_samples() const override { return batch_samples_; }
  uint64_t bytes_read() const override;
  uint64_t bytes_delivered() const override;
  double decode_busy_seconds() const override;
  uint32_t decode_threads() const override;
  double wait_seconds() const override { return wait_ns_ * 1e-9; }
  double reader_held_seconds() const override;
  std::string Describe() const override;

  const WindowOrder& order() const { return order_; }
  ChunkStaging& staging() { return *staging_; }

 private:
  StreamingSource(const Dataset& d, const StreamingOptions& o, WindowOrder order);
  Status Restart(uint64_t epoch, uint64_t position);
  void Stop();
  // Waits until window w of the cursor's epoch is copied in, and makes its staging slots the
  // ones batches are gathered from (the cursor is already in it or enters it here).
  Status AwaitWindow(uint64_t w);
  Status RetirePending();
  // The epoch's next n samples (n at most what is left of it) as refs and global indices
  // (indices null: none).
  Status TakeRefs(uint32_t n, SampleRef* refs, uint64_t* indices);
  // The plan position of a chunk of a window of the cursor's epoch.
  uint64_t SeqOf(uint64_t window, uint32_t chunk_in_window) const;
  uint64_t EpochSamplesOf(uint64_t epoch) const;

  const Dataset& dataset_;
  StreamingOptions options_;
  WindowOrder order_;
  std::unique_ptr<ChunkStaging> staging_;

  // The stages of the current plan. The copier is declared after the ring it reads.
  std::unique_ptr<SlotRing> ring_;
  bool ring_fed_ = false;  // a feeder has run on ring_
  std::unique_ptr<ChunkFeeder> feeder_;
  std::unique_ptr<ChunkCopier> copier_;
  uint64_t bytes_before_ = 0;    // read by feeders of earlier plans
  FeederStats stats_before_;     // and their other figures (stage_threads: the last one's)
  uint64_t held_before_ns_ = 0;  // the reader's waits for a free slot in earlier rings

  // The compute thread's place.
  WindowCursor cursor_;
  uint64_t epoch_ = 0, position_ = 0;
  bool started_ = false;
  Status failure_;  // a wait for data failed (a read error, a poll): Next returns it until Restart
  // Plan positions: the plan starts plan_skipped_ chunks into its first epoch, and the cursor's
  // epoch starts epoch_offset_ chunks after that epoch's first chunk.
  uint64_t plan_skipped_ = 0, epoch_offset_ = 0;
  std::vector<uint32_t> window_slots_;  // staging slot of each chunk of the current window
  std::vector<uint32_t> retire_;        // slots to retire at the next call (or Release)
  bool defer_retire_ = false;           // Take and StartEpoch leave them to Release
  std::vector<SampleRef> refs_;
  std::vector<uint64_t> batch_samples_;
  uint64_t wait_ns_ = 0;
};

}  // namespace rf
