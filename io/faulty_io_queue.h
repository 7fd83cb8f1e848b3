// FaultyIoQueue: an IoQueue decorator that wraps any IoQueue (io_uring, pread, a test's) and
// answers chosen reads with faults, following a FaultPlan (io/fault_plan.h has the grammar):
//   eio / eagain / eintr  the request never reaches the inner queue; its completion is -errno,
//                         and its destination is first filled with 0xa5, so a reader that kept
//                         the bytes of a failed read would hand on a wrong batch (it must not)
//   short=BYTES           the request goes to the inner queue whole; its result is cut to BYTES
//                         (the reader must ask for the rest)
//   delay=TIME            the completion is held back TIME after the inner queue gave it; the
//                         other reads complete meanwhile, so the one slow read stalls its chunk
//                         while the rest of the pipeline reads ahead as far as its slots allow
//   reorder               Wait() gathers every request in flight and hands them over newest
//                         first, so completions never come in submission order
// The layer picks a request's faults by IoRequest::chunk, which ChunkReader sets, and by how
// many requests for that chunk it has seen (retries and continuations included).
//
// The shipped programs: ChunkReader::Create wraps its queue with WrapWithFaultsFromEnv, which
// returns the queue untouched (no wrapper, no cost) unless RINGFEED_FAULTS is set. Where it is,
// the first wrap in the process says so once on stderr, with the plan, so a faulted run is
// never mistaken for a healthy one.
//
// Ownership: owns the inner queue. Buffers and files are the inner queue's (registered through
// this one). Thread safety: none; one thread owns a queue, as with any IoQueue.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "io/fault_plan.h"
#include "io/io_queue.h"

namespace rf {

class FaultyIoQueue final : public IoQueue {
 public:
  FaultyIoQueue(std::unique_ptr<IoQueue> inner, FaultPlan plan);

  Status RegisterFiles(std::span<const int> fds) override { return inner_->RegisterFiles(fds); }
  Status RegisterBuffers(std::span<const iovec> buffers) override {
    return inner_->RegisterBuffers(buffers);
  }
  uint32_t capacity() const override { return inner_->capacity(); }
  // At most capacity() requests may be prepared or in flight, failed ones included.
  void Prepare(const IoRequest& r) override;
  Status Submit() override;
  // Blocks until `min` completions are there (a delayed one counts once its delay is over).
  Status Wait(std::vector<IoCompletion>& out, uint32_t min) override;
  // The inner queue's: a faulted run reports the backend it really reads with.
  const char* name() const override { return inner_->name(); }
  bool reads_local_files() const override { return inner_->reads_local_files(); }
  Status TakeFailure(uint32_t failure) override { return inner_->TakeFailure(failure); }

  // Requests answered with a fault so far.
  uint64_t faults_fired() const { return faults_fired_; }

 private:
  using Clock = std::chrono::steady_clock;
  // A request in the inner queue: its caller's user_data and what to do to its completion. Its
  // index in `tags_` is the inner request's user_data.
  struct Tag {
    uint64_t user_data = 0;
    uint32_t short_bytes = 0;  // 0: none
    std::chrono::milliseconds delay{0};
  };
  struct Held {
    IoCompletion c;
    Clock::time_point due;
  };

  // Takes the inner queue's completions (at least one if `block`), applying their faults.
  Status TakeInner(std::vector<IoCompletion>& out, bool block);

  std::unique_ptr<IoQueue> inner_;
  const FaultPlan plan_;
  std::unordered_map<uint64_t, uint32_t> requests_;  // per chunk: requests seen
  std::vector<Tag> tags_;
  std::vector<uint32_t> free_tags_;
  std::vector<IoCompletion> staged_;  // failed at Prepare, due at the next Submit
  std::vector<IoCompletion> failed_;  // failed and submitted: the next Wait hands them over
  std::vector<Held> held_;            // delayed
  std::vector<IoCompletion> inner_out_;
  uint32_t inner_prepared_ = 0, inner_in_flight_ = 0;
  uint64_t faults_fired_ = 0;
};

// `queue` wrapped in a FaultyIoQueue following RINGFEED_FAULTS, or `queue` itself where that is
// unset or empty; Usage where the spec is malformed.
Result<std::unique_ptr<IoQueue>> WrapWithFaultsFromEnv(std::unique_ptr<IoQueue> queue);

}  // namespace rf
