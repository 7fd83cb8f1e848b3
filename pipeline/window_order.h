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
// same for every rank and every epoch, and over the ranks every sample comes exactly once per
// epoch except that ceil(S/N) * N - S (< N) of the ranks repeat one sample each (the padding:
// stream[0], stream[1], ... in turn; no rank sees a sample twice in one epoch). That is the least
// padding equal counts allow: the dealt part is a multiple of N, so the padding equals
// ceil(T/N) * N - T for the dataset's T samples, and it is zero exactly where N divides T.
// With world_size 1 every chunk is dealt to rank 0 and nothing is shared: the order is the one
// above, bit for bit.
//
// WindowCursor walks one epoch of a WindowOrder sample by sample, holding one window's
// permutation at a time: the one walk both modes' sources make.
//
// Thread safety: a WindowOrder is immutable after construction; its methods may be called from
// any thread. A WindowCursor is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rf {

// One stretch of an epoch trained at one world size: each of its world_size ranks took the first
// `position` samples of its part.
struct EpochStretch {
  uint32_t world_size = 1;
  uint64_t position = 0;
};

struct WindowOrderOptions {
  bool shuffle = true;
  uint32_t window_chunks = 64;       // W
  uint32_t first_window_chunks = 8;  // each epoch's first window (at most W)
  uint64_t seed = 0;
  uint32_t rank = 0;        // this rank, < world_size
  uint32_t world_size = 1;  // N: ranks sharing each epoch (1: the whole epoch is this one's)
  // The epoch `resumed_epoch` was begun by earlier runs at other world sizes: `stretches`.
  uint64_t resumed_epoch = 0;
  std::vector<EpochStretch> stretches;
};

class WindowOrder {
 public:
  // chunk_samples[g]: the samples of global chunk g, which holds samples first(g) .. first(g) +
  // chunk_samples[g] - 1 (chunks hold consecutive samples, in order). A world_size of 0 counts
  // as 1 and a rank past it as the last one (PipelineConfig::Validate refuses both).
  WindowOrder(std::vector<uint32_t> chunk_samples, const WindowOrderOptions& options);

  // The dataset's: every rank's sample and chunk numbers are global.
  uint64_t sample_count() const { return first_.back(); }
  uint64_t dataset_chunk_count() const { return samples_.size(); }
  uint32_t rank() const { return rank_; }
  uint32_t world_size() const { return world_; }

  // This rank's, the same in every epoch: the chunks it reads (dealt, then shared), the shared
  // ones among them, and the samples it trains on (all of sample_count() with world_size 1).
  uint64_t epoch_chunk_count() const { return dealt_ + shared_; }
  uint64_t shared_chunk_count() const { return shared_; }
  uint64_t EpochSampleCount() const;

  uint32_t window_chunks() const { return window_; }
  uint64_t windows_per_epoch() const;
  // The most chunks any window holds (the last one, with the shared chunks, may exceed W).
  uint64_t max_window_chunks() const;
  // Window w's first chunk (an index into the epoch's chunks) and its chunk count.
  uint64_t WindowStart(uint64_t w) const { return w == 0 ? 0 : first_window_ + (w - 1) * window_; }
  uint32_t WindowChunks(uint64_t w) const;

  // This rank's chunks of the epoch, in visiting order (epoch_chunk_count() of them).
  std::vector<uint64_t> EpochChunks(uint64_t epoch) const;

  // One sample of a window: which of the window's chunks (0 .. WindowChunks-1, in visiting order)
  // and which sample of that chunk.
  struct Entry {
    uint32_t chunk_in_window;
    uint32_t sample;
  };
  // Window w of an epoch whose chunks are `epoch_chunks` (from EpochChunks), in visiting order.
  std::vector<Entry> Window(const std::vector<uint64_t>& epoch_chunks, uint64_t epoch,
                            uint64_t window) const;
  // Samples this rank visits in window w.
  uint64_t WindowSamples(const std::vector<uint64_t>& epoch_chunks, uint64_t window) const;

  uint64_t GlobalSample(uint64_t chunk, uint32_t sample) const { return first_[chunk] + sample; }

  // The window of the epoch that holds position `position` of its order (the last window for a
  // position at or past the epoch's end), and in *before the samples of the windows before it.
  uint64_t WindowAt(const std::vector<uint64_t>& epoch_chunks, uint64_t position,
                    uint64_t* before) const;

  // This rank's whole epoch as global sample indices (for --dump-order and tests: memory grows
  // with the dataset, so the training path never calls it).
  std::vector<uint64_t> EpochSamples(uint64_t epoch) const;

 private:
  bool IsFull(uint64_t chunk) const { return samples_[chunk] == full_samples_; }

  std::vector<uint32_t> samples_;
  std::vector<uint64_t> first_;  // first_[g]: global index of chunk g's first sample; back(): total
  uint32_t window_, first_window_;
  bool shuffle_;
  uint64_t seed_;
  uint32_t rank_, world_;
  uint32_t full_samples_ = 0;    // the largest chunk's samples
  uint64_t dealt_total_ = 0;     // full chunks dealt out per epoch, over all ranks
  uint64_t dealt_ = 0;           // chunks dealt to each rank per epoch
  uint64_t shared_ = 0;          // shared chunks per epoch
  uint64_t shared_samples_ = 0;  // S: their samples
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
  bool InLastWindow() const { return window_ + 1 >= order_->windows_per_epoch(); }
  // The next sample of the current window; only where !AtWindowEnd().
  Sample Take();
  // The next sample, entering the next window where this one is done; false past the epoch's end.
  bool Step(Sample* s);

  uint64_t epoch() const { return epoch_; }
  uint64_t window() const { return window_; }
  const std::vector<uint64_t>& epoch_chunks() const { return epoch_chunks_; }

 private:
  const WindowOrder* order_;
  uint64_t epoch_ = 0, window_ = 0;
  std::vector<uint64_t> epoch_chunks_;
  std::vector<WindowOrder::Entry> entries_;
  size_t entry_ = 0;
};

}  // namespace rf
