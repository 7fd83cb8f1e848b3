// ChunkFeeder: the disk stage and the chunk stage. A thread that reads a sequence of chunks, and
// a pool of threads that makes each read chunk ready for the consumer:
//
//   I/O thread      take the next free ring slot -> ChunkReader::Submit (into the slot, or, for
//                   a compressed chunk, into the slot's stored buffer) -> ... completion ->
//   chunk stage     verify the stored bytes' checksum -> decompress into the slot (format
//   (decode_threads) version 2; the data size enforced) -> check the labels -> MarkReady
//
// The I/O thread keeps up to the reader's queue depth of reads in flight and every free slot
// busy: it never waits for the stage, only for free slots (the consumer). The ring hands chunks
// to the consumer in sequence order whatever order the reads and the stage complete in. A raw
// chunk read without verification skips the stage (its labels are checked on the I/O thread).
// Any error (a failed read, a checksum mismatch, a damaged frame) fails the ring with a Status
// naming file, chunk and offset, which wakes the consumer; a consumer that fails the ring stops
// the feeder.
//
// Memory, fixed at Start: where the dataset has compressed chunks, one stored buffer per ring
// slot (the largest stored chunk each), registered with the reader beside the slots.
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
#include "pipeline/stage/host_buffer.h"
#include "pipeline/stage/slot_ring.h"

namespace rf {

struct FeederOptions {
  ReaderOptions reader;
  bool verify = true;  // check every chunk's XXH3 before the consumer sees it
  // The chunk stage's threads (verify, decompress), beside the I/O thread; 0 is
  // DefaultDecodeThreads().
  uint32_t decode_threads = 0;
  // For tests: the reader's queue, instead of io_uring or pread (see ChunkReader::CreateWithQueue).
  std::function<std::unique_ptr<IoQueue>()> queue_factory;
};

// The chunks to read, in delivery order, one at a time: the next global chunk number, or
// std::nullopt where the plan ends. Called on the feeder thread only, once per chunk, just before
// the chunk's read is submitted, so a plan can be generated as the reads go and can be endless:
// the ring's free slots bound how far ahead of the consumer it is asked.
using ChunkPlan = std::function<std::optional<uint64_t>()>;

// The chunk stage's threads where none are given: half the cores this process may use, shared
// with the other ranks on the machine (OMPI_COMM_WORLD_LOCAL_SIZE or torchrun's
// LOCAL_WORLD_SIZE), from 2 to 8.
uint32_t DefaultDecodeThreads();
inline constexpr uint32_t kMaxDecodeThreads = 256;

// What the feeder has done so far (any thread may ask, at any time).
struct FeederStats {
  uint64_t stored_bytes = 0;     // read from disk
  uint64_t delivered_bytes = 0;  // handed to the consumer: the chunks' data, decompressed
  uint64_t stage_busy_ns = 0;    // the chunk stage's threads' working time, summed
  uint32_t stage_threads = 0;    // 0 where the stage has no work (raw chunks, no verify)
};

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
  FeederStats stats() const;

 private:
  ChunkFeeder(const Dataset& d, SlotRing& r, ChunkPlan plan, const FeederOptions& o);
  void Run(std::unique_ptr<ChunkReader> reader);
  Status Feed(ChunkReader& reader);
  // Hands a read chunk on: to the chunk stage, or straight to the consumer.
  void Deliver(const ChunkDone& d);
  void StageLoop();
  // Verifies (where asked) and decodes the chunk of ring slot `slot`; its data bytes.
  Result<uint64_t> Prepare(uint64_t chunk, uint32_t slot, Decompressor& d);
  void StopStage();
  // Where the reader puts chunk `chunk` of ring slot `slot`: the slot, or its stored buffer
  // (reader buffer slot_count() + slot) for a compressed chunk.
  uint32_t ReadBuffer(uint64_t chunk, uint32_t slot) const;

  const Dataset& dataset_;
  SlotRing& ring_;
  ChunkPlan plan_;  // the feeder thread's alone once started
  FeederOptions options_;
  const char* backend_ = "";
  IoMode mode_ = IoMode::kDirect;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> delivered_{0};
  std::atomic<uint64_t> busy_ns_{0};
  uint32_t stage_threads_ = 0;
  HostBuffer stored_;  // per slot, the stored extent of a compressed chunk
  uint64_t stored_slot_bytes_ = 0;
  std::vector<uint64_t> submitted_ns_;  // per ring slot, while a trace is active
  std::thread thread_;
  Status status_;

  // Chunks read and waiting for the stage (ChunkDone.slot: the ring slot). Bounded by the ring:
  // at most one per slot.
  std::mutex stage_mu_;
  std::condition_variable stage_cv_;
  std::deque<ChunkDone> staged_;
  bool stage_done_ = false;  // the I/O thread will queue no more
  std::vector<std::thread> stage_;
  bool joined_ = false;
};

}  // namespace rf
