#include "io/sequential_output.h"

#include <algorithm>

namespace rf {

Result<SequentialOutput> SequentialOutput::Create(const std::string& path, size_t buffer_bytes) {
  SequentialOutput s;
  RF_ASSIGN_OR_RETURN(s.out_, AtomicOutput::Create(path));
  s.capacity_ = buffer_bytes;
  s.buf_.reserve(buffer_bytes);
  return s;
}

Status SequentialOutput::Keep(Status st) {
  if (!st.ok() && failed_.ok()) failed_ = st;
  return st;
}

Status SequentialOutput::Flush() {
  if (buf_.empty()) return Status::Ok();
  RF_RETURN_IF_ERROR(Keep(out_.file().WriteAt(buf_.data(), buf_.size(), offset_)));
  offset_ += buf_.size();
  buf_.clear();
  return Status::Ok();
}

Status SequentialOutput::Append(const void* data, size_t n) {
  RF_RETURN_IF_ERROR(failed_);
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    if (buf_.empty() && n >= capacity_) {  // large writes skip the copy
      RF_RETURN_IF_ERROR(Keep(out_.file().WriteAt(p, n, offset_)));
      offset_ += n;
      return Status::Ok();
    }
    const size_t take = std::min(n, capacity_ - buf_.size());
    buf_.insert(buf_.end(), p, p + take);
    p += take;
    n -= take;
    if (buf_.size() == capacity_) RF_RETURN_IF_ERROR(Flush());
  }
  return Status::Ok();
}

Status SequentialOutput::WriteAt(const void* data, size_t n, uint64_t offset) {
  RF_RETURN_IF_ERROR(failed_);
  return Keep(out_.file().WriteAt(data, n, offset));
}

Status SequentialOutput::Commit() {
  RF_RETURN_IF_ERROR(failed_);
  RF_RETURN_IF_ERROR(Flush());
  return Keep(out_.Commit());
}

}  // namespace rf
