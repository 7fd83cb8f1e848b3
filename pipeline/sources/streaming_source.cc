#include "pipeline/sources/streaming_source.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "core/units.h"
#include "io/chunk_cache.h"
#include "pipeline/stage/trace.h"

namespace rf {

StreamingSource::StreamingSource(const Dataset& d, const StreamingOptions& o, WindowOrder order)
    : dataset_(d), options_(o), order_(std::move(order)), cursor_(order_) {}

uint32_t StreamingSource::StagingSlots(const WindowOrder& order, uint32_t batch_size) {
  // The largest window: W, or the rank's whole epoch where that is smaller, or the last window
  // where the shared chunks make it larger than W, or a resumed epoch's largest (an earlier
  // stretch's window, which may be larger than this world's).
  const uint64_t window =
      std::max<uint64_t>(std::min<uint64_t>(order.window_chunks(), order.epoch_chunk_count()),
                         order.max_window_chunks());
  // The dataset's mean chunk, at most a full one: the windows a batch passes through whole are
  // never the last, so they hold dealt (full) chunks only.
  const uint64_t per_chunk = std::max<uint64_t>(
      1, order.sample_count() / std::max<uint64_t>(1, order.dataset_chunk_count()));
  // A batch reaching past its windows takes at most ceil(batch / per_chunk) more chunks, and one
  // more for a short last chunk. Three windows (the one trained, the next, and the one after
  // being read) let the reader run a window ahead, so a slow stretch of disk does not stall
  // compute at once; two would be enough to make progress.
  const uint64_t spill = (batch_size + per_chunk - 1) / per_chunk + 1;
  // A resumed epoch's windows may hold few samples for many chunks (an old rank's last window
  // with the shared chunks of a larger world): a batch holds every window it takes samples from,
  // and the reader needs room for the next window.
  const uint64_t resumed = order.ResumedBatchSpanChunks(batch_size);
  return static_cast<uint32_t>(
      std::max<uint64_t>(3 * window + spill, resumed == 0 ? 0 : resumed + window));
}

StagingFactory HostStaging() {
  return [](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
    RF_ASSIGN_OR_RETURN(auto s, HostChunkStaging::Create(l));
    return std::unique_ptr<ChunkStaging>(std::move(s));
  };
}

Result<std::unique_ptr<StreamingSource>> StreamingSource::Create(
    const Dataset& dataset, const StreamingOptions& options, const StagingFactory& make_staging) {
  if (options.order.batch_size == 0)
    return Status::InvalidArgument("batch size must be at least 1");
  if (options.ring_slots < 2) return Status::InvalidArgument("the ring needs at least 2 slots");
  if (dataset.chunk_count() == 0) return Status::InvalidArgument("the dataset has no chunks");
  WindowOrder order(dataset.ChunkSampleCounts(), options.order, options.part);
  std::unique_ptr<StreamingSource> s(new StreamingSource(dataset, options, std::move(order)));
  const format::Header& h = dataset.header();
  StagingLayout layout;
  layout.slots = StagingSlots(s->order_, options.order.batch_size);
  layout.slot_bytes = dataset.max_chunk_bytes();
  layout.max_batch = options.order.batch_size;
  layout.sample_bytes = h.SampleBytes();
  layout.label_bytes = h.LabelBytes();
  layout.sample_dtype = h.sample_dtype;
  layout.label_dtype = h.label_dtype;
  layout.records = h.variable();
  RF_ASSIGN_OR_RETURN(s->staging_, make_staging(layout));
  if (layout.records && s->staging_->host_area() == nullptr) {
    return Status::InvalidArgument(
        std::string(format::RecordKindName(h.record_kind)) +
        " records are gathered from host memory: a staging area on a device cannot serve them");
  }
  RF_ASSIGN_OR_RETURN(s->ring_,
                      SlotRing::Create(options.ring_slots, dataset.max_chunk_bytes(), options.pin));
  s->refs_.resize(options.order.batch_size);
  s->batch_samples_.reserve(options.order.batch_size);
  return s;
}

StreamingSource::~StreamingSource() {
  Stop();
  if (staging_) (void)staging_->Drain();  // queued work may still read the staging area
}

uint64_t StreamingSource::epoch_samples() const { return EpochSamplesOf(epoch_); }

uint64_t StreamingSource::EpochSamplesOf(uint64_t epoch) const {
  return EpochSamples(order_.EpochSampleCount(epoch), options_.order.batch_size,
                      options_.order.drop_last);
}

std::string StreamingSource::Describe() const {
  const StagingLayout& l = staging_->layout();
  const std::string reads =
      order_.world_size() == 1
          ? FormatBytes(dataset_.total_bytes())
          : "rank " + std::to_string(order_.rank()) + " of " + std::to_string(order_.world_size()) +
                ": " + std::to_string(order_.epoch_chunk_count()) + " of " +
                std::to_string(order_.dataset_chunk_count()) + " chunks an epoch (" +
                std::to_string(order_.shared_chunk_count()) + " shared)";
  const std::string resumed =
      order_.IsResumed(options_.order.resumed.epoch)
          ? "; epoch " + std::to_string(options_.order.resumed.epoch + 1) + " resumed after " +
                std::to_string(options_.order.resumed.stretches.size()) + " earlier stretch(es)"
          : "";
  const std::string order =
      options_.order.shuffle == ShuffleMode::kWindow
          ? std::to_string(options_.order.shuffle_window) + "-chunk shuffle windows, "
          : "stored order, ";
  return "streaming: " + reads + " read as it trains; " + order + std::to_string(l.slots) +
         " staging slots of " + FormatBytes(l.slot_bytes) + ", " +
         std::to_string(options_.ring_slots) + " ring slots, " +
         (options_.feeder.verify ? "checksums verified" : "checksums not verified") + resumed;
}

uint64_t StreamingSource::bytes_read() const {
  return bytes_before_ + (feeder_ ? feeder_->bytes_read() : 0);
}

uint64_t StreamingSource::bytes_delivered() const {
  return stats_before_.delivered_bytes + (feeder_ ? feeder_->stats().delivered_bytes : 0);
}

double StreamingSource::decode_busy_seconds() const {
  return static_cast<double>(stats_before_.stage_busy_ns +
                             (feeder_ ? feeder_->stats().stage_busy_ns : 0)) *
         1e-9;
}

uint32_t StreamingSource::decode_threads() const {
  return feeder_ ? feeder_->stats().stage_threads : stats_before_.stage_threads;
}

double StreamingSource::reader_held_seconds() const {
  // The feeder blocks in AcquireFree only with no read in flight (pipeline/stage/chunk_feeder.cc).
  return static_cast<double>(held_before_ns_ + ring_->producer_wait_ns()) * 1e-9;
}

void StreamingSource::Stop() {
  if (!copier_ && !feeder_) return;
  ring_->Fail(Status::Aborted("streaming source stopped"));  // wakes both stages
  copier_.reset();
  if (feeder_) {
    (void)feeder_->Join();
    const FeederStats s = feeder_->stats();
    bytes_before_ += s.stored_bytes;
    stats_before_.delivered_bytes += s.delivered_bytes;
    stats_before_.stage_busy_ns += s.stage_busy_ns;
    stats_before_.stage_threads = s.stage_threads;
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
  // The plan: the epoch from the window holding `position`, then every later epoch up to
  // options_.epochs (endless where that is 0), each epoch's chunks made on the feeder thread when
  // the reads reach it (WindowOrder is immutable; order_ outlives the feeder, Stop joins it).
  cursor_.Start(epoch, position);
  plan_skipped_ = cursor_.layout().WindowStart(cursor_.window());
  epoch_offset_ = 0;
  // A remote dataset's cache learns each epoch's reads as they begin: the rest of the epoch and
  // the whole next one, so it evicts the chunk needed last and keeps what the next epoch reads
  // first (io/chunk_cache.h); the reads of the machine's ranks that share it, interleaved, where
  // it knows them (StreamingOptions::machine_ranks).
  ChunkPlan plan = [order = &order_, epochs = options_.epochs, epoch,
                    chunks = cursor_.epoch_chunks(), next = plan_skipped_, cache = dataset_.cache(),
                    ranks = options_.machine_ranks,
                    scheduled = false]() mutable -> std::optional<uint64_t> {
    // An ordinary epoch holds at least one chunk; a resumed one may hold none (nothing was left).
    while (next >= chunks.size()) {
      if (epochs != 0 && epoch + 1 >= epochs) return std::nullopt;
      chunks = order->EpochChunks(++epoch);
      next = 0;
      scheduled = false;
    }
    if (cache != nullptr && !scheduled) {
      // The rank's own chunks are made only where the machine's are not (value_or would make
      // them every time: a copy of this epoch's and a deal of the next, for nothing).
      std::optional<std::vector<uint64_t>> machine = order->MachineChunks(epoch, ranks, next);
      std::vector<uint64_t> ahead =
          machine
              ? std::move(*machine)
              : std::vector<uint64_t>(chunks.begin() + static_cast<ptrdiff_t>(next), chunks.end());
      if (epochs == 0 || epoch + 1 < epochs) {
        std::optional<std::vector<uint64_t>> then = order->MachineChunks(epoch + 1, ranks);
        if (!then) then = order->EpochChunks(epoch + 1);
        ahead.insert(ahead.end(), then->begin(), then->end());
      }
      (void)cache->SetSchedule(ahead);  // every chunk is the dataset's: it cannot fail
      scheduled = true;
    }
    return chunks[next++];
  };
  retire_.clear();
  window_slots_.clear();
  failure_ = Status::Ok();
  ring_fed_ = true;
  RF_ASSIGN_OR_RETURN(feeder_,
                      ChunkFeeder::Start(dataset_, *ring_, std::move(plan), options_.feeder));
  copier_ = ChunkCopier::Start(*ring_, *staging_);
  started_ = true;
  position_ = position;
  return AwaitWindow(cursor_.window());
}

uint64_t StreamingSource::SeqOf(uint64_t window, uint32_t chunk_in_window) const {
  // Plan positions: the start epoch from the window holding the start position (plan_skipped_
  // chunks in), then whole epochs of this rank's chunks (epoch_offset_ from the start epoch's
  // first chunk to the cursor epoch's).
  return epoch_offset_ + cursor_.layout().WindowStart(window) + chunk_in_window - plan_skipped_;
}

Status StreamingSource::AwaitWindow(uint64_t w) {
  const uint32_t count = cursor_.layout().WindowChunks(w);
  window_slots_.resize(count);
  if (count == 0) {  // a resumed epoch with nothing left: no windows, nothing to wait for
    if (cursor_.window() != w) cursor_.EnterWindow(w);
    return Status::Ok();
  }
  Result<uint64_t> waited =
      copier_->AwaitCopied(SeqOf(w, 0), count, window_slots_.data(), options_.poll);
  if (!waited.ok()) {
    failure_ = waited.status();  // the cursor may be mid-batch: only a restart goes on from here
    return failure_;
  }
  if (*waited != 0) {
    wait_ns_ += *waited;
    const uint64_t now = Trace::NowNs();
    TraceSpan("wait for data", "compute", now - *waited, now);
  }
  for (uint32_t slot : window_slots_) RF_RETURN_IF_ERROR(staging_->AwaitCopy(slot));
  if (cursor_.window() != w) cursor_.EnterWindow(w);
  return Status::Ok();
}

Status StreamingSource::RetirePending() {
  if (retire_.empty()) return Status::Ok();
  for (uint32_t slot : retire_) RF_RETURN_IF_ERROR(staging_->Retire(slot));
  copier_->Free(retire_);
  retire_.clear();
  return Status::Ok();
}

Status StreamingSource::StartEpoch(uint64_t epoch, uint64_t position) {
  RF_RETURN_IF_ERROR(CheckEpochHandedOut(epoch));
  RF_RETURN_IF_ERROR(CheckEpochPosition(position, EpochSamplesOf(epoch)));
  if (options_.epochs != 0 && epoch >= options_.epochs) {
    return Status::InvalidArgument("epoch " + std::to_string(epoch + 1) +
                                   " is past the streaming plan's " +
                                   std::to_string(options_.epochs));
  }
  // The plan goes on into the next epoch where the last one ended exactly.
  const bool continues = started_ && failure_.ok() && position == 0 &&
                         epoch == cursor_.epoch() + 1 && position_ == epoch_samples();
  epoch_ = epoch;
  if (!continues) return Restart(epoch, position);
  // The finished epoch's last window, and any windows drop_last skipped (they were copied in all
  // the same, as the plan holds whole epochs): retire them.
  retire_.insert(retire_.end(), window_slots_.begin(), window_slots_.end());
  for (uint64_t w = cursor_.window() + 1; w < cursor_.layout().window_count(); ++w) {
    RF_RETURN_IF_ERROR(AwaitWindow(w));
    retire_.insert(retire_.end(), window_slots_.begin(), window_slots_.end());
  }
  if (!defer_retire_) RF_RETURN_IF_ERROR(RetirePending());
  window_slots_.clear();
  epoch_offset_ += cursor_.epoch_chunks().size();
  cursor_.Start(epoch, 0);
  position_ = 0;
  return AwaitWindow(0);
}

Result<Batch> StreamingSource::Next() {
  if (!failure_.ok()) return failure_;
  // The batch handed out last has been queued by now: windows it finished can be reused.
  RF_RETURN_IF_ERROR(RetirePending());
  batch_samples_.clear();
  const uint32_t n = BatchSizeAt(position_, options_.order.batch_size, epoch_samples());
  if (n == 0) return Batch{};
  batch_samples_.resize(n);
  RF_RETURN_IF_ERROR(TakeRefs(n, refs_.data(), batch_samples_.data()));
  RF_ASSIGN_OR_RETURN(Batch b, staging_->Gather(refs_.data(), batch_samples_.data(), n));
  b.epoch = epoch_;
  return b;
}

Result<uint32_t> StreamingSource::Take(uint32_t max, SampleRef* refs, uint64_t* indices) {
  if (!failure_.ok()) return failure_;
  if (!defer_retire_) RF_RETURN_IF_ERROR(RetirePending());
  batch_samples_.clear();
  const uint32_t n =
      std::min(max, BatchSizeAt(position_, options_.order.batch_size, epoch_samples()));
  RF_RETURN_IF_ERROR(TakeRefs(n, refs, indices));
  batch_samples_.assign(indices, indices + n);
  return n;
}

Status StreamingSource::TakeRefs(uint32_t n, SampleRef* refs, uint64_t* indices) {
  const uint64_t slot_bytes = staging_->layout().slot_bytes;
  // Records of any size: each chunk's record table, read where the host staging holds it.
  const uint8_t* records = staging_->layout().records ? staging_->host_area() : nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    if (cursor_.AtWindowEnd()) {  // on to the next window; this one is done after the batch
      retire_.insert(retire_.end(), window_slots_.begin(), window_slots_.end());
      RF_RETURN_IF_ERROR(AwaitWindow(cursor_.window() + 1));
    }
    const WindowCursor::Sample s = cursor_.Take();
    const uint64_t base = window_slots_[s.chunk_in_window] * slot_bytes;
    refs[i] = records ? RecordRefTo(dataset_, s.chunk, base, records + base, s.sample)
                      : RefTo(dataset_, s.chunk, base, s.sample);
    if (indices != nullptr) indices[i] = order_.GlobalSample(s.chunk, s.sample);
  }
  position_ += n;
  return Status::Ok();
}

Result<uint32_t> StreamingSource::NextInPlace(std::vector<HostSpan>* out) {
  const uint8_t* area = staging_->host_area();
  if (area == nullptr)
    return Status::Unsupported("the staging area is on a device: its samples are not in place");
  if (!failure_.ok()) return failure_;
  // The batch read in place last is done with by now: windows it finished can be reused.
  RF_RETURN_IF_ERROR(RetirePending());
  batch_samples_.clear();  // no indices: the packing reads only the ids
  const uint32_t n = BatchSizeAt(position_, options_.order.batch_size, epoch_samples());
  RF_RETURN_IF_ERROR(TakeRefs(n, refs_.data(), nullptr));
  const StagingLayout& l = staging_->layout();
  out->resize(n);
  for (uint32_t i = 0; i < n; ++i)
    (*out)[i] = {area + refs_[i].sample_offset, l.records ? refs_[i].record_bytes : l.sample_bytes};
  return n;
}

}  // namespace rf
