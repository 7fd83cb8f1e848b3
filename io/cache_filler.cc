#include "io/cache_filler.h"

#include <cstdio>
#include <cstring>

#include "core/thread_name.h"

namespace rf {

CacheFiller::CacheFiller(ChunkCache& cache, const Dataset& dataset, uint32_t slots,
                         uint64_t slot_bytes)
    : cache_(cache), dataset_(dataset), slot_bytes_(slot_bytes) {
  for (uint32_t i = slots; i-- > 0;) free_.push_back(i);
}

Result<std::unique_ptr<CacheFiller>> CacheFiller::Start(ChunkCache& cache, const Dataset& dataset,
                                                        uint32_t slots, uint64_t slot_bytes) {
  if (slots == 0 || slot_bytes == 0) {
    return Status::InvalidArgument("a cache filler needs at least one buffer of one byte");
  }
  std::unique_ptr<CacheFiller> f(new CacheFiller(cache, dataset, slots, slot_bytes));
  f->memory_.reset(new (std::nothrow) uint8_t[slots * slot_bytes]);
  if (!f->memory_) {
    return Status::IOError(cache.directory(),
                           "no memory for the cache's " + std::to_string(slots) + " buffers of " +
                               std::to_string(slot_bytes) + " bytes",
                           ENOMEM);
  }
  CacheFiller* self = f.get();
  f->thread_ = std::thread([self] {
    NameThread("rf-cache-fill");
    self->Run();
  });
  return f;
}

CacheFiller::~CacheFiller() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CacheFiller::Offer(ChunkClaim claim, const void* bytes, size_t n) {
  std::unique_lock lock(mu_);
  ++stats_.offered;
  if (n > slot_bytes_ || n == 0) {
    ++stats_.failed;
    return;  // the claim is released as it goes
  }
  cv_.wait(lock, [&] { return !free_.empty(); });
  const uint32_t buffer = free_.back();
  free_.pop_back();
  lock.unlock();
  // The copy outside the lock: the thread only reads buffers it was given a job for.
  std::memcpy(memory_.get() + buffer * slot_bytes_, bytes, n);
  lock.lock();
  jobs_.push_back(Job{std::move(claim), buffer, n});
  lock.unlock();
  cv_.notify_all();
}

CacheFillerStats CacheFiller::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void CacheFiller::Run() {
  for (;;) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
    if (jobs_.empty()) return;  // stopping, and every job committed
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();

    const uint64_t chunk = job.claim.chunk();
    const uint8_t* bytes = memory_.get() + job.buffer * slot_bytes_;
    Result<CommitOutcome> outcome =
        cache_.Commit(std::move(job.claim), bytes, job.bytes,
                      [&](const void* b, size_t) { return dataset_.VerifyStored(chunk, b); });

    lock.lock();
    if (!outcome.ok()) {
      ++stats_.failed;
      if (!said_) {
        said_ = true;
        std::fprintf(stderr, "ringfeed: cache %s: %s; the run goes on, that chunk uncached\n",
                     cache_.directory().c_str(), outcome.status().ToString().c_str());
      }
    } else if (*outcome == CommitOutcome::kCached) {
      ++stats_.committed;
    } else {
      ++stats_.not_kept;
    }
    free_.push_back(job.buffer);
    lock.unlock();
    cv_.notify_all();
  }
}

}  // namespace rf
