// ChunkFeeder: the disk stage. A thread that reads a sequence of chunks into a SlotRing:
//
//   take the next free slot -> ChunkReader::Submit -> ... completion -> verify checksum ->
//   MarkReady
//
// keeping up to the reader's queue depth of reads in flight and every free slot busy. The ring
// hands chunks to the consumer in sequence order whatever order the reads complete in. Any
// error (a failed read, a checksum mismatch) fails the ring with a Status naming file, chunk
// and offset, which wakes the consumer; a consumer that fails the ring stops the feeder.
//
// The io_uring ring is created on the feeder thread itself (io_uring's single-issuer setup
// requires the submitting thread to be the creating one).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "pipeline/slot_ring.h"

namespace rf {

struct FeederOptions {
  ReaderOptions reader;
  bool verify = true;           // check every chunk's XXH3 before the consumer sees it
  uint32_t verify_threads = 2;  // threads that verify, beside the I/O thread
  // For tests: the reader's queue, instead of io_uring or pread (see ChunkReader::CreateWithQueue).
  std::function<std::unique_ptr<IoQueue>()> queue_factory;
};

// The chunks to read, in delivery order, one at a time: the next global chunk number, or
// std::nullopt where the plan ends. Called on the feeder thread only, once per chunk, just before
// the chunk's read is submitted, so a plan can be generated as the reads go and can be endless:
// the ring's free slots bound how far ahead of the consumer it is asked.
using ChunkPlan = std::function<std::optional<uint64_t>()>;

class ChunkFeeder {
 public:
  // Starts reading `order` (global chunk numbers, in delivery order) into `ring`. `dataset` and
  // `ring` must outlive the feeder. Fails, without starting, if the reader cannot be set up, a
  // chunk does not fit a slot or is not in the dataset.
  static Result<std::unique_ptr<ChunkFeeder>> Start(const Dataset& dataset, SlotRing& ring,
                                                    std::vector<uint64_t> order,
                                                    const FeederOptions& options);
  // The same, reading the chunks `plan` gives. A chunk not in the dataset fails the ring (with
  // InvalidArgument) when the plan gives it.
  static Result<std::unique_ptr<ChunkFeeder>> Start(const Dataset& dataset, SlotRing& ring,
                                                    ChunkPlan plan, const FeederOptions& options);
  // Stops a running feeder (failing the ring with Aborted) and joins it.
  ~ChunkFeeder();

  // Waits for the feeder to finish; its Status (OK after the last chunk was handed over).
  Status Join();

  const char* backend() const { return backend_; }
  IoMode mode() const { return mode_; }
  uint64_t bytes_read() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  ChunkFeeder(const Dataset& d, SlotRing& r, ChunkPlan plan, const FeederOptions& o);
  void Run(std::unique_ptr<ChunkReader> reader);
  Status Feed(ChunkReader& reader);
  // Hands a read chunk on: to the verifiers, or straight to the consumer.
  void Deliver(const ChunkDone& d);
  void VerifyLoop();
  void StopVerifiers();

  const Dataset& dataset_;
  SlotRing& ring_;
  ChunkPlan plan_;  // the feeder thread's alone once started
  FeederOptions options_;
  const char* backend_ = "";
  IoMode mode_ = IoMode::kDirect;
  std::atomic<uint64_t> bytes_{0};
  std::vector<uint64_t> submitted_ns_;  // per ring slot, while a trace is active
  std::thread thread_;
  Status status_;

  // Chunks read and waiting for a verifier. Bounded by the ring: at most one per slot.
  std::mutex verify_mu_;
  std::condition_variable verify_cv_;
  std::deque<ChunkDone> to_verify_;
  bool verify_done_ = false;  // the I/O thread will queue no more
  std::vector<std::thread> verifiers_;
  bool joined_ = false;
};

}  // namespace rf
