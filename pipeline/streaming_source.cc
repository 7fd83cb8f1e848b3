#include "pipeline/streaming_source.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "io/units.h"
#include "pipeline/trace.h"

namespace rf {
void StreamingSource::ReleaseRingSlot(void* arg) {
  const auto* a = static_cast<const ReleaseArg*>(arg);
  if (a->copy_start_ns != 0) TraceSpan("copy", "copy", a->copy_start_ns, Trace::NowNs());
  a->ring->Release(a->slot);
}

StreamingSource::StreamingSource(const Dataset& d, const StreamingOptions& o, WindowOrder order)
    : dataset_(d), options_(o), order_(std::move(order)) {}

uint32_t StreamingSource::StagingSlots(const WindowOrder& order, uint32_t batch_size) {
  const uint64_t chunks = order.chunk_count();
  const uint64_t window = std::min<uint64_t>(order.window_chunks(), chunks);
  const uint64_t per_chunk =
      std::max<uint64_t>(1, order.sample_count() / std::max<uint64_t>(1, chunks));
  // A batch reaching past its windows takes at most ceil(batch / per_chunk) more chunks, and one
  // more for a short last chunk. Three windows (the one trained, the next, and the one after
  // being read) let the reader run a window ahead, so a slow stretch of disk does not stall
  // compute at once; two would be enough to make progress.
  const uint64_t spill = (batch_size + per_chunk - 1) / per_chunk + 1;
  return static_cast<uint32_t>(3 * window + spill);
}

Result<std::unique_ptr<StreamingSource>> StreamingSource::Create(
    const Dataset& dataset, const StreamingOptions& options, const StagingFactory& make_staging) {
  if (options.batch_size == 0) return Status::InvalidArgument("batch size must be at least 1");
  if (options.ring_slots < 2) return Status::InvalidArgument("the ring needs at least 2 slots");
  if (dataset.chunk_count() == 0) return Status::InvalidArgument("the dataset has no chunks");
  WindowOrder order(dataset.ChunkSampleCounts(), options.order);
  std::unique_ptr<StreamingSource> s(new StreamingSource(dataset, options, std::move(order)));
  const format::Header& h = dataset.header();
  StagingLayout layout;
  layout.slots = s->staging_slots_ = StagingSlots(s->order_, options.batch_size);
  layout.slot_bytes = dataset.max_chunk_bytes();
  layout.max_batch = options.batch_size;
  layout.sample_bytes = h.SampleBytes();
  layout.label_bytes = h.LabelBytes();
  layout.sample_dtype = h.sample_dtype;
  layout.label_dtype = h.label_dtype;
  RF_ASSIGN_OR_RETURN(s->staging_, make_staging(layout));
  RF_ASSIGN_OR_RETURN(s->ring_,
                      SlotRing::Create(options.ring_slots, dataset.max_chunk_bytes(), options.pin));
  s->refs_.resize(options.batch_size);
  s->batch_samples_.reserve(options.batch_size);
  s->slot_of_seq_.assign(2 * size_t{s->staging_slots_} + 2, kNoSlot);
  s->release_args_.resize(options.ring_slots);
  return s;
}

StreamingSource::~StreamingSource() {
  Stop();
  if (staging_) (void)staging_->Drain();  // queued work may still read the staging area
}

uint64_t StreamingSource::epoch_samples() const {
  return EpochSamples(order_.sample_count(), options_.batch_size, options_.drop_last);
}

std::string StreamingSource::Describe() const {
  const StagingLayout& l = staging_->layout();
  return "streaming: " + FormatBytes(dataset_.total_bytes()) + " read as it trains; " +
         std::to_string(options_.order.window_chunks) + "-chunk shuffle windows, " +
         std::to_string(l.slots) + " staging slots of " + FormatBytes(l.slot_bytes) + ", " +
         std::to_string(options_.ring_slots) + " ring slots, " +
         (options_.feeder.verify ? "checksums verified" : "checksums not verified");
}

uint64_t StreamingSource::bytes_read() const {
  return bytes_before_ + (feeder_ ? feeder_->bytes_read() : 0);
}

double StreamingSource::reader_held_seconds() const {
  // The feeder blocks in AcquireFree only with no read in flight (pipeline/chunk_feeder.cc).
  return static_cast<double>(held_before_ns_ + ring_->producer_wait_ns()) * 1e-9;
}

void StreamingSource::Stop() {
  if (!copier_.joinable() && !feeder_) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  ring_->Fail(Status::Aborted("streaming source stopped"));
  if (copier_.joinable()) copier_.join();
  if (feeder_) {
    bytes_before_ += feeder_->bytes_read();
    (void)feeder_->Join();
    feeder_.reset();
  }
}

Status StreamingSource::Restart(uint64_t epoch, uint64_t position) {
  Stop();
  RF_RETURN_IF_ERROR(staging_->Drain());
  // A fresh ring unless this one was never fed: a fed one has failed (that is how Stop ends its
  // threads) or been closed at the end of its plan.
  if (ring_fed_) {
    held_before_ns_ += ring_->producer_wait_ns();
    RF_ASSIGN_OR_RETURN(
        ring_, SlotRing::Create(options_.ring_slots, dataset_.max_chunk_bytes(), options_.pin));
  }
  epoch_ = epoch;
  epoch_chunks_ = order_.EpochChunks(epoch);
  // The window holding `position`, and where in it.
  uint64_t w = 0, before = 0;
  while (w + 1 < order_.windows_per_epoch() &&
         before + order_.WindowSamples(epoch_chunks_, w) <= position) {
    before += order_.WindowSamples(epoch_chunks_, w);
    ++w;
  }
  plan_epoch_ = epoch;
  plan_window_ = w;
  std::vector<uint64_t> plan(
      epoch_chunks_.begin() + std::min<uint64_t>(epoch_chunks_.size(), order_.WindowStart(w)),
      epoch_chunks_.end());
  for (uint64_t e = epoch + 1; e < options_.epochs; ++e) {
    const std::vector<uint64_t> more = order_.EpochChunks(e);
    plan.insert(plan.end(), more.begin(), more.end());
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = copy_done_ = false;
    copy_status_ = Status::Ok();
    copied_ = 0;
    free_slots_.clear();
    for (uint32_t s = staging_slots_; s-- > 0;) free_slots_.push_back(s);
  }
  retire_.clear();
  window_slots_.clear();
  window_ = w;
  entries_.clear();
  entry_ = 0;
  position_ = before;
  ring_fed_ = true;
  RF_ASSIGN_OR_RETURN(feeder_,
                      ChunkFeeder::Start(dataset_, *ring_, std::move(plan), options_.feeder));
  copier_ = std::thread([this] { CopyLoop(); });
  started_ = true;
  // Skip the window's samples before `position`, which an earlier run trained on.
  RF_RETURN_IF_ERROR(EnterWindow(w));
  entry_ = position - before;
  position_ = position;
  return Status::Ok();
}

uint32_t StreamingSource::TakeFreeSlot() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return stopping_ || !free_slots_.empty(); });
  if (stopping_) return kNoSlot;
  const uint32_t s = free_slots_.back();
  free_slots_.pop_back();
  return s;
}

void StreamingSource::CopyLoop() {
  Status st;
  for (uint64_t seq = 0;; ++seq) {
    const std::optional<SlotRing::Filled> f = ring_->AcquireReady();
    if (!f) {
      st = ring_->status();  // OK: the plan is read to its end
      break;
    }
    const uint32_t dst = TakeFreeSlot();
    if (dst == kNoSlot) {
      ring_->Release(f->slot);
      break;
    }
    ReleaseArg& arg = release_args_[f->slot];
    arg = ReleaseArg{ring_.get(), f->slot, Trace::Active() != nullptr ? Trace::NowNs() : 0};
    st = staging_->CopyIn(dst, ring_->data(f->slot), f->bytes, &ReleaseRingSlot, &arg);
    if (!st.ok()) {
      ring_->Fail(st);
      break;
    }
    {
      std::lock_guard lock(mu_);
      slot_of_seq_[seq % slot_of_seq_.size()] = dst;
      copied_ = seq + 1;
    }
    cv_.notify_all();
  }
  {
    std::lock_guard lock(mu_);
    copy_done_ = true;
    if (!stopping_) copy_status_ = st;
  }
  cv_.notify_all();
}

uint64_t StreamingSource::SeqOf(uint64_t window, uint32_t chunk_in_window) const {
  // Plan positions: the start epoch from window plan_window_, then whole epochs.
  const uint64_t chunks = order_.chunk_count(), skipped = order_.WindowStart(plan_window_);
  if (epoch_ == plan_epoch_) return order_.WindowStart(window) - skipped + chunk_in_window;
  return chunks - skipped + (epoch_ - plan_epoch_ - 1) * chunks + order_.WindowStart(window) +
         chunk_in_window;
}

Status StreamingSource::EnterWindow(uint64_t w) {
  const uint32_t count = order_.WindowChunks(w);
  const uint64_t last_seq = SeqOf(w, count - 1);
  {
    std::unique_lock lock(mu_);
    if (copied_ <= last_seq) {
      const uint64_t t0 = Trace::NowNs();
      cv_.wait(lock, [&] { return copied_ > last_seq || copy_done_; });
      const uint64_t t1 = Trace::NowNs();
      wait_ns_ += t1 - t0;
      TraceSpan("wait for data", "compute", t0, t1);
      if (copied_ <= last_seq) {
        if (!copy_status_.ok()) return copy_status_;
        return ring_->status().ok() ? Status::Aborted("the chunk plan ended before epoch " +
                                                      std::to_string(epoch_ + 1) + " did")
                                    : ring_->status();
      }
    }
    window_slots_.resize(count);
    for (uint32_t k = 0; k < count; ++k) {
      window_slots_[k] = slot_of_seq_[SeqOf(w, k) % slot_of_seq_.size()];
    }
  }
  for (uint32_t slot : window_slots_) RF_RETURN_IF_ERROR(staging_->AwaitCopy(slot));
  window_ = w;
  entries_ = order_.Window(epoch_chunks_, epoch_, w);
  entry_ = 0;
  return Status::Ok();
}

Status StreamingSource::RetirePending() {
  if (retire_.empty()) return Status::Ok();
  for (uint32_t slot : retire_) RF_RETURN_IF_ERROR(staging_->Retire(slot));
  {
    std::lock_guard lock(mu_);
    free_slots_.insert(free_slots_.end(), retire_.begin(), retire_.end());
  }
  cv_.notify_all();
  retire_.clear();
  return Status::Ok();
}

Status StreamingSource::StartEpoch(uint64_t epoch, uint64_t position) {
  RF_RETURN_IF_ERROR(CheckEpochPosition(position, epoch_samples()));
  if (epoch >= options_.epochs) {
    return Status::InvalidArgument("epoch " + std::to_string(epoch + 1) +
                                   " is past the streaming plan's " +
                                   std::to_string(options_.epochs));
  }
  // The plan goes on into the next epoch where the last one ended exactly.
  const bool continues =
      started_ && position == 0 && epoch == epoch_ + 1 && position_ == epoch_samples();
  if (!continues) return Restart(epoch, position);
  // The finished epoch's last window, and any windows drop_last skipped (they were copied in all
  // the same, as the plan holds whole epochs): retire them.
  retire_.insert(retire_.end(), window_slots_.begin(), window_slots_.end());
  for (uint64_t w = window_ + 1; w < order_.windows_per_epoch(); ++w) {
    RF_RETURN_IF_ERROR(EnterWindow(w));
    retire_.insert(retire_.end(), window_slots_.begin(), window_slots_.end());
  }
  RF_RETURN_IF_ERROR(RetirePending());
  window_slots_.clear();
  epoch_ = epoch;
  epoch_chunks_ = order_.EpochChunks(epoch);
  position_ = 0;
  return EnterWindow(0);
}

Result<Batch> StreamingSource::Next() {
  // The batch handed out last has been queued by now: windows it finished can be reused.
  RF_RETURN_IF_ERROR(RetirePending());
  batch_samples_.clear();
  const uint32_t n = BatchSizeAt(position_, options_.batch_size, epoch_samples());
  if (n == 0) return Batch{};
  const uint64_t slot_bytes = staging_->layout().slot_bytes;
  for (uint32_t i = 0; i < n; ++i) {
    if (entry_ == entries_.size()) {  // on to the next window; this one is done after the batch
      retire_.insert(retire_.end(), window_slots_.begin(), window_slots_.end());
      RF_RETURN_IF_ERROR(EnterWindow(window_ + 1));
    }
    const WindowOrder::Entry e = entries_[entry_++];
    const uint64_t chunk = epoch_chunks_[order_.WindowStart(window_) + e.chunk_in_window];
    refs_[i] = RefTo(dataset_, chunk, window_slots_[e.chunk_in_window] * slot_bytes, e.sample);
    batch_samples_.push_back(order_.GlobalSample(chunk, e.sample));
  }
  position_ += n;
  return staging_->Gather(refs_.data(), n);
}

}  // namespace rf
