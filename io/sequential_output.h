// SequentialOutput: an output file written front to back through a buffer, under a temporary
// name until Commit() (it owns an AtomicOutput, so a failed or abandoned output leaves nothing
// behind and any earlier file of the same name stays as it was). The converter's exports go
// through it; `ringfeed train`'s --metrics and --dump-order, written as the run goes, through
// io/line_output.h instead.
//
// Every write is checked: the first failure (ENOSPC, EFBIG, EIO, ...) is returned, names the
// final path (never the temporary name), and is returned again by every later Append and by
// Commit, so a caller that ignores one Append still cannot commit a truncated file.
//
// Thread safety: none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/file.h"

namespace rf {

class SequentialOutput {
 public:
  static Result<SequentialOutput> Create(const std::string& path, size_t buffer_bytes = 1 << 20);

  Status Append(const void* data, size_t n);
  Status Append(std::string_view text) { return Append(text.data(), text.size()); }
  // Writes at an absolute offset, bypassing the buffer (for outputs not written in order);
  // callers do not mix this with Append.
  Status WriteAt(const void* data, size_t n, uint64_t offset);
  // Flushes, fsyncs, closes and renames the file into place (AtomicOutput::Commit).
  Status Commit();
  const std::string& path() const { return out_.final_path(); }
  uint64_t bytes() const { return offset_ + buf_.size(); }

 private:
  Status Flush();
  Status Keep(Status st);  // remembers the first failure

  AtomicOutput out_;
  std::vector<uint8_t> buf_;
  size_t capacity_ = 0;
  uint64_t offset_ = 0;  // where buf_ goes
  Status failed_;
};

}  // namespace rf
