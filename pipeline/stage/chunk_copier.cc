#include "pipeline/stage/chunk_copier.h"

#include <string>

#include "core/thread_name.h"
#include "pipeline/stage/trace.h"

namespace rf {

ChunkCopier::ChunkCopier(SlotRing& ring, ChunkStaging& staging)
    : ring_(ring), staging_(staging), release_args_(ring.slot_count()) {
  const uint32_t slots = staging.layout().slots;
  for (uint32_t s = slots; s-- > 0;) free_slots_.push_back(s);
  slot_of_seq_.assign(2 * size_t{slots} + 2, kNoSlot);
}

std::unique_ptr<ChunkCopier> ChunkCopier::Start(SlotRing& ring, ChunkStaging& staging) {
  std::unique_ptr<ChunkCopier> c(new ChunkCopier(ring, staging));
  c->thread_ = std::thread([p = c.get()] {
    NameThread("rf-copy");
    p->Loop();
  });
  return c;
}

ChunkCopier::~ChunkCopier() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // No more copies are queued now; wait for those queued (on the GPU: their host callbacks, which
  // read release_args_, run in stream order after the copies). Nothing to do with the error: the
  // source that stops its copier drains and reports again.
  (void)staging_.Drain();
}

void ChunkCopier::ReleaseRingSlot(void* arg) {
  const auto* a = static_cast<const ReleaseArg*>(arg);
  if (a->copy_start_ns != 0) TraceSpan("copy", "copy", a->copy_start_ns, Trace::NowNs());
  a->ring->Release(a->slot);
}

uint32_t ChunkCopier::TakeFreeSlot() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return stopping_ || !free_slots_.empty(); });
  if (stopping_) return kNoSlot;
  const uint32_t s = free_slots_.back();
  free_slots_.pop_back();
  return s;
}

void ChunkCopier::Loop() {
  Status st;
  for (uint64_t seq = 0;; ++seq) {
    const std::optional<SlotRing::Filled> f = ring_.AcquireReady();
    if (!f) {
      st = ring_.status();  // OK: the plan is read to its end
      break;
    }
    const uint32_t dst = TakeFreeSlot();
    if (dst == kNoSlot) {
      ring_.Release(f->slot);
      break;
    }
    ReleaseArg& arg = release_args_[f->slot];
    arg = ReleaseArg{&ring_, f->slot, Trace::Active() != nullptr ? Trace::NowNs() : 0};
    st = staging_.CopyIn(dst, ring_.data(f->slot), f->bytes, &ReleaseRingSlot, &arg);
    if (!st.ok()) {
      ring_.Fail(st);
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
    done_ = true;
    if (!stopping_) status_ = st;
  }
  cv_.notify_all();
}

Result<uint64_t> ChunkCopier::AwaitCopied(uint64_t first, uint32_t count, uint32_t* slots,
                                          const std::function<Status()>& poll) {
  const uint64_t last = first + count - 1;
  uint64_t waited = 0;
  std::unique_lock lock(mu_);
  if (copied_ <= last) {
    const uint64_t t0 = Trace::NowNs();
    const auto ready = [&] { return copied_ > last || done_; };
    if (!poll) cv_.wait(lock, ready);
    while (poll && !cv_.wait_for(lock, kPollInterval, ready)) {
      lock.unlock();
      Status st = poll();
      lock.lock();
      if (!st.ok()) return st;
    }
    waited = Trace::NowNs() - t0;
    if (copied_ <= last) {
      if (!status_.ok()) return status_;
      if (!ring_.status().ok()) return ring_.status();
      return Status::Aborted("the chunk plan ended at position " + std::to_string(copied_) +
                             ", before position " + std::to_string(last));
    }
  }
  for (uint32_t k = 0; k < count; ++k) slots[k] = slot_of_seq_[(first + k) % slot_of_seq_.size()];
  return waited;
}

void ChunkCopier::Free(const std::vector<uint32_t>& slots) {
  {
    std::lock_guard lock(mu_);
    free_slots_.insert(free_slots_.end(), slots.begin(), slots.end());
  }
  cv_.notify_all();
}

}  // namespace rf
