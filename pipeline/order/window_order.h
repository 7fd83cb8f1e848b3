// WindowOrder: the order in which the streaming and managed modes visit a dataset's samples, built
// so that reads stay whole-chunk and sequential-ish while batches stay well mixed:
//
//   epoch e:  the chunks in a seeded permutation (EpochOrder(chunks, seed, e)), or in stored order
//             with shuffling off;
//   window w: the next W chunks of that permutation (the first window of an epoch: only
//             first_window_chunks, so the first batch need not wait for W chunks from disk),
//             resident together; their samples are
//             visited in a seeded permutation of their own (SeededPermutation(samples, {seed, e,
//             w, 1})), or in stored order with shuffling off;
//   the epoch visits window 0, then window 1, ...: every sample exactly once.
//
// The order is a function of the dataset's chunk layout, the seed, W and the epoch alone: not of
// ring sizes, queue depths, timing or the backend, so a resumed run recomputes it and continues at
// a stored position. Only one window's permutation is held at a time (W chunks' samples), so host
// memory does not grow with the dataset.
//
// Ranks (world_size N > 1: the data-parallel trainer's and the Python loader's partition). Rank r
// trains on its own part of every epoch and reads only the chunks it trains on, plus the epoch's
// shared chunks:
//
//   full chunks  those holding the largest sample count (a dataset's every chunk but its last);
//                F of them. Walking epoch e's permutation of ALL chunks, the i-th full chunk for
//                i < floor(F/N) * N is dealt to rank i mod N;
//   shared       the other F mod N full chunks and every chunk that is not full (at most N per
//                epoch for a dataset). Every rank reads all of them; their samples, concatenated
//                in permutation order into one stream of S samples, are split by rank: rank r
//                takes stream[j mod S] for j = r, r+N, r+2N, ... < ceil(S/N) * N;
//   the rank's epoch chunks are its dealt chunks in permutation order, then the shared ones.
//                Windows are formed over the dealt chunks as above and the shared chunks join the
//                LAST window (so every sample a window visits is in a resident chunk); within a
//                window the samples are shuffled as above, keyed {seed, e, w, 1, r}, a shared
//                chunk contributing only the rank's samples.
//
// So every rank's epoch holds EpochSampleCount() = floor(F/N) * full + ceil(S/N) samples, the
// same for every rank and every ordinary epoch, and over the ranks every sample comes exactly once
// per epoch except that ceil(S/N) * N - S (< N) of the ranks repeat one sample each (the padding:
// stream[0], stream[1], ... in turn; no rank sees a sample twice in one epoch). That is the least
// padding equal counts allow: the dealt part is a multiple of N, so the padding equals
// ceil(T/N) * N - T for the dataset's T samples, and it is zero exactly where N divides T.
// With world_size 1 every chunk is dealt to rank 0 and nothing is shared: the order is the one
// above, bit for bit.
//
// Balanced deals. Records of any size (JPEG images, documents) fill chunks to a byte size, so
// their chunks' sample counts vary and few are full: the deal above would share nearly every
// chunk, and every rank would read the whole dataset. Where it reads fewer chunks a rank (ties
// keep the deal above, so fixed-size datasets keep their order), the chunks are dealt balanced:
//   shared       the last S chunks of the epoch's permutation, S = C - D * N, where D = floor((C
//                - K) / N) and K is the fewest chunks whose smallest K hold N * (M + 1) samples,
//                M the largest chunk's (every chunk where the dataset holds fewer);
//   dealt        the first D * N, in rounds of N consecutive ones: the round's largest chunk to
//                the rank with the fewest dealt samples so far, the next largest to the next
//                (ties: the earlier chunk, the lower rank). D chunks each; the ranks' dealt
//                samples never differ by more than M;
//   the stream   the shared chunks' samples back to back in visiting order; the ranks take runs
//                of it in rank order, rank r as many as bring it to ceil(T/N) samples with its
//                dealt ones, less one where it pads. The tail's margin keeps every run's length
//                at least 0, and the runs cover the stream exactly;
//   padding      the same ceil(T/N) * N - T ranks as above (the last ones) repeat one sample
//                each: the one after their run (the next rank's first, so not one of their own).
// Windows are formed as above; a rank's windows' sample counts then differ from another's, its
// epoch's do not. Every rank reads its D chunks and the S shared: with 32,000 photographs in 333
// chunks of 94 to 100, 168 chunks a rank at N = 2 (the deal above: all 333).
//
// A resumed epoch (order.resumed.stretches not empty; pipeline/order/epoch_remainder.h builds it):
// epoch order.resumed.epoch was begun by earlier runs at other world sizes, the stretches, oldest
// first. Each rank of stretch 0 (world N0) took the first p0 samples of its ordinary order; what
// they left, rank 0's rest, then rank 1's, ..., without the padding repeats, is the list L1. Each
// later stretch k (world Nk) split L_k: with R = |L_k| and q = ceil(R / Nk), its rank j took
// L_k[j*q, min((j+1)*q, R)) padded with L_k[0], L_k[1], ... to q entries (each short rank's
// padding starts at L_k[0]), and trained the first p_k of them; what they left, in rank order and
// without padding, is L_{k+1}. This run is the next level: its rank takes its slice of the last
// list the same way, so every rank trains EpochSampleCount(order.resumed.epoch) = q samples, and
// over this run's ranks every sample no stretch trained comes exactly once (and so does one a
// stretch trained only as a padding repeat: its own entry is left), plus q * world_size - R (<
// world_size) repeats.
//   An entry keeps its place in its old window's shuffled order: the rank's epoch is a sequence
// of pieces, each a run of entries of one window of one rank of stretch 0, and each piece is a
// window of the resumed epoch, whose chunks are that old window's (read whole), or, for a piece
// that is only part of its old window, those its entries take samples from. Consecutive pieces
// of one old window are one window. So reads stay whole-chunk, and a rank reads the old windows
// its slice touches: about its share of the remaining chunks. Every other epoch is ordinary.
//
// EpochLayout: one epoch of this rank, its chunks in visiting order with its windows back to back
// (an ordinary epoch's windows are WindowStart/WindowChunks; a resumed epoch's are its pieces').
// WindowCursor walks one epoch of a WindowOrder sample by sample, holding one window's
// permutation at a time: the one walk both modes' sources make.
//
// Thread safety: a WindowOrder is immutable after construction; its methods may be called from
// any thread. A WindowCursor is used by one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/order_settings.h"
#include "pipeline/order/world_order.h"

namespace rf {

// The stretches a checkpoint of epoch `epoch` taken at (world_size, position) records, given the
// run's own order: where epoch == order.resumed.epoch and there are stretches, they plus
// {world_size, position}; otherwise just {world_size, position}.
std::vector<EpochStretch> StretchesAt(const OrderSettings& order, uint64_t epoch,
                                      uint32_t world_size, uint64_t position);

// Where a run of `world_size` ranks continues a checkpoint of epoch `epoch` taken at `position`
// by a run of `saved_world_size` ranks whose order had resumed that epoch with `stretches` (none:
// an ordinary epoch). At the saved world size: those stretches, at that position (the same order,
// the same place). At another: the saved run's stretch appended, at position 0 (this run's ranks
// share what no stretch trained), but where nothing of the epoch was trained (position 0, no
// stretches), which is an ordinary epoch at any world size. The one rule of `ringfeed train
// --resume` (src/train_config.h's ApplyCheckpoint) and the Python loader's load_state_dict.
struct ResumePoint {
  ResumedEpoch resumed;  // order.resumed for the continuing run
  uint64_t position = 0;
};
// A run's ranks: how many, and the machines they are in (OrderSettings::node_ranks; 0: the
// global partition). A plain count is a world of that many under the global partition. Two
// layouts that differ in either deal an epoch differently: "another world size" above means
// another layout.
struct RankLayout {
  RankLayout(uint32_t world = 1, uint32_t node = 0) : world_size(world), node_ranks(node) {}
  uint32_t world_size;
  uint32_t node_ranks;
  bool operator==(const RankLayout&) const = default;
};
ResumePoint ResumeAt(uint64_t epoch, std::vector<EpochStretch> stretches, RankLayout saved,
                     uint64_t position, RankLayout now);

class EpochRemainder;  // pipeline/order/epoch_remainder.h

// One epoch of one rank: its chunks in visiting order, windows back to back. Made by
// WindowOrder::Layout; 8 bytes per chunk the rank reads, and 8 per window.
class EpochLayout {
 public:
  EpochLayout() = default;  // epoch 0 with no windows

  uint64_t epoch() const { return epoch_; }
  bool resumed() const { return resumed_; }
  const std::vector<uint64_t>& chunks() const { return chunks_; }
  uint64_t window_count() const { return starts_.size() - 1; }
  // Window w's first chunk (an index into chunks(); chunks().size() from window_count() on) and
  // its chunk count (0 past the last window).
  uint64_t WindowStart(uint64_t w) const { return starts_[std::min(w, window_count())]; }
  uint32_t WindowChunks(uint64_t w) const {
    return w < window_count() ? static_cast<uint32_t>(starts_[w + 1] - starts_[w]) : 0;
  }

 private:
  friend class WindowOrder;
  uint64_t epoch_ = 0;
  bool resumed_ = false;
  std::vector<uint64_t> chunks_;
  std::vector<uint64_t> starts_ = {0};  // window w: chunks_[starts_[w] .. starts_[w + 1])
  RankShare share_;                     // an ordinary epoch's: the rank's part of the shared stream
};

class WindowOrder {
 public:
  // chunk_samples[g]: the samples of global chunk g, which holds samples first(g) .. first(g) +
  // chunk_samples[g] - 1 (chunks hold consecutive samples, in order). Of `order` it takes the
  // shuffle, W, the first window, the seed, the rank, the world size and the resumed epoch (the
  // batch size and drop_last are the sources'). A world_size of 0 counts as 1 and a rank past it
  // as the last one; a stretch's world_size of 0 as 1 and a position past its stretch's samples
  // per rank as that count (PipelineConfig::Validate and CheckStretches,
  // pipeline/order/epoch_remainder.h, refuse them).
  // `part`: null, every chunk; else a world of one over these global chunks only, ascending
  // (pipeline/order/world_order.h's part: packed sequences' machines under the node partition,
  // pipeline/sequences/sequence_plan.h).
  WindowOrder(std::vector<uint32_t> chunk_samples, const OrderSettings& order,
              std::shared_ptr<const std::vector<uint64_t>> part = nullptr);

  // The dataset's: every rank's sample and chunk numbers are global.
  uint64_t sample_count() const { return table_->sample_count(); }
  uint64_t dataset_chunk_count() const { return table_->samples.size(); }
  uint32_t rank() const { return rank_; }
  uint32_t world_size() const { return world_.world_size(); }

  // This rank's in an ordinary epoch (the same in every one): the chunks it reads (dealt, then
  // shared), the shared ones among them, and the samples it trains on (all of sample_count() with
  // world_size 1).
  uint64_t epoch_chunk_count() const { return world_.dealt() + world_.shared(); }
  // Whether the ranks' chunks are dealt balanced by samples (chunks of varied sample counts)
  // rather than round-robin among the full chunks (see the comment at the top).
  bool balanced() const { return world_.balanced(); }
  uint64_t shared_chunk_count() const { return world_.shared(); }
  uint64_t EpochSampleCount() const { return world_.RankSamples(); }
  // The samples this rank trains on in epoch `epoch`: EpochSampleCount() but in a resumed epoch.
  uint64_t EpochSampleCount(uint64_t epoch) const;
  // Whether `epoch` is the resumed one (order.resumed: stretches not empty, its epoch).
  bool IsResumed(uint64_t epoch) const;

  uint32_t window_chunks() const { return world_.window_chunks(); }
  // An ordinary epoch's windows: their count, window w's first chunk (an index into the epoch's
  // chunks) and its chunk count.
  uint64_t windows_per_epoch() const { return world_.windows(); }
  uint64_t WindowStart(uint64_t w) const { return world_.WindowStart(w); }
  uint32_t WindowChunks(uint64_t w) const { return world_.WindowChunks(w); }
  // The most chunks any window of any epoch holds (an ordinary epoch's last one, with the shared
  // chunks, may exceed W; a resumed epoch's are its stretch 0's windows).
  uint64_t max_window_chunks() const;
  // The most chunks the windows that `batch` consecutive samples of the resumed epoch touch hold
  // together (0 without a resumed epoch): its windows may be few samples each and many chunks,
  // and a batch holds every window it takes samples from.
  uint64_t ResumedBatchSpanChunks(uint32_t batch) const;

  // This rank's epoch: its chunks and windows. A resumed epoch's costs a deal of stretch 0's
  // epoch (8 bytes per dataset chunk, while it runs).
  EpochLayout Layout(uint64_t epoch) const;
  // This rank's chunks of the epoch, in visiting order (Layout(epoch).chunks()).
  std::vector<uint64_t> EpochChunks(uint64_t epoch) const { return Layout(epoch).chunks(); }
  // The chunks that the `machine_ranks` ranks of this rank's machine read in an ordinary epoch,
  // from their chunk `from` on, interleaved as they read them side by side: rank first + j's i-th
  // chunk at (i - from) * machine_ranks + j, where the machine holds the consecutive ranks first =
  // rank - rank % machine_ranks .. first + machine_ranks - 1 (as torchrun and mpirun place them).
  // What a node-local cache the machine's ranks share is told they will read (io/chunk_cache.h:
  // each rank's Belady then weighs the other ranks' next uses too). Nothing where the machine
  // holds one rank, machine_ranks does not divide the world, or `epoch` is the resumed one (its
  // chunks are an older world's): the rank's own chunks are its schedule then.
  std::optional<std::vector<uint64_t>> MachineChunks(uint64_t epoch, uint32_t machine_ranks,
                                                     uint64_t from = 0) const;

  // One sample of a window: which of the window's chunks (0 .. WindowChunks-1, in visiting order)
  // and which sample of that chunk.
  using Entry = WindowEntry;
  // Window w of an epoch's layout, in visiting order; and the samples this rank visits in it.
  std::vector<Entry> Window(const EpochLayout& layout, uint64_t window) const;
  uint64_t WindowSamples(const EpochLayout& layout, uint64_t window) const;

  uint64_t GlobalSample(uint64_t chunk, uint32_t sample) const {
    return table_->first[chunk] + sample;
  }

  // The window of the epoch that holds position `position` of its order (the last window for a
  // position at or past the epoch's end; 0 for an epoch without windows), and in *before the
  // samples of the windows before it.
  uint64_t WindowAt(const EpochLayout& layout, uint64_t position, uint64_t* before) const;

  // This rank's whole epoch as global sample indices (for --dump-order and tests: memory grows
  // with the dataset, so the training path never calls it).
  std::vector<uint64_t> EpochSamples(uint64_t epoch) const;

 private:
  std::shared_ptr<const ChunkTable> table_;
  WorldOrder world_;  // this run's world
  uint32_t rank_;
  std::shared_ptr<const EpochRemainder> remainder_;  // the resumed epoch, if any
};

// A position in one epoch's order. Start() puts it at a position; Take() hands out the samples
// after it one by one. The owner of the chunks decides when to move into the next window
// (AtWindowEnd, EnterWindow: the streaming source waits for the window's chunks first), or lets
// Step() move on by itself.
class WindowCursor {
 public:
  // `order` must outlive the cursor.
  explicit WindowCursor(const WindowOrder& order) : order_(&order) {}

  // Epoch `epoch`, at `position` in its order (0: its first sample): the window holding it is
  // entered and the samples before it skipped.
  void Start(uint64_t epoch, uint64_t position);
  // Moves to the start of window w of the current epoch.
  void EnterWindow(uint64_t w);

  // One sample: global chunk, the sample's index in it, and the chunk's place in its window.
  struct Sample {
    uint64_t chunk;
    uint32_t sample;
    uint32_t chunk_in_window;
  };
  bool AtWindowEnd() const { return entry_ == entries_.size(); }
  bool InLastWindow() const { return window_ + 1 >= layout_.window_count(); }
  // The next sample of the current window; only where !AtWindowEnd().
  Sample Take();
  // The next sample, entering the next window where this one is done; false past the epoch's end.
  bool Step(Sample* s);

  uint64_t epoch() const { return layout_.epoch(); }
  uint64_t window() const { return window_; }
  const EpochLayout& layout() const { return layout_; }
  const std::vector<uint64_t>& epoch_chunks() const { return layout_.chunks(); }

 private:
  const WindowOrder* order_;
  uint64_t window_ = 0;
  EpochLayout layout_;
  std::vector<WindowOrder::Entry> entries_;
  size_t entry_ = 0;
};

}  // namespace rf
