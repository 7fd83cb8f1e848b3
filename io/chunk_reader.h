// ChunkReader: reads whole chunks of a Dataset into caller-owned buffers, many at once.
//
// A chunk is split into reads of at most `read_bytes`; at most `queue_depth` reads are in
// flight, spread over every shard file, so N shards on N drives are read in parallel. A short
// read is normal: the rest is resubmitted. -EAGAIN and -EINTR are retried at once (a bounded
// number of times). -EIO is retried a few times after a short backoff (a transient device or
// transport error: a cable, a path failover, a drive's internal retry that timed out); a read
// that then succeeds overwrites whatever the failed one left, so its bytes are the file's. Any
// other error (EBADF, EINVAL, EFAULT, ...: a bug or a setup problem that a retry cannot fix) and
// an -EIO that outlasts its retries end the chunk with a Status naming the file, chunk, byte
// offset and errno, and how many attempts were made. Chunks complete in any order; checksums are
// the caller's to verify (Dataset::VerifyChunk), so that verification can run off the I/O
// thread.
//
// Faults: Create() wraps its queue in a FaultyIoQueue where RINGFEED_FAULTS is set
// (io/faulty_io_queue.h, io/fault_plan.h), so whole-program tests can plant read errors; a
// malformed spec fails Create() with Usage.
//
// Modes: kDirect (O_DIRECT, the default: the page cache is bypassed, reads land straight in the
// buffers), kBuffered (through the page cache). Where io_uring cannot be set up, the reader
// falls back to pread and says so once on stderr; where a file system refuses O_DIRECT, it
// falls back to buffered reads of that file and says so once.
//
// Remote datasets (Dataset::remote()): the reads go to an HttpQueue (io/http_queue.h) instead,
// as range requests of each file's object, min(queue_depth, the remote max_in_flight) in flight;
// a failed one (after the fetcher's retries) ends the chunk with the fetcher's Status (the
// object's shown name, the range, the HTTP status) and the chunk. The mode does not apply.
//
// A remote dataset with a node-local cache (Dataset::cache(), io/chunk_cache.h): each chunk is
// claimed as its read is submitted (ChunkCache::Started, then Claim). A cached copy is read from
// its file through a second, local queue (io_uring, O_DIRECT in kDirect mode), up to queue_depth
// reads beside the remote ones, and its checksum is checked on this thread once it is whole: a
// copy of another size, one that cannot be read, or one whose checksum does not hold is removed
// from the cache and the chunk fetched instead (the cache heals; the caller never sees it). A
// chunk this process claimed is, once fetched, handed to a CacheFiller (io/cache_filler.h), which
// copies it and commits it off this thread; its failures do not fail the read. Claim may wait (up
// to the cache's claim_wait) while another process of the machine fetches the same chunk.
//
// Buffers: Create() takes the destination buffers (the ring's slots) and registers them with
// io_uring once, so reads use IORING_OP_READ_FIXED. Each Submit() names one of them by index.
// With O_DIRECT every buffer must be 4096-aligned and a multiple of 4096 long.
//
// After a failed read the reader stops: every later Submit() and Wait() return that Status.
// The destructor waits for reads still in flight, so the buffers must outlive the reader.
//
// Thread safety: none; one thread submits and waits. It may be another thread than the one that
// created the reader, but from the first Submit() on it must be the same one (io_uring's
// SINGLE_ISSUER), destruction included unless Wait() has returned every chunk.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/dataset.h"
#include "io/io_queue.h"

namespace rf {

enum class IoMode { kDirect, kBuffered, kPread };

// io_uring's largest ring (the kernel's IORING_MAX_ENTRIES): the most reads a reader keeps in
// flight, whatever the mode, so a queue is never sized past it.
inline constexpr uint32_t kMaxQueueDepth = 32768;
// A single read: a multiple of O_DIRECT's 4096-byte alignment, at most 1 GiB.
inline constexpr uint32_t kReadSizeAlign = 4096;
inline constexpr uint32_t kMaxReadSize = 1u << 30;
// "direct", "buffered", "pread"
Result<IoMode> ParseIoMode(const std::string& s);
const char* IoModeName(IoMode m);

struct ReaderOptions {
  IoMode mode = IoMode::kDirect;
  // Whole default-sized chunks in one read, 8 in flight: on the H200 machine's disk this matched
  // fio's sequential O_DIRECT rate at the same settings (tools/bench/read_vs_fio.py).
  uint32_t queue_depth = 8;        // reads in flight
  uint32_t read_bytes = 4u << 20;  // largest single read; a multiple of 4096
  uint32_t max_retries = 16;       // per read, for -EAGAIN / -EINTR
  // Per read, for -EIO: retry k waits kEioBackoffMs << min(k - 1, 10) first (1, 2, 4 ms), on the
  // I/O thread (the kernel goes on with the other reads in flight meanwhile).
  uint32_t max_eio_retries = 3;
  static constexpr uint32_t kEioBackoffMs = 1;
  // Register the buffers with io_uring once (IORING_OP_READ_FIXED) instead of letting the kernel
  // pin the pages of every read. Off falls back to plain reads into the same buffers.
  bool register_buffers = true;
};

struct ChunkDone {
  uint64_t chunk = 0;  // global chunk number
  uint32_t slot = 0;   // buffer it landed in
};

class ChunkReader {
 public:
  // Opens every shard of `dataset` (which must outlive the reader) and registers `buffers`.
  static Result<std::unique_ptr<ChunkReader>> Create(const Dataset& dataset,
                                                     std::span<const iovec> buffers,
                                                     const ReaderOptions& options);
  // For tests: the same reader over a given queue (which then never falls back).
  static Result<std::unique_ptr<ChunkReader>> CreateWithQueue(const Dataset& dataset,
                                                              std::span<const iovec> buffers,
                                                              const ReaderOptions& options,
                                                              std::unique_ptr<IoQueue> queue);
  ~ChunkReader();

  // Starts reading chunk `chunk` into buffer `slot` (whose length must hold the chunk). Reads
  // beyond the queue depth wait inside the reader and are sent as earlier ones complete.
  Status Submit(uint64_t chunk, uint32_t slot);
  // Appends at least `min` whole chunks that finished to `done` (blocking); fewer only if fewer
  // are outstanding. The first failed read ends the wait with its Status.
  Status Wait(std::vector<ChunkDone>& done, uint32_t min = 1);
  // Chunks submitted and not yet returned by Wait.
  uint32_t outstanding() const;

  const char* backend() const;  // "io_uring", "pread", "http"
  IoMode mode() const;          // after any fallback

 private:
  ChunkReader();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rf
