// The chunk reader's part for a remote dataset's node-local cache (io/chunk_reader.h: "A remote
// dataset with a node-local cache"; io/chunk_cache.h: the reader's loop).
#include <fcntl.h>

#include "io/chunk_reader_impl.h"
#include "io/sync_queue.h"
#include "io/uring_queue.h"

namespace rf {

Status ChunkReader::Impl::Place(uint64_t chunk, uint32_t slot) {
  const ChunkLocation& loc = dataset->chunk(chunk);
  Slot& s = slots[slot];
  s = Slot{};
  s.busy = true;
  s.chunk = chunk;
  s.file = loc.shard;
  s.offset = loc.entry.offset;
  s.size = s.remaining = loc.entry.stored_bytes;
  if (cache == nullptr) return Status::Ok();
  cache->Started(chunk);
  RF_ASSIGN_OR_RETURN(ChunkClaim claim, cache->TryClaim(chunk));
  if (claim.kind() == ChunkClaim::Kind::kBusy) {
    // Another reader of the machine is fetching it: asked again as this reader's own reads
    // complete (RetryDeferred), never waited for here.
    s.deferred = true;
    s.deferred_at = std::chrono::steady_clock::now();
    deferred.push_back(slot);
    return Status::Ok();
  }
  return Adopt(s, std::move(claim));
}

Status ChunkReader::Impl::Adopt(Slot& s, ChunkClaim claim) {
  const bool hit = claim.kind() == ChunkClaim::Kind::kCached;
  s.claim.emplace(std::move(claim));
  if (!hit) return Status::Ok();
  // Another size than the index's is not the chunk: fetched again, and replaced.
  if (s.claim->cached().bytes != s.size) return Uncache(s);
  s.offset = 0;
  // Read past the page cache, as the dataset's own files are, where the file system allows.
  if (mode == IoMode::kDirect) {
    const int fd = s.claim->cached().file.fd();
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags | O_DIRECT);
  }
  return Status::Ok();
}

Status ChunkReader::Impl::Uncache(Slot& s) {
  s.claim.reset();  // closes the cached file
  RF_RETURN_IF_ERROR(cache->Invalidate(s.chunk));
  const ChunkLocation& loc = dataset->chunk(s.chunk);
  s.file = loc.shard;
  s.offset = loc.entry.offset;
  s.issued = 0;
  s.remaining = s.size;
  RF_ASSIGN_OR_RETURN(ChunkClaim claim, cache->TryClaim(s.chunk));
  // Cached again already (another process's fetch), or being fetched by another: fetched here
  // all the same, not trusted twice.
  if (claim.kind() == ChunkClaim::Kind::kMine) s.claim.emplace(std::move(claim));
  return Status::Ok();
}

Status ChunkReader::Impl::RetryDeferred() {
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < deferred.size();) {
    Slot& s = slots[deferred[i]];
    RF_ASSIGN_OR_RETURN(ChunkClaim claim, cache->TryClaim(s.chunk));
    if (claim.kind() == ChunkClaim::Kind::kBusy && now - s.deferred_at < cache->claim_wait()) {
      ++i;
      continue;
    }
    RF_RETURN_IF_ERROR(Adopt(s, std::move(claim)));
    s.deferred = false;
    Backlog(deferred[i]);
    deferred[i] = deferred.back();
    deferred.pop_back();
  }
  return Status::Ok();
}

Status ChunkReader::Impl::StartCache(std::span<const iovec> bufs) {
  cache = dataset->cache();
  if (options.mode != IoMode::kPread) {
    auto uring = UringQueue::Create(options.queue_depth);
    if (uring.ok()) local = std::move(uring).value();
  }
  if (!local) local = std::make_unique<SyncQueue>(options.queue_depth);
  RF_RETURN_IF_ERROR(local->RegisterFiles({}));
  local_fixed_buffers = options.register_buffers && local->RegisterBuffers(bufs).ok();
  uint64_t largest = 0;
  for (const iovec& b : bufs) largest = std::max<uint64_t>(largest, b.iov_len);
  RF_ASSIGN_OR_RETURN(filler, CacheFiller::Start(*cache, *dataset, kFillerBuffers,
                                                 std::min(largest, MaxStored(*dataset))));
  return Status::Ok();
}

}  // namespace rf
