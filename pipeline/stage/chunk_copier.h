// ChunkCopier: the streaming source's copy stage, a thread between the disk stage (ChunkFeeder
// filling a SlotRing) and the staging area the backend computes from:
//
//   ring slot ready (plan position seq) -> a free staging slot -> ChunkStaging::CopyIn (a copy
//   stream on the GPU) -> the ring slot goes back to the reader once the copy has read it
//
// The compute thread asks which staging slots hold a run of plan positions (AwaitCopied, which
// blocks until they are copied in) and hands slots back once it has retired them (Free). The
// staging slots are handed out in plan order, so the copier never runs more than the staging
// area's size ahead of the slots the compute side has freed.
//
// Lifetime: the ring and the staging area must outlive the copier. To stop it early, fail the
// ring (its AcquireReady returns then) and destroy the copier, which wakes and joins the thread,
// then drains the staging area: each queued copy's release callback reads an argument the copier
// owns (release_args_), so the copier outlives every callback it queued.
//
// Thread safety: AwaitCopied and Free are called from one thread (the compute thread); the
// copier's own thread does the rest. The release callback may run on a CUDA host-callback
// thread: it only takes the ring's mutex.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "pipeline/stage/chunk_staging.h"
#include "pipeline/stage/slot_ring.h"

namespace rf {

class ChunkCopier {
 public:
  // Starts the copy thread over `ring`'s chunks, plan position 0 first, into `staging`'s slots
  // (every slot free).
  static std::unique_ptr<ChunkCopier> Start(SlotRing& ring, ChunkStaging& staging);
  ~ChunkCopier();
  ChunkCopier(const ChunkCopier&) = delete;
  ChunkCopier& operator=(const ChunkCopier&) = delete;

  // Blocks until plan positions first .. first + count - 1 are copied in, then writes their
  // staging slots to slots[0 .. count-1] and returns the nanoseconds it blocked. Fails with the
  // copy's or the ring's error, or Aborted where the plan ended before those positions. `poll`,
  // where set, is called every kPollInterval while it blocks; a status other than OK from it ends
  // the wait and is returned (the copier goes on: the positions can be awaited again).
  static constexpr std::chrono::milliseconds kPollInterval{100};
  Result<uint64_t> AwaitCopied(uint64_t first, uint32_t count, uint32_t* slots,
                               const std::function<Status()>& poll = {});
  // Hands staging slots back for later chunks (after ChunkStaging::Retire).
  void Free(const std::vector<uint32_t>& slots);

 private:
  ChunkCopier(SlotRing& ring, ChunkStaging& staging);
  void Loop();
  uint32_t TakeFreeSlot();  // blocks; kNoSlot once stopping
  static void ReleaseRingSlot(void* arg);

  static constexpr uint32_t kNoSlot = 0xffffffffu;

  SlotRing& ring_;
  ChunkStaging& staging_;
  struct ReleaseArg {
    SlotRing* ring;
    uint32_t slot;
    uint64_t copy_start_ns;  // 0 unless a trace is active
  };
  std::vector<ReleaseArg> release_args_;  // one per ring slot: the copier thread's alone

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint32_t> free_slots_;
  // Staging slot of plan position seq, at seq % size. Large enough that an entry is not
  // overwritten before it is read: positions run at most the staging area's size ahead.
  std::vector<uint32_t> slot_of_seq_;
  uint64_t copied_ = 0;  // plan positions copied in
  bool done_ = false, stopping_ = false;
  Status status_;  // the copy's own failure, once done_
  std::thread thread_;
};

}  // namespace rf
