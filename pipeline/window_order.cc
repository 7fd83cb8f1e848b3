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
      seed_(options.seed) {
  first_.assign(samples_.size() + 1, 0);
  for (size_t g = 0; g < samples_.size(); ++g) first_[g + 1] = first_[g] + samples_[g];
}

uint64_t WindowOrder::windows_per_epoch() const {
  if (chunk_count() <= first_window_) return 1;
  return 1 + (chunk_count() - first_window_ + window_ - 1) / window_;
}

uint32_t WindowOrder::WindowChunks(uint64_t w) const {
  const uint64_t start = WindowStart(w);
  if (start >= chunk_count()) return 0;
  return static_cast<uint32_t>(
      std::min<uint64_t>(chunk_count() - start, w == 0 ? first_window_ : window_));
}

std::vector<uint64_t> WindowOrder::EpochChunks(uint64_t epoch) const {
  if (shuffle_) return EpochOrder(chunk_count(), seed_, epoch);
  std::vector<uint64_t> chunks(chunk_count());
  std::iota(chunks.begin(), chunks.end(), uint64_t{0});
  return chunks;
}

uint64_t WindowOrder::WindowSamples(const std::vector<uint64_t>& epoch_chunks,
                                    uint64_t window) const {
  uint64_t n = 0;
  const uint64_t begin = WindowStart(window), end = begin + WindowChunks(window);
  for (uint64_t i = begin; i < end; ++i) n += samples_[epoch_chunks[i]];
  return n;
}

std::vector<WindowOrder::Entry> WindowOrder::Window(const std::vector<uint64_t>& epoch_chunks,
                                                    uint64_t epoch, uint64_t window) const {
  std::vector<Entry> stored;
  stored.reserve(WindowSamples(epoch_chunks, window));
  const uint64_t begin = WindowStart(window), end = begin + WindowChunks(window);
  for (uint64_t i = begin; i < end; ++i) {
    for (uint32_t s = 0; s < samples_[epoch_chunks[i]]; ++s) {
      stored.push_back({static_cast<uint32_t>(i - begin), s});
    }
  }
  if (!shuffle_) return stored;
  const std::vector<uint64_t> perm = SeededPermutation(stored.size(), {seed_, epoch, window, 1});
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
  out.reserve(sample_count());
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
