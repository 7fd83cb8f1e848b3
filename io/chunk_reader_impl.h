// ChunkReader::Impl: the chunk reader's state (io/chunk_reader.h), private to its two files:
//   io/chunk_reader.cc        the read loop: slots, reads, retries, the queue(s), completions
//   io/chunk_reader_cache.cc  a remote dataset's node-local cache: claims, cached copies read
//                             through a second (local) queue, deferred claims, healing
// Threads: the reader's (see io/chunk_reader.h).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/cache_filler.h"
#include "io/chunk_cache.h"
#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "io/file.h"
#include "io/io_queue.h"

namespace rf {

// The reader's state. Every table is sized in Create, so Submit and Wait never allocate (bar
// the caller's `done` vector).
//
// A chunk submitted into a slot goes on the backlog; Fill() cuts reads of at most read_bytes off
// the oldest backlog chunk while a read record is free. A read record is in flight from Issue()
// until its completion is handled; a short read or a retry reissues the same record at once, so
// the number of records in flight never exceeds `depth` (and the queue's capacity with it).
struct ChunkReader::Impl {
  // The chunk being read into one slot.
  struct Slot {
    bool busy = false;
    uint64_t chunk = 0;
    uint32_t file = 0;
    uint64_t offset = 0;     // the chunk's offset in its file (0 in its cached copy)
    uint64_t size = 0;       // the chunk's stored bytes
    uint64_t issued = 0;     // bytes of it covered by reads issued so far
    uint64_t remaining = 0;  // bytes of it not yet read
    uint32_t reads = 0;      // read records of it in flight
    bool deferred = false;   // waiting for another reader's claim of the chunk (on `deferred`)
    std::chrono::steady_clock::time_point deferred_at;
    bool cache_failed = false;  // a read of its cached copy failed: fetch it once they are back
    // With a cache: what ChunkCache::Claim answered. kCached: read from claim.cached() through
    // `local`; kMine: fetched, then offered to the filler; kBusy, or no claim: fetched only.
    std::optional<ChunkClaim> claim;
    bool from_cache() const { return claim && claim->kind() == ChunkClaim::Kind::kCached; }
  };
  // One read in flight; its index in `reads` is the request's user_data.
  struct Read {
    uint32_t slot = 0;
    uint32_t len = 0;
    uint64_t offset = 0;  // in the file
    uint8_t* buf = nullptr;
    uint32_t retries = 0;      // -EAGAIN / -EINTR in a row
    uint32_t eio_retries = 0;  // -EIO, over the read's whole life
    bool local = false;        // sent to `local` (a cached chunk's read), not to `queue`
  };

  const Dataset* dataset = nullptr;
  ReaderOptions options;
  IoMode mode = IoMode::kDirect;
  std::vector<iovec> buffers;
  bool fixed_buffers = false;
  std::vector<File> files;  // declared before `queue`: the queue goes first, then the fds
  std::unique_ptr<IoQueue> queue;
  uint32_t depth = 0;  // reads in flight at most: min(queue_depth, queue->capacity())

  // A remote dataset's node-local cache (Dataset::cache()): hits are read from their files
  // through `local` (io_uring, as a local dataset is), fetched chunks are committed by `filler`.
  ChunkCache* cache = nullptr;
  std::unique_ptr<IoQueue> local;
  bool local_fixed_buffers = false;
  std::unique_ptr<CacheFiller> filler;
  uint32_t local_submitted = 0;  // of `submitted`, the reads in `local`'s hands
  // Read records held by each queue's reads, and the most each may hold.
  uint32_t remote_records = 0, local_records = 0;
  uint32_t remote_depth = 0, local_depth = 0;
  uint32_t local_unsubmitted = 0;

  std::vector<Slot> slots;
  // Slots whose chunk has bytes no read covers yet, oldest first. A slot is on it at most once,
  // so a ring of slots.size() entries never overflows.
  std::vector<uint32_t> backlog;
  size_t backlog_head = 0;
  size_t backlog_size = 0;

  std::vector<Read> reads;                // depth records
  std::vector<uint32_t> free_reads;       // indices into reads, a stack
  std::vector<IoCompletion> completions;  // reserved to depth
  uint32_t unsubmitted = 0;               // prepared since the last queue Submit()
  uint32_t submitted = 0;                 // in the queue's hands, completion not yet seen
  uint32_t outstanding = 0;               // chunks submitted and not yet returned
  Status failed;                          // the first failure; sticky

  ~Impl() { Drain(); }

  // Waits for every read the queue holds, so no read lands in a caller's buffer after the
  // reader is gone.
  void Drain() noexcept;

  // Sends read record idx to its queue (prepared; Flush submits).
  void Issue(uint32_t idx);
  // Cuts reads off the backlog's chunks while records and queue room last.
  void Fill();
  // Submits what Issue prepared, to either queue.
  Status Flush();

  // Sets slot `slot` to read `chunk`: from the cache where it holds the chunk whole, else from
  // the dataset's file (claiming it, with a cache, so this machine fetches it once).
  Status Place(uint64_t chunk, uint32_t slot);

  // Slot s reads its chunk as `claim` says: from the cached copy, or fetched (kMine: to be
  // committed; kBusy: not).
  Status Adopt(Slot& s, ChunkClaim claim);

  // A cached copy that cannot be used (the wrong size, a failed read, a checksum that does not
  // hold): removed from the cache, and the slot set to fetch the chunk from its file instead,
  // claimed again (so this machine caches it anew).
  Status Uncache(Slot& s);

  // Asks again for the claims of the deferred slots; a slot whose claim came, or that has waited
  // the cache's claim_wait (its fetcher stuck, say), goes on the backlog.
  Status RetryDeferred();
  std::vector<uint32_t> deferred;  // slots waiting for another reader's fetch of their chunk

  void Backlog(uint32_t slot) {
    backlog[(backlog_head + backlog_size) % backlog.size()] = slot;
    ++backlog_size;
  }

  Status Fail(Status st) {
    failed = st;
    return st;
  }

  const std::string& PathOf(const Slot& s) const { return dataset->shard_path(s.file); }
  // The chunk's number as its file's index says it (a directory's part numbers its own).
  uint64_t FileChunkOf(const Slot& s) const { return dataset->chunk(s.chunk).entry.index; }

  // The IOError of read `r` of slot `s`: its file, chunk and byte offset, `what`, and errno.
  Status ReadError(const Slot& s, const Read& r, const std::string& what, int err) const;

  // Handles one completion: finishes, continues or retries its read.
  // The caller has already taken it off `submitted`.
  Status Complete(const IoCompletion& c, std::vector<ChunkDone>& done, uint32_t* got);

  // The cache's queue and filler (a remote dataset with Dataset::cache()). The local queue holds
  // as many reads as the reader's depth, so that every read may be of a cached copy.
  Status StartCache(std::span<const iovec> bufs);
  // Chunks the filler holds while they are written: the disk behind the network by this many.
  static constexpr uint32_t kFillerBuffers = 4;
  static uint64_t MaxStored(const Dataset& d) {
    return std::max(d.max_raw_bytes(), d.max_stored_bytes());
  }

  // Takes q's completions (at least `min`, blocking) and handles each.
  Status Reap(IoQueue& q, uint32_t min, std::vector<ChunkDone>& done, uint32_t* got);

  // Frees read record idx; where it was the last of a slot whose cached copy failed, sets the
  // slot to fetch the chunk.
  Status Release(uint32_t idx);

  // Slot s's chunk is whole. A cached copy's checksum is checked here (a mismatch fetches the
  // chunk instead: the cache heals); a fetched chunk this process claimed goes to the filler.
  Status Finish(Slot& s, std::vector<ChunkDone>& done, uint32_t* got);
};

}  // namespace rf
