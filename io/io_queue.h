// IoQueue: the submission/completion interface the chunk reader drives. Implementations:
//   UringQueue (io/uring_queue.h)  io_uring through liburing; registered files and buffers.
//   SyncQueue  (io/sync_queue.h)   pread(2), completing each request at Submit(); the fallback
//                                  where io_uring is unavailable.
// FaultyIoQueue (io/faulty_io_queue.h) wraps any of them and answers chosen reads with faults
// (RINGFEED_FAULTS); tests also substitute a fake (tests/io/fake_io_queue.h).
//
// Completions carry the raw result (bytes read, or -errno). Negative errno never leaves io/:
// ChunkReader turns it into a Status.
//
// Thread safety: none; one thread owns a queue.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace rf {

struct IoRequest {
  uint32_t file = 0;    // index into the files given to RegisterFiles (where fd < 0)
  void* buf = nullptr;  // destination; inside registered buffer `buf_index` when that is >= 0
  uint32_t len = 0;
  uint64_t offset = 0;
  int buf_index = -1;  // registered buffer holding buf, or -1
  uint64_t user_data = 0;
  // The global chunk the read belongs to (ChunkReader sets it), or kNoChunk. The queues read
  // without it; FaultyIoQueue picks its faults by it.
  static constexpr uint64_t kNoChunk = UINT64_MAX;
  uint64_t chunk = kNoChunk;
  // A descriptor to read instead of `file`, kept open by the caller until the completion: a file
  // opened after RegisterFiles (a cached chunk, io/chunk_cache.h). Local queues only.
  int fd = -1;
};

struct IoCompletion {
  uint64_t user_data = 0;
  int32_t res = 0;  // bytes read (may be short), or -errno
  // A failure the queue describes itself (res < 0), or 0: IoQueue::TakeFailure(failure) gives
  // its Status. A remote queue's failures carry more than an errno (the URL, the HTTP status).
  uint32_t failure = 0;
};

class IoQueue {
 public:
  virtual ~IoQueue() = default;
  // The files requests refer to by index. Called once, before any request.
  virtual Status RegisterFiles(std::span<const int> fds) = 0;
  // Buffers requests may name by index. Optional: Unsupported means use buf_index = -1.
  virtual Status RegisterBuffers(std::span<const iovec> buffers) = 0;
  // How many requests may be in flight at once.
  virtual uint32_t capacity() const = 0;
  // Queues one read; at most capacity() may be queued or in flight.
  virtual void Prepare(const IoRequest& r) = 0;
  // Sends every prepared request to the kernel.
  virtual Status Submit() = 0;
  // Appends at least `min` completions to `out` (blocking), plus any others already there.
  virtual Status Wait(std::vector<IoCompletion>& out, uint32_t min) = 0;
  // A short name for logs: "io_uring", "pread", "http".
  virtual const char* name() const = 0;
  // Whether requests name local files (RegisterFiles), or objects the queue was made with (a
  // remote queue, io/http_queue.h: RegisterFiles is then never called).
  virtual bool reads_local_files() const { return true; }
  // The Status of a completion's described failure (IoCompletion::failure), once; after it the
  // queue forgets it.
  virtual Status TakeFailure(uint32_t failure) {
    return Status::IOError("", "failure " + std::to_string(failure) + " unknown to the queue");
  }
};

}  // namespace rf
