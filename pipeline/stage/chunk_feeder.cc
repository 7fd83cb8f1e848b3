#include "pipeline/stage/chunk_feeder.h"

#include <algorithm>
#include <future>
#include <string>

#include "core/clock.h"
#include "core/cpus.h"
#include "core/thread_name.h"
#include "pipeline/stage/trace.h"

namespace rf {

uint32_t DefaultDecodeThreads() {
  return std::clamp<uint32_t>(AvailableCpus() / LocalRanks() / 2, 2, 8);
}

ChunkFeeder::ChunkFeeder(const Dataset& d, SlotRing& r, ChunkPlan plan, const FeederOptions& o)
    : dataset_(d),
      ring_(r),
      plan_(std::move(plan)),
      options_(o),
      submitted_ns_(r.slot_count(), 0) {}

Result<std::unique_ptr<ChunkFeeder>> ChunkFeeder::Start(const Dataset& dataset, SlotRing& ring,
                                                        std::vector<uint64_t> order,
                                                        const FeederOptions& options) {
  for (uint64_t c : order) {
    if (c >= dataset.chunk_count())
      return Status::InvalidArgument("chunk " + std::to_string(c) + " is not in the dataset");
  }
  ChunkPlan plan = [order = std::move(order), next = size_t{0}]() mutable {
    return next < order.size() ? std::optional<uint64_t>(order[next++]) : std::nullopt;
  };
  return Start(dataset, ring, std::move(plan), options);
}

Result<std::unique_ptr<ChunkFeeder>> ChunkFeeder::Start(const Dataset& dataset, SlotRing& ring,
                                                        ChunkPlan plan,
                                                        const FeederOptions& options) {
  if (dataset.max_chunk_bytes() > ring.slot_bytes()) {
    return Status::InvalidArgument("ring slots of " + std::to_string(ring.slot_bytes()) +
                                   " bytes cannot hold chunks of " +
                                   std::to_string(dataset.max_chunk_bytes()) + " bytes");
  }
  std::unique_ptr<ChunkFeeder> f(new ChunkFeeder(dataset, ring, std::move(plan), options));
  if (dataset.compressed()) {
    f->stored_slot_bytes_ = format::RoundUp(dataset.max_stored_bytes(), format::kAlign);
    // Faulted in by the reads into it (or the reader's registration), as the ring is.
    RF_ASSIGN_OR_RETURN(f->stored_, HostBuffer::Allocate(f->stored_slot_bytes_ * ring.slot_count(),
                                                         PinMode::kOff, Prefault::kOnFirstWrite));
  }
  // The reader is created on the feeder thread; the start waits to hear whether that worked.
  std::promise<Status> created;
  std::future<Status> created_future = created.get_future();
  ChunkFeeder* self = f.get();
  f->thread_ = std::thread([self, &created] {
    NameThread("rf-read");
    // Raw chunks are read into the ring's slots, compressed ones into the stored buffers (and
    // decompressed into the slots, whose pages are then faulted in by what the frames make): a
    // reader registers (pins) only the bytes its reads fill, a whole 4096 block at least.
    std::vector<iovec> slots =
        self->ring_.iovecs(std::max<uint64_t>(self->dataset_.max_raw_bytes(), format::kAlign));
    for (uint32_t i = 0; self->stored_.data() != nullptr && i < self->ring_.slot_count(); ++i)
      slots.push_back(
          iovec{self->stored_.data() + i * self->stored_slot_bytes_, self->stored_slot_bytes_});
    const FeederOptions& o = self->options_;
    auto reader = o.queue_factory ? ChunkReader::CreateWithQueue(self->dataset_, slots, o.reader,
                                                                 o.queue_factory())
                                  : ChunkReader::Create(self->dataset_, slots, o.reader);
    if (!reader.ok()) {
      self->status_ = reader.status();
      created.set_value(reader.status());
      return;
    }
    self->backend_ = (*reader)->backend();
    self->mode_ = (*reader)->mode();
    created.set_value(Status::Ok());
    self->Run(std::move(reader).value());
  });
  Status st = created_future.get();
  if (!st.ok()) {
    f->thread_.join();
    f->joined_ = true;
    return st;
  }
  return f;
}

ChunkFeeder::~ChunkFeeder() {
  if (!joined_ && thread_.joinable()) {
    ring_.Fail(Status::Aborted("reader stopped"));
    thread_.join();
  }
}

Status ChunkFeeder::Join() {
  if (!joined_) {
    thread_.join();
    joined_ = true;
  }
  return status_;
}

FeederStats ChunkFeeder::stats() const {
  FeederStats s;
  s.stored_bytes = bytes_.load(std::memory_order_relaxed);
  s.delivered_bytes = delivered_.load(std::memory_order_relaxed);
  s.stage_busy_ns = busy_ns_.load(std::memory_order_relaxed);
  s.stage_threads = stage_threads_;
  return s;
}

uint32_t ChunkFeeder::ReadBuffer(uint64_t chunk, uint32_t slot) const {
  return dataset_.chunk(chunk).entry.compressed() ? ring_.slot_count() + slot : slot;
}

void ChunkFeeder::Run(std::unique_ptr<ChunkReader> reader) {
  if (options_.verify || dataset_.compressed()) {
    stage_threads_ =
        std::min(kMaxDecodeThreads,
                 options_.decode_threads != 0 ? options_.decode_threads : DefaultDecodeThreads());
    for (uint32_t i = 0; i < stage_threads_; ++i)
      stage_.emplace_back([this] {
        NameThread("rf-chunk-stage");
        StageLoop();
      });
  }
  Status st = Feed(*reader);
  reader.reset();  // on this thread: io_uring's single issuer owns the ring
  if (!st.ok()) ring_.Fail(st);
  StopStage();  // every chunk read has been through the stage, or the ring has failed
  const Status ring = ring_.status();
  status_ = ring.ok() ? st : ring;
  if (status_.ok()) ring_.Close();
}

void ChunkFeeder::Deliver(const ChunkDone& read) {
  // The reader names the buffer it filled; the ring slot is the same index either way.
  const ChunkDone d{read.chunk, read.slot % ring_.slot_count()};
  const format::ChunkEntry& e = dataset_.chunk(d.chunk).entry;
  if (Trace::Active() != nullptr && submitted_ns_[d.slot] != 0) {
    TraceSpan("read", "read", submitted_ns_[d.slot], Trace::NowNs(),
              "{\"chunk\":" + std::to_string(d.chunk) + "}");
  }
  bytes_.fetch_add(e.stored_bytes, std::memory_order_relaxed);
  if (!options_.verify && !e.compressed()) {
    // No checksum, but the labels and records still: a label the model cannot take would stop
    // training later with a message that names no file, and a record table must hold before a
    // record is read (Dataset::CheckData is one pass over them).
    if (Status st = dataset_.CheckData(d.chunk, ring_.data(d.slot)); !st.ok()) {
      ring_.Fail(std::move(st));
      return;
    }
    delivered_.fetch_add(e.data_bytes, std::memory_order_relaxed);
    ring_.MarkReady(d.slot, d.chunk, e.data_bytes);
    return;
  }
  {
    std::lock_guard lock(stage_mu_);
    staged_.push_back(d);
  }
  stage_cv_.notify_one();
}

Result<uint64_t> ChunkFeeder::Prepare(uint64_t chunk, uint32_t slot, Decompressor& d) {
  const format::ChunkEntry& e = dataset_.chunk(chunk).entry;
  if (!e.compressed()) {
    const Trace::Scope span("verify", "verify");
    RF_RETURN_IF_ERROR(dataset_.VerifyChunk(chunk, ring_.data(slot)));
    return e.data_bytes;
  }
  const uint8_t* stored = stored_.data() + slot * stored_slot_bytes_;
  if (options_.verify) {
    const Trace::Scope span("verify", "verify");
    RF_RETURN_IF_ERROR(dataset_.VerifyStored(chunk, stored));
  }
  const Trace::Scope span("decompress", "decompress");
  RF_RETURN_IF_ERROR(dataset_.DecodeChunk(chunk, stored, ring_.data(slot), d));
  return e.data_bytes;
}

void ChunkFeeder::StageLoop() {
  Decompressor decompressor;  // this thread's
  for (;;) {
    ChunkDone d;
    {
      std::unique_lock lock(stage_mu_);
      stage_cv_.wait(lock, [&] { return !staged_.empty() || stage_done_; });
      if (staged_.empty()) return;
      d = staged_.front();
      staged_.pop_front();
    }
    const uint64_t start = SteadyNowNs();
    Result<uint64_t> bytes = Prepare(d.chunk, d.slot, decompressor);
    busy_ns_.fetch_add(SteadyNowNs() - start, std::memory_order_relaxed);
    if (!bytes.ok()) {
      ring_.Fail(bytes.status());
      continue;  // keep draining so StopStage returns
    }
    delivered_.fetch_add(*bytes, std::memory_order_relaxed);
    ring_.MarkReady(d.slot, d.chunk, *bytes);
  }
}

void ChunkFeeder::StopStage() {
  {
    std::lock_guard lock(stage_mu_);
    stage_done_ = true;
  }
  stage_cv_.notify_all();
  for (std::thread& t : stage_) t.join();
  stage_.clear();
}

Status ChunkFeeder::Feed(ChunkReader& reader) {
  std::vector<ChunkDone> done;
  done.reserve(ring_.slot_count());
  // The plan's next chunk, taken from it but not yet submitted (a plain value and a flag rather
  // than an optional: GCC 12 reports the optional's value as maybe uninitialized).
  uint64_t next = 0;
  bool have_next = false, plan_done = false;
  for (;;) {
    // Put every free slot to work. Block for one only when nothing is in flight.
    while (!plan_done) {
      if (!have_next) {
        const std::optional<uint64_t> c = plan_();
        if (!c.has_value()) {
          plan_done = true;
          break;
        }
        if (*c >= dataset_.chunk_count()) {
          return Status::InvalidArgument("chunk " + std::to_string(*c) + " is not in the dataset");
        }
        next = *c;
        have_next = true;
      }
      std::optional<uint32_t> slot =
          reader.outstanding() == 0 ? ring_.AcquireFree() : ring_.TryAcquireFree();
      if (!slot) {
        if (!ring_.status().ok()) return ring_.status();  // the consumer stopped
        break;
      }
      if (Trace::Active() != nullptr) submitted_ns_[*slot] = Trace::NowNs();
      RF_RETURN_IF_ERROR(reader.Submit(next, ReadBuffer(next, *slot)));
      have_next = false;
    }
    if (reader.outstanding() == 0) return Status::Ok();
    done.clear();
    RF_RETURN_IF_ERROR(reader.Wait(done, 1));
    for (const ChunkDone& d : done) Deliver(d);
  }
}

}  // namespace rf
