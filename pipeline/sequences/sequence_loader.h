// SequenceLoader: packed token sequences for language-model training, from one token dataset or
// a weighted mixture of several (ringfeed.Loader(data, sequence_length=L[, weights=...])). It is
// the engine of its kind of batch behind the one Loader (pipeline/loader.h; its maker,
// pipeline/makers/sequence_maker.cc, makes it on the Loader's device), not a loader of its own.
//
// Each source is read by a StreamingSource of its own (pipeline/sources/streaming_source.h, in host
// memory, in the order of a world of one), and its epochs are SequencePlan's
// (pipeline/sequences/sequence_plan.h): the documents packed end to end, each followed by the
// end-of-document token where one is given, cut into rows of L + 1 tokens, the epoch's rows split
// over the ranks in contiguous stretches of the stream so that each rank reads about 1/W of the
// chunks. A batch is batch_size rows; a single source's epoch ends with a smaller batch (its rows
// per rank, q, is the same on every rank), a mixture's batches are always full and its sources'
// epochs roll over within them, each source keeping its own epoch counter.
//
// The mixture (pipeline/sources/mixture.h's rule, the one sample mixtures follow too). Row k of
// every rank (k counts this rank's rows since the start) comes from the source i that maximizes w_i
// (k + 1) - drawn_i(k) (drawn_i: the rows source i gave so far; ties go to the first source from
// seed mod n on): a pure function of (weights, seed, k), computed as the rows go with no index. Its
// deficit stays within (-1, n - 1): after every k, |drawn_i - w_i k| < n - 1 (the test checks the
// tighter figure it measures).
//
// A batch (LoadedBatch::views(), in host memory or on the GPU as the loader's device says):
//   tokens        [B, L + 1]  int64 or int32 (the dtype option); a row's tokens past its length
//                             are pad_token
//   lengths       [B]         int64: the valid tokens of each row (L + 1 but in the epoch's
//                             partial last sequence, 0 in a rank's empty row)
//   cu_seqlens    [S + 1]     int32: the document segments of the inputs tokens[:, :-1] flattened
//                             (B x L positions): a segment starts at each row's start and at
//                             each document's first token within a row; a row's padding past
//                             its inputs' valid tokens is a segment of its own. For
//                             variable-length attention (flash attention's varlen)
//   position_ids  [B, L]      int64: each input token's place in its segment (0 at a segment's
//                             start)
//
// State. state() is where the next batch comes from: the rows handed out per rank, each
// source's draws, and each source's epoch, rows of the epoch handed out per rank, the world
// size its list was split over and the list (empty: the whole epoch). It holds what every rank
// needs (all ranks are at the same place), so rank 0's is the run's. Restore() continues it at
// this loader's world size: the same rows at the same world size, and at another the sequences
// of each source's interrupted epoch that no rank took, split over the new ranks.
//
// Threads. A worker thread of the loader's own packs batches ahead (prefetch of them, the
// loader's output buffers) and, on a GPU, a putter thread puts them on the device (the copy and
// the kernel queued on the loader's stream, the batch marked ready and handed on), so that the
// CUDA calls and the consumer's wake-up are off the packing thread; Next() takes the oldest, so
// the packing and the copy overlap the consumer's work. state() is where the batches handed out
// leave off, never the worker's place. One thread at a time calls a SequenceLoader's methods;
// batches as for Loader.
//
// The packing. Each token is copied once on the host, from where the source's staging holds its
// decompressed chunk (its records read in place: TrainingSource::NextInPlace) to its place in the
// batch. The worker walks the stream and notes the batch as pieces (a run of a record's ids, or
// an end-of-document token, and where it goes), the lengths and the cu_seqlens; the pieces are
// then copied by the worker and pack_threads - 1 helpers (a batch split by rows where it is large
// enough to pay for waking them), before the source lets its records go. On the host the batch is
// packed whole in its own buffer: ids widened, pad, position_ids. On a GPU it is packed in the
// ids' own width (uint16 where every source's ids and the end-of-document token fit, else int32 or
// int64) in one of LoaderDevice::kPutSlots pinned slots (one is filled while the others' copies
// run), copied over, and a kernel on the loader's stream widens the ids, pads the rows and writes
// position_ids from the cu_seqlens (LoaderDevice::PutSequencesAsync): 2 bytes a token over PCIe
// instead of 16. The batches are the same, bit for bit, either way.
//
// Its parts: each dataset and its stream is a SequenceSource (sequence_source.h), the copies a
// SequencePacker (sequence_packer.h), the state's values sequence_state.h's; the worker and the
// putter are sequence_loader_threads.cc's.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "pipeline/output/loaded_batch.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/loader_stats.h"
#include "pipeline/sequences/sequence_plan.h"
#include "pipeline/sequences/sequence_state.h"
#include "pipeline/sources/mixture.h"
#include "pipeline/sources/pipeline_config.h"
#include "pipeline/stage/host_buffer.h"

namespace rf {

class OutputPool;
class LoaderDevice;
class SequencePacker;  // pipeline/sequences/sequence_packer.h: the batches' copies
class SequenceSource;  // pipeline/sequences/sequence_source.h: one dataset and its stream

// Packed token sequences: sequence_length 0 leaves them off (LoaderOptions::sequence).
struct SequenceOptions {
  uint32_t length = 0;     // L: rows of L + 1 tokens
  int64_t eod_token = -1;  // appended after each document; -1: none
  int64_t pad_token = 0;   // fills a row past its length
  bool pad = false;        // packing "pad": one document a row (else "concat")
  // Threads that copy a batch's tokens (the loader's worker and helpers); 0: DefaultPackThreads()
  // (pipeline/sequences/sequence_loader.h).
  uint32_t pack_threads = 0;
  // Tests and benchmarks, no option: on the host too, pack the ids narrow and widen them in a
  // second pass (WidenSequencesOnHost, what a GPU's kernel does), so that the GPU's way of packing
  // runs, and is checked against the host's, on a machine without a GPU.
  bool pack_narrow = false;
};

// What a SequenceLoader takes (LoaderOptions's part of it: SequenceSpecFor, pipeline/
// loader_options.h): the pipeline's config (the order: batch_size rows, seed, shuffle, rank and
// world size; the reader; the device), the packing, the tokens' dtype (int64 or int32), the
// batches kept ready, the epochs the read plan covers, the GPU and stream, and the caller's poll
// (about every 100 ms of a wait in Next(), on the caller's thread).
struct SequenceSpec {
  PipelineConfig pipeline;
  SequenceOptions sequence;
  DType dtype = DType::kInt64;
  uint32_t output_buffers = 4;
  uint64_t epochs = 0;
  int gpu = -1;
  void* stream = nullptr;
  std::function<Status()> poll;
};

// Threads that copy a batch's tokens where pack_threads is 0: a quarter of the cores this
// process may use, shared with the other ranks on the machine, 1 to 4.
uint32_t DefaultPackThreads();

class SequenceLoader {
 public:
  // `datasets` (one or more, each outliving the loader) with `options` (options.sequence set,
  // options.pipeline's order: batch_size rows, seed, shuffle, rank and world size). Usage errors
  // for what SequencePlan::Make refuses, an output dtype other than int64 or int32, an
  // eod_token or pad_token the int32 output cannot hold, weights NormalizeWeights refuses,
  // several datasets without weights.
  // `device`: the one to pack and put the batches on (the Loader's, outliving this loader), or
  // null for one of its own, made as spec says.
  static Result<std::unique_ptr<SequenceLoader>> Create(const std::vector<const Dataset*>& datasets,
                                                        const SequenceSpec& spec,
                                                        LoaderDevice* device = nullptr);
  ~SequenceLoader();

  // The next batch; null where a single source's epoch ends (the next call begins the next).
  Result<std::shared_ptr<LoadedBatch>> Next();

  SequenceState state() const;
  // Continues `s` (from state() of a loader over the same data and options but maybe another
  // world size). Usage error for a state no such loader reaches: of another number of sources,
  // draws that are not its rows (a mixture's: not the rule's, CheckMixtureDraws), an epoch past
  // kMaxEpoch, a list or position that cannot be of these sources' epochs (one source's off a
  // batch boundary; a mixture's dataset at its epoch's end: it moves on at once). Next() refuses
  // to pack a batch past 2^64 - 1 rows.
  Status Restore(const SequenceState& s);

  // Stops the worker (before the sources it uses go).
  void Stop();

  // One source: its sequences per epoch (all ranks), and batches per epoch for each rank of the
  // epoch the next batch comes from.
  uint64_t epoch_sequences(size_t source = 0) const;
  uint64_t batches_per_epoch() const;
  bool on_gpu() const;
  int gpu_device() const;
  // The sources' loaders' reads, summed; wait_seconds: Next() waiting for a packed batch (the
  // consumer's real wait); seconds since the first Next(); batches handed out.
  LoaderStats stats() const;
  std::string Describe() const;

 private:
  SequenceLoader() = default;
  // A batch the worker packed, for its put (the host's: done; a GPU's: the copy and the kernel).
  struct Packed {
    Status error;                      // the packing failed: handed out as the batch
    bool end = false;                  // a single source's epoch ended: a null batch
    uint32_t slot = 0;                 // a GPU's: the pinned slot it is packed in
    bool slotted = false;              // it is (packed_ counted it)
    std::shared_ptr<LoadedBatch> out;  // the host's: the batch, packed whole
    uint64_t rows = 0, segments = 0, epoch = 0, position = 0;
    SequenceState after;  // the sources' state after it
    LoaderStats stats;    // the sources' loaders' as the worker saw them
  };
  // The next batch packed into *p (the worker's thread), on a GPU into the pinned slot of
  // packed_, once the putter has put that slot's last batch and its copy is done.
  Status Pack(Packed* p);
  // The batch of `p` put on the device (on a GPU the putter's thread): null at a single
  // source's epoch end.
  Result<std::shared_ptr<LoadedBatch>> Put(Packed& p);
  // Sets the batch's views: its tokens, lengths, cu_seqlens (segments + 1) and position_ids.
  void SetViews(LoadedBatch& b, uint64_t rows, uint64_t segments) const;
  SequenceState StateNow() const;  // the sources' own place (the worker's)
  // Rows a rank of source i's epoch `g` (its list split over its world).
  uint64_t RowsOf(const SequenceSourceState& g, size_t i) const;
  void Start();  // the worker (and the putter), from the sources' place
  void Work();
  void PutLoop();
  // The put batch `p` into made_, with what it says of the state (mu_ held).
  bool Deliver(Packed& p, Result<std::shared_ptr<LoadedBatch>> b);

  // A batch the worker made, with the state after it.
  struct Made {
    Result<std::shared_ptr<LoadedBatch>> batch;
    SequenceState after;
  };

  SequenceSpec options_;
  std::vector<double> weights_;
  std::vector<std::unique_ptr<SequenceSource>> sources_;
  std::unique_ptr<LoaderDevice> owned_device_;  // made here where Create was given none
  LoaderDevice* device_ = nullptr;
  std::shared_ptr<OutputPool> pool_;
  uint32_t batch_ = 0, length_ = 0;
  DType dtype_ = DType::kInt64;
  uint64_t rows_ = 0;
  std::vector<uint64_t> drawn_;
  bool ended_ = false;  // one source: its epoch's last batch went out, the next Pack() ends it
  LoaderStats SourceStats() const;  // the sources' loaders' (the worker's thread)

  mutable std::mutex mu_;
  uint64_t handed_batches_ = 0;   // under mu_ from here on
  LoaderStats stats_;             // the sources', as the worker last saw them
  double wait_seconds_ = 0;       // Next() waiting for a packed batch
  uint64_t clock_start_ns_ = 0;   // the first Next()
  std::condition_variable cv_;    // made_ has a batch
  std::condition_variable room_;  // made_ and to_put_ have room, or putted_ moved on
  std::condition_variable to_put_cv_;
  std::deque<Made> made_;      // put ahead, oldest first
  std::deque<Packed> to_put_;  // a GPU's: packed, for the putter
  uint64_t putted_ = 0;        // a GPU's: slots' batches the putter put since Start
  uint32_t putting_ = 0;       // a GPU's: 1 while the putter puts one
  bool stop_ = false;          // the worker and the putter are to stop
  bool failed_ = false;        // the worker stopped at an error (in made_)
  SequenceState handed_;       // after the last batch Next() handed out
  std::thread worker_, putter_;
  // On a GPU, batches are packed narrow in pinned memory, in each of kPutSlots slots in turn
  // (the worker fills one while the copies of the others run), and widened on the device
  // (narrow_bytes_ a slot); on the host, whole in their own buffers.
  bool narrow_on_host_ = false;
  DType narrow_ = DType::kUInt16;
  size_t narrow_bytes_ = 0;
  HostBuffer host_[LoaderDevice::kPutSlots];
  uint64_t packed_ = 0;                     // the worker's: batches packed since Start
  std::unique_ptr<SequencePacker> packer_;  // the worker's
  std::vector<size_t> row_segments_;
  std::vector<uint32_t> starts_;
};

}  // namespace rf
