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
// Thread safety: immutable after construction; Window() may be called from any thread.
#pragma once

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

}  // namespace rf
