// EpochRemainder: WindowOrder's resumed epoch for one rank of this run
// (pipeline/order/window_order.h states the semantics): what the stretches of earlier runs at other
// world sizes left of the epoch, split over this run's ranks.
//
// Built once, at WindowOrder's construction, in O(dataset chunks + ranks of every stretch) time
// besides the padding lookups below, and without a list of samples: the lists L_k of the levels are
// kept as runs of index ranges (one per rank of the level below), and only this rank's slice is
// mapped down to stretch 0's windows, where it becomes pieces: runs of entries of one window of one
// old rank. Kept: the pieces (this rank's windows of the epoch: old rank, old window, entry ranges)
// and the samples per rank of each level. The pieces' chunks and entries are made when the epoch is
// walked (Chunks, Window), from a deal of stretch 0's epoch, as an ordinary epoch's are.
//
// A piece that is part of its old window (at the edges of a slice, where a stretch stopped, or
// where a padding entry is left out) holds only the chunks its entries take samples from, in the
// window's order: a few entries of a large old window read a few chunks, and a batch over many
// such pieces holds few staging slots. Those pieces' entries are looked at once, here (one window
// permutation each), and their old window's chunk list is kept (O(W) each; they are at most a few
// per rank of every stretch).
//
// The padding an old rank of stretch 0 holds (its share of the shared stream wraps) is at a place
// of its last window that only that window's permutation tells; it is found for the old ranks
// whose last window this rank's slice reaches, and for every old rank where p0 falls inside the
// last window (the remainder's size depends on it then): one window's permutation each.
//
// Thread safety: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/order_settings.h"
#include "core/status.h"
#include "pipeline/order/world_order.h"

namespace rf {

// Usage errors for stretches that cannot have happened on this dataset: a stretch's world_size of
// 0, or a position past the samples per rank of its stretch ("stretch 2 of epoch 4 (world size
// 3): position 900 is past its 812 samples per rank"). OK without stretches.
Status CheckStretches(const std::vector<uint32_t>& chunk_samples, const OrderSettings& order);

class EpochRemainder {
 public:
  // order.resumed.stretches must not be empty; world sizes of 0 count as 1, positions past their
  // stretch's samples per rank as that count.
  EpochRemainder(std::shared_ptr<const ChunkTable> table, const OrderSettings& order);

  uint64_t epoch() const { return epoch_; }
  // Samples per rank of each level: [0] stretch 0's (its ordinary epoch), [k] stretch k's, and
  // back() this run's (samples()).
  const std::vector<uint64_t>& level_samples() const { return level_samples_; }
  uint64_t samples() const { return level_samples_.back(); }

  // This rank's windows of the epoch (pieces), in visiting order; a window's chunks are its old
  // window's, or for part of one, those its entries take samples from.
  uint64_t window_count() const { return pieces_.size(); }
  uint64_t WindowSamples(uint64_t w) const { return pieces_[w].samples; }
  uint32_t WindowChunks(uint64_t w) const;
  uint64_t max_window_chunks() const { return max_window_chunks_; }
  // The most chunks the windows that `batch` consecutive samples touch hold together.
  uint64_t BatchSpanChunks(uint32_t batch) const;

  // The windows' chunks, back to back (each window's: its old window's, whole), and where each
  // window starts (window_count() + 1 entries, the last chunks->size()).
  void Chunks(std::vector<uint64_t>* chunks, std::vector<uint64_t>* starts) const;
  // Window w's entries in visiting order; `window_chunks` points at its WindowChunks(w) chunks.
  std::vector<WindowEntry> Window(const uint64_t* window_chunks, uint64_t w) const;

 private:
  class Builder;
  // A window of the resumed epoch: entry ranges of one window of one rank of stretch 0.
  struct Piece {
    uint32_t old_rank;
    uint64_t old_window;
    uint64_t samples;
    size_t first_range, ranges;  // into ranges_
    size_t part;                 // into parts_, or kWhole: the whole old window's chunks
  };
  // The chunks of a piece that is part of its old window.
  struct Part {
    std::vector<uint64_t> window;  // the old window's chunks
    std::vector<uint32_t> kept;    // places in it of the chunks the piece reads, ascending
  };
  static constexpr size_t kWhole = ~size_t{0};

  WorldOrder old_;  // stretch 0's world
  uint64_t epoch_;
  std::vector<RankShare> shares_;  // each old rank's part of stretch 0's shared stream
  std::vector<uint64_t> level_samples_;
  std::vector<Piece> pieces_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // [begin, end) of an old window's entries
  std::vector<Part> parts_;
  uint64_t max_window_chunks_ = 0;
};

}  // namespace rf
