// ChunkWriteQueue: a thread that checksums and writes filled chunk buffers behind the thread
// that fills them, so making samples (converting, generating) never waits on hashing or on the
// page cache. Its buffers cycle
//
//   Acquire (free) -> caller fills -> Submit -> checksummed, written -> free
//
// and chunks are written in the order submitted, so each shard's index entries come out in
// order. The first write error is kept and returned by every later Submit and by Drain.
//
// Thread safety: one caller thread (Acquire, Submit, Drain) and the queue's own thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "io/file.h"
#include "io/format.h"

namespace rf {

class ChunkWriteQueue {
 public:
  // `buffers` buffers of `buffer_bytes` each (4096-aligned); 2 or more let filling and writing
  // overlap. They are anonymous mappings, so a page is resident only once written: memory
  // follows the data, not the chunk target (a 1 GiB target over 160 bytes costs a few pages).
  static Result<std::unique_ptr<ChunkWriteQueue>> Create(size_t buffers, size_t buffer_bytes);
  // Writes what was submitted, then stops.
  ~ChunkWriteQueue();
  ChunkWriteQueue(const ChunkWriteQueue&) = delete;
  ChunkWriteQueue& operator=(const ChunkWriteQueue&) = delete;

  // A free buffer; blocks while every buffer is queued or being written.
  uint8_t* Acquire();
  // Queues `buf` (from Acquire): its first entry.stored_bytes bytes go to `file` at
  // entry.offset, and `entry`, with its checksum filled in, is appended to `*entries` once
  // written. `file` and `entries` must outlive the write (Drain).
  Status Submit(uint8_t* buf, const File* file, format::ChunkEntry entry,
                std::vector<format::ChunkEntry>* entries);
  // Waits until everything submitted is written; the first write error, if any.
  Status Drain();

 private:
  struct Job {
    uint8_t* buf;
    const File* file;
    format::ChunkEntry entry;
    std::vector<format::ChunkEntry>* entries;
  };
  struct Unmap {
    size_t bytes;
    void operator()(uint8_t* p) const;
  };
  ChunkWriteQueue() = default;
  void Run();

  std::vector<std::unique_ptr<uint8_t, Unmap>> memory_;
  std::mutex mu_;
  std::condition_variable cv_;  // any change: a job queued, a buffer freed, a job done, stop
  std::vector<uint8_t*> free_;
  std::deque<Job> jobs_;
  size_t busy_ = 0;  // jobs taken by the thread and not yet done
  bool stop_ = false;
  Status status_;
  std::thread thread_;
};

}  // namespace rf
