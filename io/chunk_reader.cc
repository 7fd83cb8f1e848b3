#include "io/chunk_reader.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "io/chunk_reader_impl.h"
#include "io/faulty_io_queue.h"
#include "io/file.h"
#include "io/http_queue.h"
#include "io/sync_queue.h"
#include "io/uring_queue.h"

namespace rf {

Result<IoMode> ParseIoMode(const std::string& s) {
  if (s == "direct") return IoMode::kDirect;
  if (s == "buffered") return IoMode::kBuffered;
  if (s == "pread") return IoMode::kPread;
  return Status::InvalidArgument("unknown I/O mode \"" + s +
                                 "\": expected direct, buffered or pread");
}

const char* IoModeName(IoMode m) {
  switch (m) {
    case IoMode::kDirect:
      return "direct";
    case IoMode::kBuffered:
      return "buffered";
    case IoMode::kPread:
      return "pread";
  }
  return "?";
}

// How often a reader whose every chunk waits for another reader's fetch asks again.
constexpr auto kDeferredPoll = std::chrono::milliseconds(2);

void ChunkReader::Impl::Drain() noexcept {
  while (local_submitted > 0 && local) {
    completions.clear();
    if (!local->Wait(completions, 1).ok()) break;
    const auto n = std::min<uint32_t>(local_submitted, completions.size());
    local_submitted -= n;
    submitted -= n;
  }
  while (submitted > local_submitted && queue) {
    completions.clear();
    if (!queue->Wait(completions, 1).ok()) return;
    submitted -= std::min<uint32_t>(submitted, static_cast<uint32_t>(completions.size()));
  }
}

void ChunkReader::Impl::Issue(uint32_t idx) {
  Read& r = reads[idx];
  Slot& s = slots[r.slot];
  IoRequest req;
  req.file = s.file;
  req.buf = r.buf;
  req.len = r.len;
  req.offset = r.offset;
  req.user_data = idx;
  req.chunk = s.chunk;
  r.local = s.from_cache();
  if (r.local) {
    req.fd = s.claim->cached().file.fd();
    req.buf_index = local_fixed_buffers ? static_cast<int>(r.slot) : -1;
    local->Prepare(req);
    ++local_unsubmitted;
    return;
  }
  req.buf_index = fixed_buffers ? static_cast<int>(r.slot) : -1;
  queue->Prepare(req);
  ++unsubmitted;
}

void ChunkReader::Impl::Fill() {
  while (backlog_size > 0 && !free_reads.empty()) {
    uint32_t slot = backlog[backlog_head];
    Slot& s = slots[slot];
    // Each queue holds at most its capacity (the oldest chunk waits for room in its own).
    uint32_t& held = s.from_cache() ? local_records : remote_records;
    if (held >= (s.from_cache() ? local_depth : remote_depth)) return;
    ++held;
    uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(options.read_bytes, s.size - s.issued));
    uint32_t idx = free_reads.back();
    free_reads.pop_back();
    reads[idx] = Read{.slot = slot,
                      .len = len,
                      .offset = s.offset + s.issued,
                      .buf = static_cast<uint8_t*>(buffers[slot].iov_base) + s.issued};
    s.issued += len;
    ++s.reads;
    if (s.issued == s.size) {
      backlog_head = (backlog_head + 1) % backlog.size();
      --backlog_size;
    }
    Issue(idx);
  }
}

Status ChunkReader::Impl::Flush() {
  if (local_unsubmitted > 0) {
    RF_RETURN_IF_ERROR(local->Submit());
    submitted += local_unsubmitted;
    local_submitted += local_unsubmitted;
    local_unsubmitted = 0;
  }
  if (unsubmitted == 0) return Status::Ok();
  Status st = queue->Submit();
  if (!st.ok()) return st;
  submitted += unsubmitted;
  unsubmitted = 0;
  return Status::Ok();
}

Status ChunkReader::Impl::ReadError(const Slot& s, const Read& r, const std::string& what,
                                    int err) const {
  return std::move(
      Status::IOError(PathOf(s), what, err).WithChunk(FileChunkOf(s)).WithOffset(r.offset));
}

Status ChunkReader::Impl::Complete(const IoCompletion& c, std::vector<ChunkDone>& done,
                                   uint32_t* got) {
  uint32_t idx = static_cast<uint32_t>(c.user_data);
  Read& r = reads[idx];
  Slot& s = slots[r.slot];
  if (r.local && (c.res <= 0 || s.cache_failed)) {
    // A cached copy's read failed (or one before it did): no retry of a copy; once the slot's
    // reads are back, the chunk is fetched from its file instead.
    s.cache_failed = true;
    return Release(idx);
  }
  if (c.res < 0 && c.failure != 0) {
    // The queue's own description (a remote read, already retried as its options say): it
    // names the object and the range; the chunk is the reader's to add.
    Status st = queue->TakeFailure(c.failure);
    return std::move(st.WithChunk(FileChunkOf(s)));
  }
  if (c.res < 0) {
    int err = -c.res;
    if (err == EAGAIN || err == EINTR) {
      if (r.retries >= options.max_retries) {
        return ReadError(s, r, "read still failing after " + std::to_string(r.retries) + " retries",
                         err);
      }
      ++r.retries;
      Issue(idx);
      return Status::Ok();
    }
    if (err == EIO) {
      if (r.eio_retries >= options.max_eio_retries) {
        return ReadError(
            s, r, "read failed after " + std::to_string(r.eio_retries + 1) + " attempts", err);
      }
      // Nothing of the failed read is kept: the retry reads the same bytes into the same
      // place, and only its success counts them.
      std::this_thread::sleep_for(std::chrono::milliseconds(
          ReaderOptions::kEioBackoffMs << std::min<uint32_t>(r.eio_retries, 10)));
      ++r.eio_retries;
      Issue(idx);
      return Status::Ok();
    }
    return ReadError(s, r, "read failed", err);
  }
  if (c.res == 0) {
    // The dataset was validated at open, so the file shrank since, or lies about its size.
    return std::move(Status::Corruption(PathOf(s), "unexpected end of file")
                         .WithChunk(FileChunkOf(s))
                         .WithOffset(r.offset));
  }
  uint32_t n = std::min(static_cast<uint32_t>(c.res), r.len);
  s.remaining -= n;
  if (n < r.len) {
    // A short read is normal (a signal, a page-cache boundary): ask for the rest.
    r.offset += n;
    r.buf += n;
    r.len -= n;
    r.retries = 0;
    Issue(idx);
    return Status::Ok();
  }
  RF_RETURN_IF_ERROR(Release(idx));
  if (s.remaining == 0 && s.reads == 0) return Finish(s, done, got);
  return Status::Ok();
}

Status ChunkReader::Impl::Reap(IoQueue& q, uint32_t min, std::vector<ChunkDone>& done,
                               uint32_t* got) {
  completions.clear();
  RF_RETURN_IF_ERROR(q.Wait(completions, min));
  // Counted off all at once, so that an error part-way through still leaves `submitted`
  // exact for Drain().
  const auto n = static_cast<uint32_t>(completions.size());
  submitted -= n;
  if (&q == local.get()) local_submitted -= n;
  for (const IoCompletion& c : completions) {
    if (c.user_data >= reads.size()) {
      return Status::Aborted("chunk reader: the " + std::string(q.name()) +
                             " queue completed a request it was never given");
    }
    RF_RETURN_IF_ERROR(Complete(c, done, got));
  }
  return Status::Ok();
}

Status ChunkReader::Impl::Release(uint32_t idx) {
  Slot& s = slots[reads[idx].slot];
  free_reads.push_back(idx);
  --(reads[idx].local ? local_records : remote_records);
  --s.reads;
  if (s.cache_failed && s.reads == 0) {
    s.cache_failed = false;
    RF_RETURN_IF_ERROR(Uncache(s));
    Backlog(static_cast<uint32_t>(&s - slots.data()));
  }
  return Status::Ok();
}

Status ChunkReader::Impl::Finish(Slot& s, std::vector<ChunkDone>& done, uint32_t* got) {
  const uint32_t slot = static_cast<uint32_t>(&s - slots.data());
  const void* bytes = buffers[slot].iov_base;
  if (s.from_cache() && !dataset->VerifyStored(s.chunk, bytes).ok()) {
    RF_RETURN_IF_ERROR(Uncache(s));
    Backlog(slot);
    return Status::Ok();
  }
  if (s.claim && s.claim->kind() == ChunkClaim::Kind::kMine && filler) {
    filler->Offer(std::move(*s.claim), bytes, s.size);
  }
  s.claim.reset();
  s.busy = false;
  --outstanding;
  done.push_back(ChunkDone{s.chunk, slot});
  ++*got;
  return Status::Ok();
}

namespace {

Status CheckOptions(const ReaderOptions& o, std::span<const iovec> buffers) {
  if (o.queue_depth == 0) return Status::InvalidArgument("queue depth must be at least 1");
  if (o.queue_depth > kMaxQueueDepth) {
    return Status::InvalidArgument("queue depth " + std::to_string(o.queue_depth) +
                                   " is more than io_uring's " + std::to_string(kMaxQueueDepth) +
                                   " entries");
  }
  if (o.read_bytes == 0 || o.read_bytes % kReadSizeAlign != 0 || o.read_bytes > kMaxReadSize) {
    return Status::InvalidArgument("read size " + std::to_string(o.read_bytes) +
                                   " must be a multiple of 4096 and at most 1 GiB");
  }
  if (buffers.empty()) return Status::InvalidArgument("a chunk reader needs at least one buffer");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto addr = reinterpret_cast<uintptr_t>(buffers[i].iov_base);
    if (buffers[i].iov_base == nullptr) {
      return Status::InvalidArgument("buffer " + std::to_string(i) + " is null");
    }
    if (o.mode == IoMode::kDirect &&
        (addr % format::kAlign != 0 || buffers[i].iov_len % format::kAlign != 0)) {
      return Status::InvalidArgument("buffer " + std::to_string(i) + " (" +
                                     std::to_string(buffers[i].iov_len) +
                                     " bytes) must be 4096-aligned and a multiple of 4096 long "
                                     "for O_DIRECT");
    }
  }
  return Status::Ok();
}

// Opens the shards; with O_DIRECT where asked and the file system allows it. Sets *any_buffered
// when a file system refused O_DIRECT (said once on stderr).
Result<std::vector<File>> OpenShards(const Dataset& dataset, bool direct, bool* any_buffered) {
  std::vector<File> files;
  files.reserve(dataset.shard_count());
  *any_buffered = false;
  for (size_t i = 0; i < dataset.shard_count(); ++i) {
    const std::string& path = dataset.shard_path(i);
    auto f = File::Open(path, O_RDONLY | (direct ? O_DIRECT : 0));
    if (!f.ok() && direct && f.status().err() == EINVAL) {
      if (!*any_buffered) {
        std::fprintf(stderr,
                     "ringfeed: %s: O_DIRECT not supported by this file system; reading through "
                     "the page cache\n",
                     path.c_str());
      }
      *any_buffered = true;
      f = File::Open(path, O_RDONLY);
    }
    if (!f.ok()) return f.status();
    files.push_back(std::move(f).value());
  }
  return files;
}

}  // namespace

ChunkReader::ChunkReader() : impl_(std::make_unique<Impl>()) {}
ChunkReader::~ChunkReader() = default;

Result<std::unique_ptr<ChunkReader>> ChunkReader::Create(const Dataset& dataset,
                                                         std::span<const iovec> buffers,
                                                         const ReaderOptions& options) {
  RF_RETURN_IF_ERROR(CheckOptions(options, buffers));
  ReaderOptions opts = options;
  std::unique_ptr<IoQueue> queue;
  if (dataset.remote()) {
    RF_ASSIGN_OR_RETURN(queue, HttpQueue::Create(dataset, opts.queue_depth));
  } else if (opts.mode != IoMode::kPread) {
    auto uring = UringQueue::Create(opts.queue_depth);
    if (uring.ok()) {
      queue = std::move(uring).value();
    } else {
      std::fprintf(stderr, "ringfeed: io_uring unavailable (%s); reading with pread\n",
                   uring.status().ToString().c_str());
      // pread through the page cache keeps readahead; one O_DIRECT pread at a time would not.
      opts.mode = IoMode::kPread;
    }
  }
  if (!queue) queue = std::make_unique<SyncQueue>(opts.queue_depth);
  RF_ASSIGN_OR_RETURN(queue, WrapWithFaultsFromEnv(std::move(queue)));
  return CreateWithQueue(dataset, buffers, opts, std::move(queue));
}

Result<std::unique_ptr<ChunkReader>> ChunkReader::CreateWithQueue(const Dataset& dataset,
                                                                  std::span<const iovec> buffers,
                                                                  const ReaderOptions& options,
                                                                  std::unique_ptr<IoQueue> queue) {
  RF_RETURN_IF_ERROR(CheckOptions(options, buffers));
  if (!queue) return Status::InvalidArgument("chunk reader given no I/O queue");
  std::unique_ptr<ChunkReader> reader(new ChunkReader());
  Impl& m = *reader->impl_;
  m.dataset = &dataset;
  m.options = options;
  m.mode = options.mode;
  m.buffers.assign(buffers.begin(), buffers.end());

  m.queue = std::move(queue);
  if (m.queue->reads_local_files()) {
    bool any_buffered = false;
    RF_ASSIGN_OR_RETURN(m.files,
                        OpenShards(dataset, options.mode == IoMode::kDirect, &any_buffered));
    if (any_buffered) m.mode = IoMode::kBuffered;
    std::vector<int> fds;
    fds.reserve(m.files.size());
    for (const File& f : m.files) fds.push_back(f.fd());
    RF_RETURN_IF_ERROR(m.queue->RegisterFiles(fds));
  }
  // Registered buffers save the kernel pinning and unpinning pages on every read. Without them
  // (RLIMIT_MEMLOCK, pread) reads name plain addresses; nothing else changes.
  m.fixed_buffers = options.register_buffers && m.queue->RegisterBuffers(buffers).ok();

  m.depth = m.remote_depth = std::min(options.queue_depth, m.queue->capacity());
  if (m.depth == 0) return Status::InvalidArgument("the I/O queue has no capacity");
  if (dataset.cache() != nullptr && !m.queue->reads_local_files()) {
    // queue_depth reads of cached copies beside the remote ones.
    RF_RETURN_IF_ERROR(m.StartCache(buffers));
    m.local_depth = std::min(options.queue_depth, m.local->capacity());
    m.depth += m.local_depth;
  }
  m.slots.resize(buffers.size());
  m.deferred.reserve(buffers.size());
  m.backlog.resize(buffers.size());
  m.reads.resize(m.depth);
  m.free_reads.reserve(m.depth);
  for (uint32_t i = m.depth; i-- > 0;) m.free_reads.push_back(i);
  m.completions.reserve(m.depth);
  return reader;
}

Status ChunkReader::Submit(uint64_t chunk, uint32_t slot) {
  Impl& m = *impl_;
  if (!m.failed.ok()) return m.failed;
  if (chunk >= m.dataset->chunk_count()) {
    return Status::InvalidArgument("chunk " + std::to_string(chunk) + " is out of range: the " +
                                   "dataset has " + std::to_string(m.dataset->chunk_count()) +
                                   " chunks");
  }
  if (slot >= m.slots.size()) {
    return Status::InvalidArgument("slot " + std::to_string(slot) + " is out of range: the " +
                                   "reader has " + std::to_string(m.slots.size()) + " buffers");
  }
  Impl::Slot& s = m.slots[slot];
  if (s.busy) {
    return Status::InvalidArgument("slot " + std::to_string(slot) + " is still being read (chunk " +
                                   std::to_string(s.chunk) + ")");
  }
  const ChunkLocation& loc = m.dataset->chunk(chunk);
  if (loc.entry.stored_bytes > m.buffers[slot].iov_len) {
    return Status::InvalidArgument("slot " + std::to_string(slot) + " holds " +
                                   std::to_string(m.buffers[slot].iov_len) + " bytes; chunk " +
                                   std::to_string(chunk) + " needs " +
                                   std::to_string(loc.entry.stored_bytes));
  }
  if (Status st = m.Place(chunk, slot); !st.ok()) return m.Fail(std::move(st));
  ++m.outstanding;
  if (!s.deferred) m.Backlog(slot);
  m.Fill();
  Status st = m.Flush();
  if (!st.ok()) return m.Fail(st);
  return Status::Ok();
}

Status ChunkReader::Wait(std::vector<ChunkDone>& done, uint32_t min) {
  Impl& m = *impl_;
  if (!m.failed.ok()) return m.failed;
  const uint32_t want = std::min(min, m.outstanding);
  uint32_t got = 0;
  // The first pass takes whatever has finished without blocking; later ones block for one
  // completion at a time until `want` chunks are whole. With a cache, a pass takes the cached
  // chunks' reads first: they finish in the local disk's time, and blocks on them where any are
  // in flight (the remote transfers' bytes meanwhile kept by the kernel's socket buffers).
  for (bool first = true; first || got < want; first = false) {
    if (!m.deferred.empty()) {
      if (Status st = m.RetryDeferred(); !st.ok()) return m.Fail(std::move(st));
      m.Fill();
      if (Status st = m.Flush(); !st.ok()) return m.Fail(std::move(st));
      if (got < want && m.submitted == 0 && !m.deferred.empty()) {
        // Only chunks another reader is fetching: look again shortly.
        std::this_thread::sleep_for(kDeferredPoll);
        continue;
      }
    }
    if (got < want && m.submitted == 0) {
      return m.Fail(Status::Aborted("chunk reader: waiting for chunks with no read in flight"));
    }
    const bool block = got < want;
    const uint32_t remote_in_flight = m.submitted - m.local_submitted;
    if (m.local_submitted > 0) {
      Status st = m.Reap(*m.local, block ? 1 : 0, done, &got);
      if (!st.ok()) return m.Fail(st);
    }
    if (remote_in_flight > 0 || m.local_submitted == 0) {
      const bool wait_remote = block && m.local_submitted == 0 && got < want;
      Status st = m.Reap(*m.queue, wait_remote ? 1 : 0, done, &got);
      if (!st.ok()) return m.Fail(st);
    }
    m.Fill();
    Status st = m.Flush();
    if (!st.ok()) return m.Fail(st);
  }
  return Status::Ok();
}

uint32_t ChunkReader::outstanding() const { return impl_->outstanding; }
const char* ChunkReader::backend() const { return impl_->queue->name(); }
IoMode ChunkReader::mode() const { return impl_->mode; }

}  // namespace rf
