#include "io/chunk_fetcher.h"

#include <fcntl.h>

#include <cstdio>
#include <optional>
#include <utility>

#include "io/chunk_cache.h"

namespace rf {

Result<ChunkFetcher> ChunkFetcher::Create(const Dataset& dataset) {
  ChunkFetcher f(dataset);
  if (dataset.remote()) {
    RF_ASSIGN_OR_RETURN(f.remote_, ObjectReader::Create(dataset.remote_options()));
  }
  for (size_t s = 0; s < dataset.shard_count() && !dataset.remote(); ++s) {
    RF_ASSIGN_OR_RETURN(File file, File::Open(dataset.shard_path(s), O_RDONLY));
    f.files_.push_back(std::move(file));
  }
  // Sized once, from the index (Dataset::Open bounded it by the files).
  f.stored_.resize(dataset.compressed() ? dataset.max_stored_bytes() : 0);
  return f;
}

Status ChunkFetcher::ReadStored(size_t global, void* into) {
  const ChunkLocation& at = dataset_->chunk(global);
  const format::ChunkEntry& e = at.entry;
  Status st =
      remote_ ? remote_->ReadAt(dataset_->remote_object(at.shard), into, e.stored_bytes, e.offset)
              : files_[at.shard].ReadAt(into, e.stored_bytes, e.offset);
  if (!st.ok()) return std::move(st.WithChunk(e.index));
  return Status::Ok();
}

Status ChunkFetcher::Fetch(size_t global, void* out, bool verify) {
  const format::ChunkEntry& e = dataset_->chunk(global).entry;
  void* stored = e.compressed() ? static_cast<void*>(stored_.data()) : out;
  ChunkCache* cache = remote_ ? dataset_->cache() : nullptr;
  bool checked = false;  // the stored bytes' checksum passed
  if (cache == nullptr) {
    RF_RETURN_IF_ERROR(ReadStored(global, stored));
  } else {
    RF_ASSIGN_OR_RETURN(checked, ThroughCache(*cache, global, stored));
  }
  if (!e.compressed()) {
    return verify && !checked ? dataset_->VerifyChunk(global, out)
                              : dataset_->CheckData(global, out);
  }
  if (verify && !checked) RF_RETURN_IF_ERROR(dataset_->VerifyStored(global, stored));
  return dataset_->DecodeChunk(global, stored, out, decompressor_);
}

Result<bool> ChunkFetcher::ThroughCache(ChunkCache& cache, size_t global, void* stored) {
  const uint64_t n = dataset_->chunk(global).entry.stored_bytes;
  cache.Started(global);
  RF_ASSIGN_OR_RETURN(ChunkClaim first, cache.Claim(global));
  std::optional<ChunkClaim> claim(std::move(first));
  if (claim->kind() == ChunkClaim::Kind::kCached) {
    // A cached copy is the chunk only where its size is the index's and its checksum passes;
    // else it is removed and the chunk fetched (and cached again where this fetcher claims it).
    CachedChunk& c = claim->cached();
    if (c.bytes == n && c.file.ReadAt(stored, n, 0).ok() &&
        dataset_->VerifyStored(global, stored).ok()) {
      return true;
    }
    claim.reset();  // closes the copy
    RF_RETURN_IF_ERROR(cache.Invalidate(global));
    RF_ASSIGN_OR_RETURN(ChunkClaim again, cache.Claim(global));
    claim.emplace(std::move(again));
  }
  RF_RETURN_IF_ERROR(ReadStored(global, stored));
  // kBusy (another process's fetch took past the claim's wait) or a copy another process cached
  // meanwhile: this fetch's bytes are used, not committed.
  if (claim->kind() != ChunkClaim::Kind::kMine) return false;
  // Checked here so that bytes the server got wrong are this fetch's DataError, as without a
  // cache; a commit's own failure (ENOSPC, EROFS) leaves them good to use, uncached.
  RF_RETURN_IF_ERROR(dataset_->VerifyStored(global, stored));
  Result<CommitOutcome> kept =
      cache.Commit(std::move(*claim), stored, n, [](const void*, size_t) { return Status::Ok(); });
  if (!kept.ok() && !said_) {
    said_ = true;
    std::fprintf(stderr, "ringfeed: cache %s: %s; the run goes on, that chunk uncached\n",
                 cache.directory().c_str(), kept.status().ToString().c_str());
  }
  return true;
}

}  // namespace rf
