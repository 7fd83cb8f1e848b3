// SlotRing: a fixed ring of equal-sized host buffers ("slots") that carry chunks from the reader
// to the consumer, with an explicit state per slot:
//
//   kFree --AcquireFree--> kFilling --MarkReady--> kReady --AcquireReady--> kInUse --Release-->
//   kFree
//
// Order: the producer is handed slots in ring order, one per sequence number, and the consumer
// takes them in the same order, so chunks come out in the order they were scheduled however the
// reads complete. A slot the consumer still holds stops the producer at that slot (back-pressure);
// a slot the producer has not filled stops the consumer (the consumer waits for data).
//
// Failure: Fail(status) from either side wakes every waiter; from then on AcquireFree and
// AcquireReady return nullopt and status() says why, so a failed stage never deadlocks the other.
// Close() is the producer's end of data: the consumer drains what is ready, then gets nullopt
// with an OK status.
//
// Memory: one HostBuffer holding every slot, allocated (and, by the reader, registered) once.
//
// Thread safety: one producer thread and one consumer thread; Fail() and the accessors may be
// called from any thread.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "core/status.h"
#include "pipeline/stage/host_buffer.h"

namespace rf {

class SlotRing {
 public:
  enum class State : uint8_t { kFree, kFilling, kReady, kInUse };

  // What the producer put in a slot.
  struct Filled {
    uint32_t slot = 0;
    uint64_t seq = 0;    // position in the delivery order
    uint64_t chunk = 0;  // global chunk number
    uint64_t bytes = 0;  // valid bytes at data(slot)
  };

  static Result<std::unique_ptr<SlotRing>> Create(uint32_t slots, uint64_t slot_bytes, PinMode pin);

  uint32_t slot_count() const { return static_cast<uint32_t>(states_.size()); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  bool pinned() const { return memory_.pinned(); }
  size_t huge_page_bytes() const { return memory_.HugePageBytes(); }
  uint8_t* data(uint32_t slot) const { return memory_.data() + slot * slot_bytes_; }
  // One iovec per slot, for registering the slots with the reader: the first `bytes` of each
  // (at most slot_bytes()), where reads land. A ring whose slots are also decompressed into
  // registers only what its raw chunks fill, so the kernel pins no more than the reads need.
  std::vector<iovec> iovecs(uint64_t bytes = UINT64_MAX) const;

  // Producer. Blocks until the next slot in ring order is free; marks it kFilling.
  std::optional<uint32_t> AcquireFree();
  // Non-blocking AcquireFree: nullopt if the next slot is not free (or the ring failed).
  std::optional<uint32_t> TryAcquireFree();
  // kFilling -> kReady: `slot` now holds `bytes` bytes of global chunk `chunk`.
  void MarkReady(uint32_t slot, uint64_t chunk, uint64_t bytes);
  // No more MarkReady calls will come.
  void Close();

  // Consumer. Blocks until the next slot in order is ready; marks it kInUse. nullopt at the
  // end of data (status() OK) or after a failure (status() says why).
  std::optional<Filled> AcquireReady();
  // kInUse -> kFree. Slots may be released in any order.
  void Release(uint32_t slot);

  // Wakes every waiter; the first failure is kept.
  void Fail(Status st);
  Status status() const;
  State state(uint32_t slot) const;

  // Time the consumer spent blocked in AcquireReady, and the producer in AcquireFree (ns).
  uint64_t consumer_wait_ns() const { return consumer_wait_ns_.load(); }
  uint64_t producer_wait_ns() const { return producer_wait_ns_.load(); }

 private:
  SlotRing(HostBuffer memory, uint32_t slots, uint64_t slot_bytes);
  uint32_t TakeNextFreeLocked();  // kFree -> kFilling for the producer's next slot
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  HostBuffer memory_;
  uint64_t slot_bytes_;
  mutable std::mutex mu_;
  std::condition_variable free_cv_;   // a slot became free, or failure
  std::condition_variable ready_cv_;  // a slot became ready, close, or failure
  std::vector<State> states_;
  std::vector<Filled> filled_;
  uint64_t produce_seq_ = 0;  // next sequence number the producer is handed
  uint64_t consume_seq_ = 0;  // next sequence number the consumer takes
  bool closed_ = false;
  std::atomic<bool> failed_{false};
  Status status_;
  std::atomic<uint64_t> consumer_wait_ns_{0};
  std::atomic<uint64_t> producer_wait_ns_{0};
};

}  // namespace rf
