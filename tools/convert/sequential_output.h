// SequentialOutput: an output file written front to back through a buffer, under a temporary
// name until Commit() (it owns an AtomicOutput, so a failed export leaves nothing behind).
//
// Thread safety: none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/file.h"
#include "io/status.h"

namespace rf::convert {

class SequentialOutput {
 public:
  static Result<SequentialOutput> Create(const std::string& path, size_t buffer_bytes = 1 << 20);

  Status Append(const void* data, size_t n);
  // Writes at an absolute offset, bypassing the buffer (for outputs not written in order);
  // callers do not mix this with Append.
  Status WriteAt(const void* data, size_t n, uint64_t offset);
  // Flushes, fsyncs and renames the file into place.
  Status Commit();
  const std::string& path() const { return out_.final_path(); }
  uint64_t bytes() const { return offset_ + buf_.size(); }

 private:
  Status Flush();

  AtomicOutput out_;
  std::vector<uint8_t> buf_;
  size_t capacity_ = 0;
  uint64_t offset_ = 0;  // where buf_ goes
};

}  // namespace rf::convert
