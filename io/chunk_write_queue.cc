#include "io/chunk_write_queue.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "io/checksum.h"

namespace rf {

void ChunkWriteQueue::Unmap::operator()(uint8_t* p) const { ::munmap(p, bytes); }

Result<ChunkWriteQueue::Mapping> ChunkWriteQueue::Map(size_t bytes, const char* what) {
  // Page-aligned (format::kAlign is 4096) and untouched until filled.
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    return Status::IOError("", "cannot map " + std::to_string(bytes) + " bytes for " + what, errno);
  }
  return Mapping(static_cast<uint8_t*>(m), Unmap{bytes});
}

Result<std::unique_ptr<ChunkWriteQueue>> ChunkWriteQueue::Create(size_t buffers,
                                                                 size_t buffer_bytes,
                                                                 CodecSpec codec,
                                                                 uint32_t workers) {
  std::unique_ptr<ChunkWriteQueue> q(new ChunkWriteQueue());
  q->codec_ = codec;
  const size_t bytes = format::RoundUp(buffer_bytes, format::kAlign);
  for (size_t i = 0; i < buffers; ++i) {
    RF_ASSIGN_OR_RETURN(Mapping m, Map(bytes, "a chunk buffer"));
    q->free_.push_back(m.get());
    q->memory_.push_back(std::move(m));
  }
  // A frame larger than the data is stored raw, so a worker's scratch needs the bound only.
  const size_t scratch = codec.codec == Codec::kNone
                             ? 0
                             : format::RoundUp(CompressBound(codec.codec, bytes), format::kAlign);
  std::vector<uint8_t*> scratches;
  for (uint32_t i = 0; i < std::max<uint32_t>(1, workers); ++i) {
    uint8_t* s = nullptr;
    if (scratch != 0) {
      RF_ASSIGN_OR_RETURN(Mapping m, Map(scratch, "a compression buffer"));
      s = m.get();
      q->memory_.push_back(std::move(m));
    }
    scratches.push_back(s);
  }
  for (uint8_t* s : scratches)
    q->threads_.emplace_back([raw = q.get(), s, scratch] { raw->Run(s, scratch); });
  return q;
}

ChunkWriteQueue::~ChunkWriteQueue() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

uint8_t* ChunkWriteQueue::Acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !free_.empty(); });
  uint8_t* b = free_.back();
  free_.pop_back();
  return b;
}

Status ChunkWriteQueue::Submit(uint8_t* buf, const File* file, format::ChunkEntry entry,
                               std::vector<format::ChunkEntry>* entries, uint64_t* next_offset) {
  {
    std::lock_guard lock(mu_);
    if (!status_.ok()) {
      free_.push_back(buf);
      return status_;
    }
    jobs_.push_back(Job{submitted_++, buf, file, entry, entries, next_offset});
  }
  cv_.notify_all();
  return Status::Ok();
}

Status ChunkWriteQueue::Drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return jobs_.empty() && busy_ == 0; });
  return status_;
}

Result<const uint8_t*> ChunkWriteQueue::Encode(Job& job, Compressor& c, uint8_t* scratch,
                                               size_t scratch_bytes) {
  format::ChunkEntry& e = job.entry;
  e.codec = Codec::kNone;
  e.frame_bytes = e.stored_bytes = e.data_bytes;
  const uint8_t* out = job.buf;
  if (codec_.codec != Codec::kNone) {
    RF_ASSIGN_OR_RETURN(size_t frame, c.Compress(job.buf, e.data_bytes, scratch, scratch_bytes));
    const uint64_t stored = format::RoundUp(frame, format::kAlign);
    if (stored < e.data_bytes) {  // it saves a block at least; else the chunk is stored raw
      std::memset(scratch + frame, 0, stored - frame);
      e.codec = codec_.codec;
      e.frame_bytes = frame;
      e.stored_bytes = stored;
      out = scratch;
    }
  }
  e.checksum = Checksum(out, e.stored_bytes);
  return out;
}

void ChunkWriteQueue::Run(uint8_t* scratch, size_t scratch_bytes) {
  Compressor compressor(codec_);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !jobs_.empty() || stop_; });
    if (jobs_.empty()) return;  // stopping, and everything is written
    Job job = jobs_.front();
    jobs_.pop_front();
    ++busy_;
    bool failed = !status_.ok();
    lock.unlock();
    Result<const uint8_t*> out = static_cast<const uint8_t*>(nullptr);
    // After a failure the rest are dropped: the output will be discarded.
    if (!failed) out = Encode(job, compressor, scratch, scratch_bytes);
    lock.lock();
    // A compressed chunk's data buffer is free once its frame is made.
    const bool freed = out.ok() && *out != nullptr && *out != job.buf;
    if (freed) {
      free_.push_back(job.buf);
      cv_.notify_all();
    }
    // Writes in submission order: offsets are assigned as the chunks land.
    cv_.wait(lock, [&] { return next_write_ == job.seq; });
    failed = !status_.ok();
    Status st = out.ok() ? Status::Ok() : out.status();
    if (!failed && st.ok()) {
      job.entry.offset = *job.next_offset;
      *job.next_offset += job.entry.stored_bytes;
      lock.unlock();
      st = job.file->WriteAt(*out, job.entry.stored_bytes, job.entry.offset);
      lock.lock();
      if (st.ok()) job.entries->push_back(job.entry);
    }
    if (!st.ok() && status_.ok()) status_ = st.WithChunk(job.entry.index);
    ++next_write_;
    if (!freed) free_.push_back(job.buf);
    --busy_;
    cv_.notify_all();
  }
}

}  // namespace rf
