#include "pipeline/stage/slot_ring.h"

#include <algorithm>

#include "core/clock.h"
#include "io/format.h"

namespace rf {

Result<std::unique_ptr<SlotRing>> SlotRing::Create(uint32_t slots, uint64_t slot_bytes,
                                                   PinMode pin) {
  if (slots < 2) return Status::InvalidArgument("the ring needs at least 2 slots");
  slot_bytes = format::RoundUp(slot_bytes, format::kAlign);
  // Faulted in by the reads (or by io_uring's registration of the slots), not by a pass of its
  // own before the first read: the loader's start waits for no more than its first chunks.
  // Pinned memory is faulted in at once all the same (HostBuffer).
  RF_ASSIGN_OR_RETURN(HostBuffer mem,
                      HostBuffer::Allocate(slot_bytes * slots, pin, Prefault::kOnFirstWrite));
  return std::unique_ptr<SlotRing>(new SlotRing(std::move(mem), slots, slot_bytes));
}

SlotRing::SlotRing(HostBuffer memory, uint32_t slots, uint64_t slot_bytes)
    : memory_(std::move(memory)),
      slot_bytes_(slot_bytes),
      states_(slots, State::kFree),
      filled_(slots) {}

std::vector<iovec> SlotRing::iovecs(uint64_t bytes) const {
  std::vector<iovec> v(slot_count());
  const uint64_t len = std::min(slot_bytes_, bytes);
  for (uint32_t i = 0; i < slot_count(); ++i) v[i] = iovec{data(i), len};
  return v;
}

uint32_t SlotRing::TakeNextFreeLocked() {
  const uint32_t slot = static_cast<uint32_t>(produce_seq_ % states_.size());
  states_[slot] = State::kFilling;
  filled_[slot] = Filled{slot, produce_seq_, 0, 0};
  ++produce_seq_;
  return slot;
}

std::optional<uint32_t> SlotRing::TryAcquireFree() {
  std::lock_guard lock(mu_);
  const uint32_t slot = static_cast<uint32_t>(produce_seq_ % states_.size());
  if (failed() || states_[slot] != State::kFree) return std::nullopt;
  return TakeNextFreeLocked();
}

std::optional<uint32_t> SlotRing::AcquireFree() {
  std::unique_lock lock(mu_);
  const uint32_t slot = static_cast<uint32_t>(produce_seq_ % states_.size());
  if (!failed() && states_[slot] != State::kFree) {
    const uint64_t t0 = SteadyNowNs();
    free_cv_.wait(lock, [&] { return failed() || states_[slot] == State::kFree; });
    producer_wait_ns_ += SteadyNowNs() - t0;
  }
  if (failed()) return std::nullopt;
  return TakeNextFreeLocked();
}

void SlotRing::MarkReady(uint32_t slot, uint64_t chunk, uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    states_[slot] = State::kReady;
    filled_[slot].chunk = chunk;
    filled_[slot].bytes = bytes;
  }
  ready_cv_.notify_all();
}

void SlotRing::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  ready_cv_.notify_all();
}

std::optional<SlotRing::Filled> SlotRing::AcquireReady() {
  std::unique_lock lock(mu_);
  const uint32_t slot = static_cast<uint32_t>(consume_seq_ % states_.size());
  // The consumer's slot is next once the producer has been handed it and filled it.
  auto ready = [&] { return states_[slot] == State::kReady && filled_[slot].seq == consume_seq_; };
  auto done = [&] { return failed() || (closed_ && consume_seq_ >= produce_seq_); };
  if (!ready() && !done()) {
    const uint64_t t0 = SteadyNowNs();
    ready_cv_.wait(lock, [&] { return ready() || done(); });
    consumer_wait_ns_ += SteadyNowNs() - t0;
  }
  if (failed() || !ready()) return std::nullopt;
  states_[slot] = State::kInUse;
  ++consume_seq_;
  return filled_[slot];
}

void SlotRing::Release(uint32_t slot) {
  {
    std::lock_guard lock(mu_);
    states_[slot] = State::kFree;
  }
  free_cv_.notify_all();
}

void SlotRing::Fail(Status st) {
  {
    std::lock_guard lock(mu_);
    if (!failed()) {
      status_ = std::move(st);
      failed_.store(true, std::memory_order_release);
    }
  }
  free_cv_.notify_all();
  ready_cv_.notify_all();
}

Status SlotRing::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

SlotRing::State SlotRing::state(uint32_t slot) const {
  std::lock_guard lock(mu_);
  return states_[slot];
}

}  // namespace rf
