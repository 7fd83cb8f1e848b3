#include "pipeline/window_order.h"

#include <algorithm>
#include <numeric>

#include "pipeline/epoch_order.h"

namespace rf {

WindowOrder::WindowOrder(std::vector<uint32_t> chunk_samples, const WindowOrderOptions& options)
    : samples_(std::move(chunk_samples)),
      window_(std::max<uint32_t>(1, options.window_chunks)),
      first_window_(std::clamp<uint32_t>(options.first_window_chunks, 1, window_)),
      shuffle_(options.shuffle),
      seed_(options.seed),
      rank_(std::min(options.rank, std::max<uint32_t>(1, options.world_size) - 1)),
      world_(std::max<uint32_t>(1, options.world_size)) {
  first_.assign(samples_.size() + 1, 0);
  for (size_t g = 0; g < samples_.size(); ++g) first_[g + 1] = first_[g] + samples_[g];
  if (!samples_.empty()) full_samples_ = *std::max_element(samples_.begin(), samples_.end());
  if (world_ == 1) {  // every chunk is rank 0's, whatever its size: the single-rank order
    dealt_total_ = dealt_ = samples_.size();
    return;
  }
  const uint64_t full =
      static_cast<uint64_t>(std::count(samples_.begin(), samples_.end(), full_samples_));
  dealt_ = full / world_;
  dealt_total_ = dealt_ * world_;
  shared_ = samples_.size() - dealt_total_;
  shared_samples_ = sample_count() - dealt_total_ * full_samples_;
}

uint64_t WindowOrder::EpochSampleCount() const {
  if (world_ == 1) return sample_count();
  return dealt_ * full_samples_ + (shared_samples_ + world_ - 1) / world_;
}

uint64_t WindowOrder::windows_per_epoch() const {
  if (dealt_ <= first_window_) return 1;
  return 1 + (dealt_ - first_window_ + window_ - 1) / window_;
}

uint64_t WindowOrder::max_window_chunks() const {
  const uint64_t last = windows_per_epoch() - 1;
  // Windows between the first and the last hold exactly W chunks.
  return std::max<uint64_t>({WindowChunks(0), WindowChunks(last), last >= 2 ? window_ : 0});
}

uint32_t WindowOrder::WindowChunks(uint64_t w) const {
  const uint64_t windows = windows_per_epoch();
  if (w >= windows) return 0;
  const uint64_t start = WindowStart(w);
  const uint64_t dealt =
      start >= dealt_ ? 0 : std::min<uint64_t>(dealt_ - start, w == 0 ? first_window_ : window_);
  return static_cast<uint32_t>(dealt + (w + 1 == windows ? shared_ : 0));
}

std::vector<uint64_t> WindowOrder::EpochChunks(uint64_t epoch) const {
  std::vector<uint64_t> chunks;
  if (shuffle_) {
    chunks = EpochOrder(dataset_chunk_count(), seed_, epoch);
  } else {
    chunks.resize(dataset_chunk_count());
    std::iota(chunks.begin(), chunks.end(), uint64_t{0});
  }
  if (world_ == 1) return chunks;
  // Deal the first dealt_total_ full chunks round-robin; the rest go to every rank, after its own.
  std::vector<uint64_t> mine, shared;
  mine.reserve(dealt_ + shared_);
  shared.reserve(shared_);
  uint64_t full_seen = 0;
  for (uint64_t g : chunks) {
    if (IsFull(g) && full_seen < dealt_total_) {
      if (full_seen % world_ == rank_) mine.push_back(g);
      ++full_seen;
    } else {
      shared.push_back(g);
    }
  }
  mine.insert(mine.end(), shared.begin(), shared.end());
  return mine;
}

uint64_t WindowOrder::WindowSamples(const std::vector<uint64_t>& epoch_chunks,
                                    uint64_t window) const {
  const bool last = window + 1 == windows_per_epoch();
  const uint64_t begin = WindowStart(window);
  const uint64_t end = begin + WindowChunks(window) - (last ? shared_ : 0);
  uint64_t n = 0;
  for (uint64_t i = begin; i < end; ++i) n += samples_[epoch_chunks[i]];
  if (last) n += (shared_samples_ + world_ - 1) / world_;
  return n;
}

std::vector<WindowOrder::Entry> WindowOrder::Window(const std::vector<uint64_t>& epoch_chunks,
                                                    uint64_t epoch, uint64_t window) const {
  std::vector<Entry> stored;
  stored.reserve(WindowSamples(epoch_chunks, window));
  const bool last = window + 1 == windows_per_epoch();
  const uint64_t begin = WindowStart(window);
  const uint64_t dealt_end = begin + WindowChunks(window) - (last ? shared_ : 0);
  for (uint64_t i = begin; i < dealt_end; ++i) {
    for (uint32_t s = 0; s < samples_[epoch_chunks[i]]; ++s) {
      stored.push_back({static_cast<uint32_t>(i - begin), s});
    }
  }
  if (last && shared_samples_ != 0) {
    // This rank's share of the shared stream (the shared chunks' samples back to back, in
    // visiting order): stream[j mod S] for j = rank, rank + N, ... < ceil(S/N) * N. Only the
    // last j can reach S ((ceil(S/N) - 1) * N < S), so the stream wraps at most once: the
    // padding sample, from a chunk of this same window.
    const uint64_t s_total = shared_samples_, take = (s_total + world_ - 1) / world_;
    uint64_t k = 0, chunk_first = 0;  // shared chunk k holds stream[chunk_first ...]
    for (uint64_t i = 0; i < take; ++i) {
      uint64_t j = rank_ + i * world_;
      if (j >= s_total) {
        j %= s_total;
        k = chunk_first = 0;
      }
      while (j >= chunk_first + samples_[epoch_chunks[dealt_ + k]]) {
        chunk_first += samples_[epoch_chunks[dealt_ + k]];
        ++k;
      }
      stored.push_back(
          {static_cast<uint32_t>(dealt_ + k - begin), static_cast<uint32_t>(j - chunk_first)});
    }
  }
  if (!shuffle_) return stored;
  const std::vector<uint64_t> perm =
      world_ == 1 ? SeededPermutation(stored.size(), {seed_, epoch, window, 1})
                  : SeededPermutation(stored.size(), {seed_, epoch, window, 1, rank_});
  std::vector<Entry> out(stored.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = stored[perm[i]];
  return out;
}

uint64_t WindowOrder::WindowAt(const std::vector<uint64_t>& epoch_chunks, uint64_t position,
                               uint64_t* before) const {
  *before = 0;
  for (uint64_t w = 0;; ++w) {
    const uint64_t n = WindowSamples(epoch_chunks, w);
    if (w + 1 == windows_per_epoch() || *before + n > position) return w;
    *before += n;
  }
}

std::vector<uint64_t> WindowOrder::EpochSamples(uint64_t epoch) const {
  std::vector<uint64_t> out;
  out.reserve(EpochSampleCount());
  WindowCursor c(*this);
  c.Start(epoch, 0);
  WindowCursor::Sample s;
  while (c.Step(&s)) out.push_back(GlobalSample(s.chunk, s.sample));
  return out;
}

void WindowCursor::Start(uint64_t epoch, uint64_t position) {
  epoch_ = epoch;
  epoch_chunks_ = order_->EpochChunks(epoch);
  uint64_t before = 0;
  EnterWindow(order_->WindowAt(epoch_chunks_, position, &before));
  entry_ = std::min<uint64_t>(position - before, entries_.size());
}

void WindowCursor::EnterWindow(uint64_t w) {
  window_ = w;
  entries_ = order_->Window(epoch_chunks_, epoch_, w);
  entry_ = 0;
}

WindowCursor::Sample WindowCursor::Take() {
  const WindowOrder::Entry e = entries_[entry_++];
  return Sample{epoch_chunks_[order_->WindowStart(window_) + e.chunk_in_window], e.sample,
                e.chunk_in_window};
}

bool WindowCursor::Step(Sample* s) {
  while (AtWindowEnd()) {
    if (InLastWindow()) return false;
    EnterWindow(window_ + 1);
  }
  *s = Take();
  return true;
}

}  // namespace rf
