// CacheFiller: commits the chunks a reader fetched to a ChunkCache (io/chunk_cache.h) off the
// reader's thread, so that writing a chunk to the local disk and fsyncing it never holds up the
// reads in flight.
//
// Offer(claim, bytes, n) copies the chunk's bytes into one of `slots` buffers and returns: the
// caller's buffer (a ring slot) is free again at once. The filler's thread then commits each one
// (ChunkCache::Commit: the checksum verified against the dataset's index, a temporary file,
// fsync, a rename), releasing its claim as it goes. Where every buffer is taken, Offer waits for
// one: the local disk writing slower than the network delivers is the only case.
//
// A commit that fails (no space, a read-only disk, bytes whose checksum does not hold) changes
// nothing for the reader: the chunk it handed on is checked by the chunk stage as any other, and
// the cache is as it was. The first such failure is said once on stderr (the cache's directory,
// the chunk, errno) and every one is counted (stats().failed).
//
// Memory: slots x slot_bytes, allocated at Start.
// Threads: Offer from one thread (the reader's); stats from any. The destructor commits what was
// offered, then joins the thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "io/chunk_cache.h"
#include "io/dataset.h"

namespace rf {

struct CacheFillerStats {
  uint64_t offered = 0;    // chunks handed to the filler
  uint64_t committed = 0;  // of those, kept by the cache (CommitOutcome::kCached)
  uint64_t not_kept = 0;   // the cache's choice (already cached, or not worth keeping)
  uint64_t failed = 0;     // Commit returned an error
};

class CacheFiller {
 public:
  // `cache` and `dataset` must outlive the filler. slots >= 1; slot_bytes: the largest chunk a
  // caller offers (the dataset's largest stored extent).
  static Result<std::unique_ptr<CacheFiller>> Start(ChunkCache& cache, const Dataset& dataset,
                                                    uint32_t slots, uint64_t slot_bytes);
  ~CacheFiller();
  CacheFiller(const CacheFiller&) = delete;
  CacheFiller& operator=(const CacheFiller&) = delete;

  // Hands a kMine claim's chunk to the filler (n <= slot_bytes: else it is dropped, counted as
  // failed). Waits while every buffer is taken.
  void Offer(ChunkClaim claim, const void* bytes, size_t n);

  CacheFillerStats stats() const;

 private:
  CacheFiller(ChunkCache& cache, const Dataset& dataset, uint32_t slots, uint64_t slot_bytes);
  void Run();

  struct Job {
    ChunkClaim claim;
    uint32_t buffer = 0;
    size_t bytes = 0;
  };

  ChunkCache& cache_;
  const Dataset& dataset_;
  const uint64_t slot_bytes_;
  std::unique_ptr<uint8_t[]> memory_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint32_t> free_;  // buffers not holding a job
  std::deque<Job> jobs_;
  bool stopping_ = false;
  bool said_ = false;  // the first failure has been said
  CacheFillerStats stats_;
  std::thread thread_;
};

}  // namespace rf
