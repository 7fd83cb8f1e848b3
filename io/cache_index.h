// CacheIndex: the accounting that every process using one chunk cache directory shares
// (io/chunk_cache.h): a small file, "index", mapped MAP_SHARED by each of them, and the lock
// that orders their changes to the directory.
//
// Layout (native byte order: the file never leaves the machine): a 64-byte header (magic,
// version, dataset id, chunk count, the bytes cached, the recency clock) and one 16-byte entry a
// chunk (its cached bytes, 0 where absent, and the clock's value at its last use). So the index
// costs 16 bytes a chunk, in the page cache, once a machine however many processes map it.
//
// The files are the truth, the index is derived: ChunkCache::Open rebuilds every entry's bytes
// from a scan of the directory under the lock, so a process killed between a rename (or an
// unlink) and the index's update leaves the index off by that one chunk until the next Open.
//
// Concurrency: Lock() takes flock(LOCK_EX) on the index file, which excludes other processes;
// flock belongs to the open file description, so threads of one process must also hold a mutex
// of their own around it (ChunkCache does). Entries' bytes and the header's total change only
// under the lock; every field is read and written as an atomic (std::atomic_ref), so readers
// without the lock (a pre-check, a recency touch) see whole values, possibly stale ones.
//
// Ownership: a CacheIndex owns its descriptor and mapping, released in the destructor; move-only.
// Errors: Open returns IOError naming the file and errno, InvalidArgument where the file belongs
// to a dataset of another shape.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/status.h"
#include "io/file.h"

namespace rf {

class CacheIndex {
 public:
  CacheIndex() = default;
  ~CacheIndex();
  CacheIndex(CacheIndex&& o) noexcept
      : file_(std::move(o.file_)),
        map_(std::exchange(o.map_, nullptr)),
        map_bytes_(std::exchange(o.map_bytes_, 0)),
        chunk_count_(std::exchange(o.chunk_count_, 0)) {}
  CacheIndex& operator=(CacheIndex&& o) noexcept;
  CacheIndex(const CacheIndex&) = delete;
  CacheIndex& operator=(const CacheIndex&) = delete;

  // Opens (creating) path for dataset_id's chunk_count chunks. A file of the same id and another
  // chunk count is refused (InvalidArgument); a file that is not an index at all (a torn first
  // write, another program's) is made a fresh index, with every entry absent.
  static Result<CacheIndex> Open(const std::string& path, uint64_t dataset_id,
                                 uint64_t chunk_count);

  // flock(LOCK_EX) held while alive (EINTR retried); move-only.
  class Lock {
   public:
    Lock() = default;
    explicit Lock(int fd) : fd_(fd) {}
    ~Lock();
    Lock(Lock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Lock& operator=(Lock&&) = delete;
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    int fd_ = -1;
  };
  Result<Lock> Exclusive() const;

  uint64_t chunk_count() const { return chunk_count_; }
  const std::string& path() const { return file_.path(); }

  uint64_t bytes(uint64_t chunk) const;
  uint64_t last_use(uint64_t chunk) const;
  uint64_t used_bytes() const;
  // Under the lock: sets a chunk's bytes and keeps the total in step.
  void SetBytes(uint64_t chunk, uint64_t bytes);
  // Sets every entry absent and the total to 0 (under the lock, before a rebuild).
  void ClearBytes();
  // Any time: stamps the chunk with the next value of the shared clock (LRU's recency).
  void Touch(uint64_t chunk);

 private:
  uint64_t* Field(uint64_t word) const { return static_cast<uint64_t*>(map_) + word; }

  File file_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  uint64_t chunk_count_ = 0;
};

}  // namespace rf
