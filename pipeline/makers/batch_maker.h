// BatchMaker: how one kind of batch (pipeline/plan/loader_plan.h's BatchKind) is made from the
// loader's source, behind the Loader (pipeline/loader.h), which keeps the worker, the stats and
// the hand-out. Each kind's maker is one small class (pipeline/makers/*_maker.cc), made by the
// kind's row of pipeline/makers/makers.h's table from what the Loader built for it (MakerParts).
//
// Make() makes the next batch on the calling thread (the consumer's, or the loader's worker), in
// a buffer of the loader's pool: its writes queued on the loader's device (on a GPU, its stream),
// its place (epoch, position) and sample indices set. The Loader then marks it ready and hands it
// out. A maker reads its source, which outlives it (the Loader owns both; the maker is destroyed
// first).
//
// Thread safety: one thread at a time calls a maker's methods (the Loader's caller, or its
// worker while the caller waits); stats() and skipped() may be read on that thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "pipeline/output/loaded_batch.h"
#include "pipeline/output/loader_stats.h"
#include "pipeline/sequences/sequence_state.h"
#include "pipeline/sources/training_source.h"

namespace rf {

class BatchMaker {
 public:
  virtual ~BatchMaker() = default;

  // Where the next batch comes from (position: the index in the epoch's order of its first
  // sample); batches made ahead are dropped.
  virtual Status StartEpoch(uint64_t epoch, uint64_t position) = 0;
  // The next batch, its writes queued (not yet marked ready); null at the epoch's end.
  virtual Result<std::shared_ptr<LoadedBatch>> Make(uint64_t epoch) = 0;
  // Where the next batch Make() hands on starts in the epoch's order.
  virtual uint64_t position() const = 0;
  // A mixture: the stream's state after the last batch made (null for one dataset).
  virtual const MixtureState* mixture_state() const = 0;
  // The source's state was put elsewhere (a mixture's Restore): what was made ahead is dropped.
  virtual void SourceRestored() {}
  // Batches the loader's worker may keep ready ahead of the consumer, of `output_buffers`.
  virtual uint32_t WorkerDepth(uint32_t output_buffers) const {
    return output_buffers > 2 ? output_buffers - 2 : 1;
  }
  // Whether Next()'s batches are other than the source's (decoded images): the Loader's
  // source() then serves them instead of the stored records.
  virtual bool decodes_records() const { return false; }
  // The bad records skipped in the epoch `epoch` (skip_bad_records; none by default), and in all.
  virtual SkippedRecords skipped(uint64_t epoch) const { return SkippedRecords{epoch, 0, {}}; }
  virtual uint64_t skipped_total() const { return 0; }
  // The maker's own figures added to `s` (the decoder's; a maker of its own sources: all of
  // them), and its part of Describe().
  virtual void AddStats(LoaderStats* /*s*/) const {}
  virtual std::string Describe() const { return std::string(); }

  // A maker that runs threads of its own ahead of the consumer (packed sequences: the packing
  // worker and the putter), whose batches are ready when Make hands them on: the Loader's worker
  // and its marking them ready are left out.
  virtual bool runs_ahead() const { return false; }
  // Packed sequences: where the stream stands after the last batch made (none for the other
  // kinds), continuing `s` (at this loader's world size), and the batches of an epoch of one
  // dataset's (0: none, a mixture's) for a maker of its own sources.
  virtual std::optional<SequenceState> sequence_state() const { return std::nullopt; }
  virtual Status RestoreSequences(const SequenceState& /*s*/) {
    return Status::Usage("a packed sequences state: this loader makes no packed sequences");
  }
  virtual uint64_t epoch_batches() const { return 0; }
  // Packed sequences: dataset i's sequences in an epoch (all ranks); 0 for the other kinds.
  virtual uint64_t epoch_sequences(size_t /*dataset*/) const { return 0; }
};

}  // namespace rf
