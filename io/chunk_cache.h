// ChunkCache: a node-local cache of a remote dataset's stored chunks (issue 42), in a directory
// on a local disk, within a byte budget shared by every process of the machine that uses it.
// The chunk reader uses it for a remote dataset that has one attached (Dataset::AttachCache).
//
// Layout. Open(options, dataset_id, chunk_count) uses "<dir>/dataset-<id as 16 hex>/": a cache
// is per dataset id, and a cache of another id is never read (its directory is left as it is,
// neither used nor removed: another job may be using it; it is not counted in this budget, so
// an old one is the operator's to delete). In it:
//   chunk-<g>                  chunk g's stored bytes, whole and checked (the only files trusted)
//   chunk-<g>.tmp.<pid>.<n>    a chunk being written (io/file.h's temporary names)
//   chunk-<g>.claim            the per-chunk lock of the process fetching it (fetch-once)
//   index                      the shared accounting and its lock (io/cache_index.h)
// Any other file (a planted FIFO, symbolic link, directory) is never opened through, replaced
// or removed: every open uses O_NOFOLLOW (and O_NONBLOCK, so a FIFO cannot hang it) and checks
// for a regular file, and a commit renames with RENAME_NOREPLACE.
//
// A chunk reaches the cache only whole and checked: Commit verifies the caller's bytes with the
// caller's function (Dataset::VerifyStored) before writing anything, writes them under a
// temporary name registered as a LiveTemporary, fsyncs them, and renames them into place under
// the index lock. So a process killed at any point leaves at worst a temporary, which no lookup
// opens; Open removes those whose process is gone (RemoveStaleTemporaries), never a live
// process's. The directory is not fsync'd: after a power loss a rename may be lost (a miss),
// never a file half-written under a chunk's name. Past the rename the cache trusts the file: a
// chunk corrupted on disk later is handed out as it is, the reader checks every chunk's checksum
// again after reading it, and calls Invalidate(g) on a mismatch so the next Claim fetches it.
//
// Fetch once a machine. Claim(g) answers kCached (an open read-only descriptor), kMine (this
// caller holds chunk-<g>.claim's flock: fetch it, Commit) or, after waiting up to
// options.claim_wait while another process holds the claim, kBusy (fetch it yourself and do not
// commit). The kernel drops a killed process's flock, so a fetcher's death frees its claim at
// once; a waiter then finds the chunk absent and claims it itself. A claim file is unlinked by
// its holder before it unlocks, and a claimant that gets the lock checks that the name still
// leads to the inode it locked (else it retries), so two holders never coexist.
//
// The budget is for the directory: bytes of the chunk files (their sizes, not the blocks they
// take), summed in the shared index. Each commit makes room under the index lock, evicting by
// this process's policy with what this process knows:
//   kBelady: the chunk whose next use in this process's schedule is farthest goes first; chunks
//     not in its schedule (another rank's, or used no more) count as never used, oldest use
//     first among them. Where the incoming chunk's next use is farther than a victim's, the
//     chunk is not kept (kNotKept, Belady's MIN: keeping it would lose a sooner hit).
//   kLru: the chunk used least recently, by the clock shared in the index, goes first.
// Processes sharing a directory should pass one budget: each commit holds the directory to its
// own process's. The limit of the rule across processes: each rank's schedule covers its own
// chunks, so under kBelady a rank evicts other ranks' chunks first, as if they were not needed.
// Ranks whose schedules are known to one another (the order is a function of the rank) may each
// pass the machine's schedule (the local ranks' interleaved) to make one choice; SetSchedule takes
// any sequence. A file unlinked while a reader holds it open keeps its blocks until closed, so the
// disk may briefly hold more than the budget.
//
// Memory: 8 bytes a chunk in this process (each chunk's next use), 16 bytes a schedule entry
// (the chunk and its next occurrence), and the shared index's 16 bytes a chunk (mapped; page
// cache, once a machine). A commit's eviction scans the index: O(chunk count) time, a vector of
// the cached chunks while it runs.
//
// The reader's loop (io/chunk_reader.cc does it; schedule: this epoch's and the next's chunks,
// set by whoever knows the order, pipeline/sources/streaming_source.cc):
//   cache->SetSchedule(schedule);
//   for each chunk g read: cache->Started(g); claim = cache->Claim(g), then
//     kCached: read claim.cached() (its size checked against the chunk's stored_bytes), verify
//              the checksum as for any read; on a mismatch Invalidate(g) and fetch it;
//     kMine:   fetch by range, then Commit(std::move(claim), bytes, n, verifier) with a verifier
//              calling dataset.VerifyStored(g, bytes) (io/cache_filler.h, off the reader's
//              thread). Its failure (the bytes fetched are bad) is the fetch's, as without a
//              cache; a write's failure (ENOSPC) leaves the bytes good to use, uncached;
//     kBusy:   fetch by range, no commit.
//
// Threads: every method may be called from any thread. Claim's wait holds no lock of the cache.
// Errors: Status naming the cache's file and errno; a refused commit (verify failed, ENOSPC,
// EROFS) leaves the cache as it was. Negative errno never escapes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/cache_index.h"
#include "io/file.h"

namespace rf {

enum class CachePolicy { kBelady, kLru };

// The most a cache's budget may be (--cache-size): 1 EiB.
inline constexpr uint64_t kMaxCacheBytes = uint64_t{1} << 60;

struct ChunkCacheOptions {
  std::string dir;            // --cache-dir (created if missing; its parent must exist)
  uint64_t budget_bytes = 0;  // --cache-size, > 0
  CachePolicy policy = CachePolicy::kBelady;
  // How long Claim waits for another process's fetch of the same chunk before answering kBusy.
  std::chrono::milliseconds claim_wait{std::chrono::seconds(60)};
};

struct ChunkCacheStats {
  uint64_t hits = 0;           // Lookup or Claim found the chunk
  uint64_t misses = 0;         // they did not
  uint64_t bytes_written = 0;  // chunk bytes committed to the cache
  uint64_t commits = 0;        // chunks committed
  uint64_t evictions = 0;      // chunks this process removed to make room
  uint64_t not_kept = 0;       // commits not kept: larger than the budget, or Belady's choice
  uint64_t refused = 0;        // commits refused with an error (verify, write, rename)
  uint64_t waits = 0;          // claims that waited for another process's fetch
  uint64_t wait_timeouts = 0;  // of those, the ones that gave up (kBusy)
};

// A cached chunk, open read-only: the descriptor (owned) and its size in bytes.
struct CachedChunk {
  File file;
  uint64_t bytes = 0;
};

// What Claim found. Move-only; a kMine claim holds the chunk's claim lock until it is committed
// or destroyed (destroying it unclaimed lets the next claimant fetch).
class ChunkClaim {
 public:
  enum class Kind { kCached, kMine, kBusy };
  ChunkClaim(ChunkClaim&&) noexcept = default;
  ChunkClaim& operator=(ChunkClaim&&) noexcept;
  ChunkClaim(const ChunkClaim&) = delete;
  ChunkClaim& operator=(const ChunkClaim&) = delete;
  ~ChunkClaim() { Release(); }

  Kind kind() const { return kind_; }
  uint64_t chunk() const { return chunk_; }
  // kCached: the chunk, open.
  CachedChunk& cached() { return cached_; }

 private:
  friend class ChunkCache;
  ChunkClaim(Kind kind, uint64_t chunk) : kind_(kind), chunk_(chunk) {}
  void Release();  // unlinks the claim file, then unlocks it (by closing)

  Kind kind_;
  uint64_t chunk_;
  CachedChunk cached_;
  File lock_;  // kMine: the claim file, flock'd
  const void* owner_ = nullptr;
};

// Checks a chunk's stored bytes (Dataset::VerifyStored, bound to the chunk's index).
using ChunkVerifier = std::function<Status(const void* bytes, size_t n)>;

enum class CommitOutcome {
  kCached,         // renamed into place; counted in the budget
  kAlreadyCached,  // another process's copy was there first; this one dropped
  kNotKept,        // larger than the whole budget, or evicting for it would lose a sooner hit
};

class ChunkCache {
 public:
  // Creates the dataset's directory where missing, rebuilds the shared index from the files
  // under its lock, removes dead processes' temporaries and free claim files, and evicts down
  // to this budget. InvalidArgument for an empty dir, a budget or chunk count of 0, or a path in
  // the way that is not a directory.
  static Result<std::unique_ptr<ChunkCache>> Open(const ChunkCacheOptions& options,
                                                  uint64_t dataset_id, uint64_t chunk_count);
  ~ChunkCache();
  ChunkCache(const ChunkCache&) = delete;
  ChunkCache& operator=(const ChunkCache&) = delete;

  // The chunks this process will read, in order (this epoch and the next). Replaces any earlier
  // schedule and starts at position 0. InvalidArgument for a chunk past the count.
  Status SetSchedule(std::span<const uint64_t> chunks);
  // Entries before `next` have been read or are being read now: call Advance(p + 1) when the
  // read of schedule[p] starts, before its Commit. Positions only move forward.
  void Advance(uint64_t next);
  // The read of `chunk` starts, for a reader that follows the schedule without counting its
  // positions (io/chunk_reader.h): Advance past the chunk's next use at or after the position.
  // A chunk the rest of the schedule does not hold moves nothing.
  void Started(uint64_t chunk);

  // The cached chunk, open read-only, or nothing. A name that is not a regular file the cache
  // wrote (a symbolic link, a FIFO, an empty file) is nothing, and is left alone.
  Result<std::optional<CachedChunk>> Lookup(uint64_t chunk);
  // Lookup, and where the chunk is absent its claim ("Fetch once a machine" above): kCached,
  // kMine or, after options.claim_wait, kBusy. Each answer counts one hit (kCached) or miss.
  // IOError naming the claim file where it cannot be opened (ELOOP: a link planted there) or
  // locked; InvalidArgument where it is not a regular file.
  Result<ChunkClaim> Claim(uint64_t chunk);
  // Claim without waiting: kBusy at once where another process holds the chunk's claim, counted
  // neither hit nor miss (the caller asks again later). A reader with fetches of its own in
  // flight must not wait in Claim: two readers each waiting for a chunk the other is fetching
  // would wait for each other (io/chunk_reader.cc defers the chunk and asks again).
  Result<ChunkClaim> TryClaim(uint64_t chunk);
  // Caches the n bytes of a kMine claim's chunk (see the top of this file); the claim is
  // released on return, whatever the outcome. verify's failure is returned as it is, with the
  // chunk named; nothing is written before it passes.
  Result<CommitOutcome> Commit(ChunkClaim claim, const void* bytes, size_t n,
                               const ChunkVerifier& verify);
  // Removes the cached chunk (a reader found it corrupt); nothing where it is absent.
  Status Invalidate(uint64_t chunk);

  ChunkCacheStats stats() const;
  const std::string& directory() const { return dir_; }
  uint64_t used_bytes() const { return index_.used_bytes(); }
  uint64_t budget_bytes() const { return options_.budget_bytes; }
  std::chrono::milliseconds claim_wait() const { return options_.claim_wait; }

 private:
  ChunkCache(const ChunkCacheOptions& options, std::string dir, CacheIndex index);
  std::string ChunkPath(uint64_t chunk) const;
  Result<std::optional<CachedChunk>> OpenCached(uint64_t chunk) const;
  Result<ChunkClaim> ClaimWaiting(uint64_t chunk, bool wait);
  Status Rebuild();
  // Under the index lock (or as a pre-check without it): the chunks to evict so that n more
  // bytes of `incoming` fit, in order, or nullopt where it is not to be kept.
  std::optional<std::vector<uint64_t>> PlanRoom(uint64_t incoming, uint64_t n) const;
  // Under the index lock: unlinks each victim's file (where it is a regular file) and its entry.
  void Evict(const std::vector<uint64_t>& victims);

  const ChunkCacheOptions options_;
  const std::string dir_;
  CacheIndex index_;
  std::mutex index_mu_;  // held with the index's flock (flock is per open file description)

  mutable std::mutex schedule_mu_;  // guards the four below
  std::vector<uint64_t> schedule_;
  std::vector<uint64_t> next_occurrence_;  // schedule_[i]'s next position, kNever if none
  std::vector<uint64_t> next_use_;         // each chunk's next position, kNever if none
  uint64_t position_ = 0;

  struct Counters {
    std::atomic<uint64_t> hits{0}, misses{0}, bytes_written{0}, commits{0}, evictions{0},
        not_kept{0}, refused{0}, waits{0}, wait_timeouts{0};
  };
  mutable Counters counters_;
};

class Dataset;  // io/dataset.h

// Opens the cache `o` describes for `d` (keyed by its CacheId()) and attaches it (Dataset::
// AttachCache): what every command that reads a remote dataset through a cache calls once after
// Open. Nothing for a local dataset. Errors: ChunkCache::Open's.
Status AttachChunkCache(Dataset* d, const ChunkCacheOptions& o);

}  // namespace rf
