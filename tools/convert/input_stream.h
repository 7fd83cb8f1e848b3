// InputStream: a sequential reader of one input file, plain or gzip-compressed (recognized by
// its magic bytes 1f 8b, whatever its name), that counts the uncompressed bytes it has handed
// out so errors can name the offset they apply to.
//
// Ownership: owns its file descriptor or gzFile. Thread safety: none.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"

namespace rf::convert {

class InputStream {
 public:
  // A missing file is NotFound naming the path.
  static Result<std::unique_ptr<InputStream>> Open(const std::string& path);
  virtual ~InputStream() = default;

  // Reads up to n bytes; fewer only at the end of the data.
  virtual Result<size_t> Read(void* buf, size_t n) = 0;
  // Reads exactly n bytes; the end of the data first is a Corruption naming `what` and the
  // offset where the data ended.
  Status ReadExact(void* buf, size_t n, const std::string& what);
  // Whether any byte is left (consumes nothing visible: the byte is kept for the next Read).
  virtual Result<bool> AtEnd() = 0;

  const std::string& path() const { return path_; }
  uint64_t offset() const { return offset_; }  // uncompressed bytes handed out so far
  virtual bool compressed() const = 0;
  // The uncompressed size where it is known without reading (plain files).
  virtual std::optional<uint64_t> size() const = 0;

 protected:
  explicit InputStream(std::string path) : path_(std::move(path)) {}
  std::string path_;
  uint64_t offset_ = 0;
};

}  // namespace rf::convert
