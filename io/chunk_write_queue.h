// ChunkWriteQueue: threads that compress, checksum and write filled chunk buffers behind the
// thread that fills them, so making samples (converting, generating) never waits on
// compression, hashing or the page cache. Its buffers cycle
//
//   Acquire (free) -> caller fills a chunk's data -> Submit -> compressed (io/codec.h) and
//   checksummed by any worker -> written, in submission order -> free
//
// Compression runs on every worker at once; the writes go in the order submitted, each worker
// waiting for its turn, so each shard's chunks are laid out and indexed in order. A chunk is
// placed at its shard's next offset only once its stored size is known (after compression). A
// chunk that does not shrink by at least one 4096-byte block is stored raw (codec none). The
// first write or codec error is kept and returned by every later Submit and by Drain.
//
// Memory: `buffers` chunk buffers, and one compression buffer per worker where there is a codec,
// all anonymous mappings: a page is resident only once written, so memory follows the data,
// not the chunk target (a 1 GiB target over 160 bytes costs a few pages).
//
// Thread safety: one caller thread (Acquire, Submit, Drain) and the queue's own threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "io/codec.h"
#include "io/file.h"
#include "io/format.h"

namespace rf {

class ChunkWriteQueue {
 public:
  // `buffers` buffers of `buffer_bytes` each (4096-aligned); more buffers than workers let
  // filling and writing overlap. `workers` threads (at least 1) compress with `codec`.
  static Result<std::unique_ptr<ChunkWriteQueue>> Create(size_t buffers, size_t buffer_bytes,
                                                         CodecSpec codec = {},
                                                         uint32_t workers = 1);
  // Writes what was submitted, then stops.
  ~ChunkWriteQueue();
  ChunkWriteQueue(const ChunkWriteQueue&) = delete;
  ChunkWriteQueue& operator=(const ChunkWriteQueue&) = delete;

  // A free buffer; blocks while every buffer is queued or being written.
  uint8_t* Acquire();
  // Queues `buf` (from Acquire), whose first entry.data_bytes bytes are the chunk's data (a
  // multiple of 4096). Once compressed, the chunk's stored extent goes to `file` at
  // *next_offset, which then moves past it, and `entry`, with its offset, codec, sizes and
  // checksum filled in, is appended to `*entries`. `file`, `next_offset` and `entries` must
  // outlive the write (Drain); chunks of one file must share one `next_offset`.
  Status Submit(uint8_t* buf, const File* file, format::ChunkEntry entry,
                std::vector<format::ChunkEntry>* entries, uint64_t* next_offset);
  // Waits until everything submitted is written; the first error, if any.
  Status Drain();

 private:
  struct Job {
    uint64_t seq;
    uint8_t* buf;
    const File* file;
    format::ChunkEntry entry;
    std::vector<format::ChunkEntry>* entries;
    uint64_t* next_offset;
  };
  struct Unmap {
    size_t bytes;
    void operator()(uint8_t* p) const;
  };
  using Mapping = std::unique_ptr<uint8_t, Unmap>;
  static Result<Mapping> Map(size_t bytes, const char* what);
  ChunkWriteQueue() = default;
  void Run(uint8_t* scratch, size_t scratch_bytes);
  // Compresses (or not) and checksums job's chunk; the bytes to write (buf or scratch).
  Result<const uint8_t*> Encode(Job& job, Compressor& c, uint8_t* scratch, size_t scratch_bytes);

  CodecSpec codec_;
  std::vector<Mapping> memory_;
  std::mutex mu_;
  std::condition_variable cv_;  // any change: a job queued, a buffer freed, a turn, stop
  std::vector<uint8_t*> free_;
  std::deque<Job> jobs_;
  uint64_t submitted_ = 0;   // sequence number of the next job
  uint64_t next_write_ = 0;  // the job whose write is next
  size_t busy_ = 0;          // jobs taken by a worker and not yet done
  bool stop_ = false;
  Status status_;
  std::vector<std::thread> threads_;
};

}  // namespace rf
