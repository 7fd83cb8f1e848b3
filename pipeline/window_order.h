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
// WindowCursor walks one epoch of a WindowOrder sample by sample, holding one window's
// permutation at a time: the one walk both modes' sources make.
//
// Thread safety: a WindowOrder is immutable after construction; Window() may be called from any
// thread. A WindowCursor is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rf {

struct WindowOrderOptions {
  bool shuffle = true;
  uint32_t window_chunks = 64;       // W
  uint32_t first_window_chunks = 8;  // each epoch's first window (at most W)
  uint64_t seed = 0;
};

class WindowOrder {
 public:
  // chunk_samples[g]: the samples of global chunk g, which holds samples first(g) .. first(g) +
  // chunk_samples[g] - 1 (chunks hold consecutive samples, in order).
  WindowOrder(std::vector<uint32_t> chunk_samples, const WindowOrderOptions& options);

  uint64_t sample_count() const { return first_.back(); }
  uint64_t chunk_count() const { return samples_.size(); }
  uint32_t window_chunks() const { return window_; }
  uint64_t windows_per_epoch() const;
  // Window w's first chunk (an index into the epoch's chunks) and its chunk count.
  uint64_t WindowStart(uint64_t w) const { return w == 0 ? 0 : first_window_ + (w - 1) * window_; }
  uint32_t WindowChunks(uint64_t w) const;

  // The epoch's chunks in visiting order.
  std::vector<uint64_t> EpochChunks(uint64_t epoch) const;

  // One sample of a window: which of the window's chunks (0 .. W-1, in visiting order) and which
  // sample of that chunk.
  struct Entry {
    uint32_t chunk_in_window;
    uint32_t sample;
  };
  // Window w of an epoch whose chunks are `epoch_chunks` (from EpochChunks), in visiting order.
  std::vector<Entry> Window(const std::vector<uint64_t>& epoch_chunks, uint64_t epoch,
                            uint64_t window) const;
  // Samples in window w (the last window may hold fewer chunks).
  uint64_t WindowSamples(const std::vector<uint64_t>& epoch_chunks, uint64_t window) const;

  uint64_t GlobalSample(uint64_t chunk, uint32_t sample) const { return first_[chunk] + sample; }

  // The window of the epoch that holds position `position` of its order (the last window for a
  // position at or past the epoch's end), and in *before the samples of the windows before it.
  uint64_t WindowAt(const std::vector<uint64_t>& epoch_chunks, uint64_t position,
                    uint64_t* before) const;

  // The whole epoch as global sample indices (for --dump-order and tests: memory grows with the
  // dataset, so the training path never calls it).
  std::vector<uint64_t> EpochSamples(uint64_t epoch) const;

 private:
  std::vector<uint32_t> samples_;
  std::vector<uint64_t> first_;  // first_[g]: global index of chunk g's first sample; back(): total
  uint32_t window_, first_window_;
  bool shuffle_;
  uint64_t seed_;
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
