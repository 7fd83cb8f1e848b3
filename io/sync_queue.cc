#include "io/sync_queue.h"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace rf {

SyncQueue::SyncQueue(uint32_t depth) : depth_(depth) {
  prepared_.reserve(depth_);
  done_.reserve(depth_);
}

Status SyncQueue::RegisterFiles(std::span<const int> fds) {
  fds_.assign(fds.begin(), fds.end());
  return Status::Ok();
}

Status SyncQueue::RegisterBuffers(std::span<const iovec>) {
  return Status::Unsupported("pread has no registered buffers");
}

void SyncQueue::Prepare(const IoRequest& r) { prepared_.push_back(r); }

Status SyncQueue::Submit() {
  for (const IoRequest& r : prepared_) {
    ssize_t n =
        ::pread(r.fd >= 0 ? r.fd : fds_[r.file], r.buf, r.len, static_cast<off_t>(r.offset));
    done_.push_back(IoCompletion{r.user_data, n < 0 ? -errno : static_cast<int32_t>(n)});
  }
  prepared_.clear();
  return Status::Ok();
}

Status SyncQueue::Wait(std::vector<IoCompletion>& out, uint32_t min) {
  RF_RETURN_IF_ERROR(Submit());
  if (done_.size() < min) {
    return Status::InvalidArgument("pread queue: waiting for " + std::to_string(min) +
                                   " completions with " + std::to_string(done_.size()) +
                                   " requests submitted");
  }
  out.insert(out.end(), done_.begin(), done_.end());
  done_.clear();
  return Status::Ok();
}

}  // namespace rf
