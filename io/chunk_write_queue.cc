#include "io/chunk_write_queue.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "io/checksum.h"

namespace rf {

void ChunkWriteQueue::Unmap::operator()(uint8_t* p) const { ::munmap(p, bytes); }

Result<std::unique_ptr<ChunkWriteQueue>> ChunkWriteQueue::Create(size_t buffers,
                                                                 size_t buffer_bytes) {
  std::unique_ptr<ChunkWriteQueue> q(new ChunkWriteQueue());
  const size_t bytes = format::RoundUp(buffer_bytes, format::kAlign);
  for (size_t i = 0; i < buffers; ++i) {
    // Page-aligned (format::kAlign is 4096) and untouched until filled.
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      return Status::InvalidArgument("cannot map " + std::to_string(bytes) +
                                     " bytes for a chunk buffer: " + std::strerror(errno));
    }
    auto* p = static_cast<uint8_t*>(m);
    q->memory_.emplace_back(p, Unmap{bytes});
    q->free_.push_back(p);
  }
  q->thread_ = std::thread([raw = q.get()] { raw->Run(); });
  return q;
}

ChunkWriteQueue::~ChunkWriteQueue() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint8_t* ChunkWriteQueue::Acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !free_.empty(); });
  uint8_t* b = free_.back();
  free_.pop_back();
  return b;
}

Status ChunkWriteQueue::Submit(uint8_t* buf, const File* file, format::ChunkEntry entry,
                               std::vector<format::ChunkEntry>* entries) {
  {
    std::lock_guard lock(mu_);
    if (!status_.ok()) {
      free_.push_back(buf);
      return status_;
    }
    jobs_.push_back(Job{buf, file, entry, entries});
  }
  cv_.notify_all();
  return Status::Ok();
}

Status ChunkWriteQueue::Drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return jobs_.empty() && busy_ == 0; });
  return status_;
}

void ChunkWriteQueue::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !jobs_.empty() || stop_; });
    if (jobs_.empty()) return;  // stopping, and everything is written
    Job job = jobs_.front();
    jobs_.pop_front();
    ++busy_;
    const bool failed = !status_.ok();
    lock.unlock();
    Status st;
    if (!failed) {  // after a failure the rest are dropped: the output will be discarded
      job.entry.checksum = Checksum(job.buf, job.entry.stored_bytes);
      st = job.file->WriteAt(job.buf, job.entry.stored_bytes, job.entry.offset);
    }
    lock.lock();
    if (!failed && st.ok()) job.entries->push_back(job.entry);
    if (!st.ok() && status_.ok()) status_ = st.WithChunk(job.entry.index);
    free_.push_back(job.buf);
    --busy_;
    cv_.notify_all();
  }
}

}  // namespace rf
