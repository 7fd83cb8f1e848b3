#include "core/status.h"

#include <cstring>

namespace rf {

Status Status::NotFound(std::string path, std::string msg, int err) {
  return Status(Code::kNotFound, std::move(path), std::move(msg), err);
}
Status Status::Corruption(std::string path, std::string msg) {
  return Status(Code::kCorruption, std::move(path), std::move(msg), 0);
}
Status Status::IOError(std::string path, std::string msg, int err) {
  return Status(Code::kIOError, std::move(path), std::move(msg), err);
}
Status Status::InvalidArgument(std::string msg) {
  return Status(Code::kInvalidArgument, "", std::move(msg), 0);
}
Status Status::Unsupported(std::string msg) {
  return Status(Code::kUnsupported, "", std::move(msg), 0);
}
Status Status::Aborted(std::string msg) { return Status(Code::kAborted, "", std::move(msg), 0); }
Status Status::Usage(std::string msg) { return Status(Code::kUsage, "", std::move(msg), 0); }

Status& Status::WithPath(std::string path) {
  path_ = std::move(path);
  return *this;
}
Status& Status::WithChunk(uint64_t chunk) {
  chunk_ = chunk;
  return *this;
}
Status& Status::WithOffset(uint64_t offset) {
  offset_ = offset;
  return *this;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s;
  if (!path_.empty()) s += path_ + ": ";
  if (chunk_) s += "chunk " + std::to_string(*chunk_) + (offset_ ? " " : ": ");
  if (offset_) s += "at byte " + std::to_string(*offset_) + ": ";
  s += message_;
  if (errno_ != 0)
    s += std::string(": ") + std::strerror(errno_) + " (errno " + std::to_string(errno_) + ")";
  return s;
}

}  // namespace rf
