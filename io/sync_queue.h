// SyncQueue: an IoQueue that reads with pread(2) at Submit(): the fallback where io_uring cannot
// be set up, and the "pread" mode. Requests complete in the order they were prepared; Wait()
// only hands the completions over. Nothing is ever in flight across a Wait(), so nothing
// overlaps: this is the simple, slow, portable path.
//
// Thread safety: none; one thread owns a queue.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "io/io_queue.h"

namespace rf {

class SyncQueue final : public IoQueue {
 public:
  explicit SyncQueue(uint32_t depth);

  Status RegisterFiles(std::span<const int> fds) override;
  // Always Unsupported: pread has no registered buffers.
  Status RegisterBuffers(std::span<const iovec> buffers) override;
  uint32_t capacity() const override { return depth_; }
  void Prepare(const IoRequest& r) override;
  // Performs every prepared read, one pread(2) each (a short read stays short, as in io_uring).
  Status Submit() override;
  // InvalidArgument if `min` exceeds the requests prepared and not yet returned: they can
  // never come.
  Status Wait(std::vector<IoCompletion>& out, uint32_t min) override;
  const char* name() const override { return "pread"; }

 private:
  uint32_t depth_;
  std::vector<int> fds_;
  std::vector<IoRequest> prepared_;  // reserved to depth_: Prepare never allocates
  std::vector<IoCompletion> done_;   // reserved to depth_
};

}  // namespace rf
