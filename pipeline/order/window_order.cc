#include "pipeline/order/window_order.h"

#include <algorithm>

#include "pipeline/order/epoch_remainder.h"

namespace rf {

std::vector<EpochStretch> StretchesAt(const OrderSettings& order, uint64_t epoch,
                                      uint32_t world_size, uint64_t position) {
  std::vector<EpochStretch> out;
  if (epoch == order.resumed.epoch) out = order.resumed.stretches;
  out.push_back({world_size, position, order.node_ranks});
  return out;
}

ResumePoint ResumeAt(uint64_t epoch, std::vector<EpochStretch> stretches, RankLayout saved,
                     uint64_t position, RankLayout now) {
  ResumePoint at{ResumedEpoch{epoch, std::move(stretches)}, position};
  if (!(saved == now) && (position != 0 || !at.resumed.stretches.empty())) {
    at.resumed.stretches.push_back({saved.world_size, position, saved.node_ranks});
    at.position = 0;
  }
  return at;
}

WindowOrder::WindowOrder(std::vector<uint32_t> chunk_samples, const OrderSettings& order,
                         std::shared_ptr<const std::vector<uint64_t>> part)
    : table_(std::make_shared<const ChunkTable>(std::move(chunk_samples))),
      world_(table_, order.shuffle == ShuffleMode::kWindow, order.shuffle_window,
             order.first_window_chunks, order.seed, order.world_size, order.node_ranks,
             std::move(part)),
      rank_(std::min(order.rank, world_.world_size() - 1)) {
  if (!order.resumed.stretches.empty()) {
    remainder_ = std::make_shared<const EpochRemainder>(table_, order);
  }
}

bool WindowOrder::IsResumed(uint64_t epoch) const {
  return remainder_ != nullptr && epoch == remainder_->epoch();
}

uint64_t WindowOrder::EpochSampleCount(uint64_t epoch) const {
  return IsResumed(epoch) ? remainder_->samples() : EpochSampleCount();
}

uint64_t WindowOrder::max_window_chunks() const {
  const uint64_t ordinary = world_.max_window_chunks();
  return remainder_ ? std::max(ordinary, remainder_->max_window_chunks()) : ordinary;
}

uint64_t WindowOrder::ResumedBatchSpanChunks(uint32_t batch) const {
  return remainder_ ? remainder_->BatchSpanChunks(batch) : 0;
}

EpochLayout WindowOrder::Layout(uint64_t epoch) const {
  EpochLayout l;
  l.epoch_ = epoch;
  if (IsResumed(epoch)) {
    l.resumed_ = true;
    remainder_->Chunks(&l.chunks_, &l.starts_);
    return l;
  }
  const EpochDeal deal = world_.Deal(epoch);
  l.chunks_ = world_.RankChunks(deal, rank_);
  l.share_ = world_.Share(deal, rank_);
  const uint64_t windows = world_.windows();
  l.starts_.resize(windows + 1);
  for (uint64_t w = 0; w < windows; ++w) l.starts_[w] = world_.WindowStart(w);
  l.starts_[windows] = l.chunks_.size();
  return l;
}

std::optional<std::vector<uint64_t>> WindowOrder::MachineChunks(uint64_t epoch,
                                                                uint32_t machine_ranks,
                                                                uint64_t from) const {
  const uint32_t world = world_size();
  if (machine_ranks <= 1 || machine_ranks > world || world % machine_ranks != 0 ||
      IsResumed(epoch)) {
    return std::nullopt;
  }
  const EpochDeal deal = world_.Deal(epoch);
  const uint32_t first = rank_ - rank_ % machine_ranks;
  const uint64_t n = epoch_chunk_count();
  std::vector<uint64_t> out;
  out.reserve((n - std::min(from, n)) * machine_ranks);
  for (uint64_t i = from; i < n; ++i) {
    for (uint32_t r = first; r < first + machine_ranks; ++r) {
      out.push_back(world_.RankChunk(deal, r, i));
    }
  }
  return out;
}

std::vector<WindowOrder::Entry> WindowOrder::Window(const EpochLayout& layout,
                                                    uint64_t window) const {
  if (window >= layout.window_count()) return {};
  const uint64_t* chunks = layout.chunks().data() + layout.WindowStart(window);
  if (layout.resumed()) return remainder_->Window(chunks, window);
  return world_.Window(chunks, layout.epoch(), layout.share_, window);
}

uint64_t WindowOrder::WindowSamples(const EpochLayout& layout, uint64_t window) const {
  if (window >= layout.window_count()) return 0;
  if (layout.resumed()) return remainder_->WindowSamples(window);
  return world_.WindowSamples(layout.chunks().data() + layout.WindowStart(window), layout.share_,
                              window);
}

uint64_t WindowOrder::WindowAt(const EpochLayout& layout, uint64_t position,
                               uint64_t* before) const {
  *before = 0;
  const uint64_t windows = layout.window_count();
  for (uint64_t w = 0; w < windows; ++w) {
    const uint64_t n = WindowSamples(layout, w);
    if (w + 1 == windows || *before + n > position) return w;
    *before += n;
  }
  return 0;  // no windows
}

std::vector<uint64_t> WindowOrder::EpochSamples(uint64_t epoch) const {
  std::vector<uint64_t> out;
  out.reserve(EpochSampleCount(epoch));
  WindowCursor c(*this);
  c.Start(epoch, 0);
  WindowCursor::Sample s;
  while (c.Step(&s)) out.push_back(GlobalSample(s.chunk, s.sample));
  return out;
}

void WindowCursor::Start(uint64_t epoch, uint64_t position) {
  layout_ = order_->Layout(epoch);
  uint64_t before = 0;
  EnterWindow(order_->WindowAt(layout_, position, &before));
  entry_ = std::min<uint64_t>(position - before, entries_.size());
}

void WindowCursor::EnterWindow(uint64_t w) {
  window_ = w;
  entries_ = order_->Window(layout_, w);
  entry_ = 0;
}

WindowCursor::Sample WindowCursor::Take() {
  const WindowOrder::Entry e = entries_[entry_++];
  return Sample{layout_.chunks()[layout_.WindowStart(window_) + e.chunk_in_window], e.sample,
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
