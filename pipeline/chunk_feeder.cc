#include "pipeline/chunk_feeder.h"

#include <algorithm>
#include <future>
#include <string>

#include "pipeline/trace.h"

namespace rf {

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
  // The reader is created on the feeder thread; the start waits to hear whether that worked.
  std::promise<Status> created;
  std::future<Status> created_future = created.get_future();
  ChunkFeeder* self = f.get();
  f->thread_ = std::thread([self, &created] {
    const std::vector<iovec> slots = self->ring_.iovecs();
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

void ChunkFeeder::Run(std::unique_ptr<ChunkReader> reader) {
  if (options_.verify) {
    for (uint32_t i = 0; i < std::max<uint32_t>(1, options_.verify_threads); ++i)
      verifiers_.emplace_back([this] { VerifyLoop(); });
  }
  Status st = Feed(*reader);
  reader.reset();  // on this thread: io_uring's single issuer owns the ring
  if (!st.ok()) ring_.Fail(st);
  StopVerifiers();  // every chunk read has been verified, or the ring has failed
  const Status ring = ring_.status();
  status_ = ring.ok() ? st : ring;
  if (status_.ok()) ring_.Close();
}

void ChunkFeeder::Deliver(const ChunkDone& d) {
  const uint64_t bytes = dataset_.chunk(d.chunk).entry.stored_bytes;
  if (Trace::Active() != nullptr && submitted_ns_[d.slot] != 0) {
    TraceSpan("read", "read", submitted_ns_[d.slot], Trace::NowNs(),
              "{\"chunk\":" + std::to_string(d.chunk) + "}");
  }
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (!options_.verify) {
    // No checksum, but the labels still: a label the model cannot take would stop training
    // later with a message that names no file (Dataset::CheckLabels is one pass over them).
    if (Status st = dataset_.CheckLabels(d.chunk, ring_.data(d.slot)); !st.ok()) {
      ring_.Fail(std::move(st));
      return;
    }
    ring_.MarkReady(d.slot, d.chunk, bytes);
    return;
  }
  {
    std::lock_guard lock(verify_mu_);
    to_verify_.push_back(d);
  }
  verify_cv_.notify_one();
}

void ChunkFeeder::VerifyLoop() {
  for (;;) {
    ChunkDone d;
    {
      std::unique_lock lock(verify_mu_);
      verify_cv_.wait(lock, [&] { return !to_verify_.empty() || verify_done_; });
      if (to_verify_.empty()) return;
      d = to_verify_.front();
      to_verify_.pop_front();
    }
    Status st;
    {
      const Trace::Scope span("verify", "verify");
      st = dataset_.VerifyChunk(d.chunk, ring_.data(d.slot));
    }
    if (!st.ok()) {
      ring_.Fail(std::move(st));
      continue;  // keep draining so StopVerifiers returns
    }
    ring_.MarkReady(d.slot, d.chunk, dataset_.chunk(d.chunk).entry.stored_bytes);
  }
}

void ChunkFeeder::StopVerifiers() {
  {
    std::lock_guard lock(verify_mu_);
    verify_done_ = true;
  }
  verify_cv_.notify_all();
  for (std::thread& t : verifiers_) t.join();
  verifiers_.clear();
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
      RF_RETURN_IF_ERROR(reader.Submit(next, *slot));
      have_next = false;
    }
    if (reader.outstanding() == 0) return Status::Ok();
    done.clear();
    RF_RETURN_IF_ERROR(reader.Wait(done, 1));
    for (const ChunkDone& d : done) Deliver(d);
  }
}

}  // namespace rf
