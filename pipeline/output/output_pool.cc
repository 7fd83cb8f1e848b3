#include "pipeline/output/output_pool.h"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>

namespace rf {

Status LoadedBatch::WaitOn(void* stream) { return pool_->WaitOn(slot_, stream); }
Status LoadedBatch::Synchronize() { return pool_->Synchronize(slot_); }
LoadedBatch::~LoadedBatch() {
  if (pool_) pool_->Release(slot_);
}

Status OutputPool::Grow(uint32_t initial) {
  for (uint32_t i = 0; i < initial; ++i) {
    RF_ASSIGN_OR_RETURN(Buffer b, AddBuffer(sample_bytes_));
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(static_cast<uint32_t>(all_.size()));
    all_.push_back(b);
  }
  return Status::Ok();
}

size_t OutputPool::buffers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return all_.size();
}

Result<std::shared_ptr<LoadedBatch>> OutputPool::Acquire(uint32_t n, DType dtype,
                                                         std::vector<int64_t> shape) {
  if (n > batch_) {
    return Status::InvalidArgument("a batch of " + std::to_string(n) +
                                   " samples does not fit the output pool's " +
                                   std::to_string(batch_));
  }
  uint32_t slot = 0;
  Buffer buffer;
  bool fresh = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (free_.empty()) {
      lock.unlock();  // allocation may take a while; releases go on meanwhile
      RF_ASSIGN_OR_RETURN(buffer, AddBuffer(sample_bytes_));
      lock.lock();
      slot = static_cast<uint32_t>(all_.size());
      all_.push_back(buffer);
      fresh = true;
    } else {
      // The most recently released buffer: the warmest in the caches, and on the GPU the one
      // whose consumers are most likely done.
      slot = free_.back();
      free_.pop_back();
      buffer = all_[slot];
    }
  }
  if (!fresh) {
    const Status st = BeforeReuse(slot);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(slot);
      return st;
    }
  }
  std::shared_ptr<LoadedBatch> b(new LoadedBatch);
  b->pool_ = shared_from_this();
  b->slot_ = slot;
  b->samples_ = buffer.samples;
  b->labels_ = buffer.labels;
  b->offsets_ = buffer.labels + batch_;
  b->n_ = n;
  b->dtype_ = dtype;
  b->shape_ = std::move(shape);
  b->gpu_device_ = gpu_device_;
  return b;
}

Status OutputPool::Reserve(LoadedBatch& b, size_t bytes) {
  size_t have = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    have = all_[b.slot_].sample_bytes;
  }
  if (bytes <= have) return Status::Ok();
  RF_ASSIGN_OR_RETURN(Buffer nb, ReplaceBuffer(b.slot_, std::max(bytes, have + have / 2)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    all_[b.slot_] = nb;
  }
  b.samples_ = nb.samples;
  b.labels_ = nb.labels;
  b.offsets_ = nb.labels + batch_;
  return Status::Ok();
}

void OutputPool::Release(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  OnRelease(slot);
  free_.push_back(slot);
}

void HostOutputPool::Aligned::operator()(void* p) const { std::free(p); }

Result<std::shared_ptr<HostOutputPool>> HostOutputPool::Create(size_t sample_bytes, uint32_t batch,
                                                               uint32_t buffers) {
  std::shared_ptr<HostOutputPool> pool(new HostOutputPool(sample_bytes, batch));
  RF_RETURN_IF_ERROR(pool->Grow(buffers));
  return pool;
}

Result<std::pair<void*, OutputPool::Buffer>> HostOutputPool::Allocate(size_t sample_bytes) const {
  // Samples, then the labels at the next 64-byte boundary; 64-byte aligned for vector loads.
  constexpr size_t kAlign = 64;
  const size_t labels_at = (sample_bytes + kAlign - 1) / kAlign * kAlign;
  const size_t bytes = (labels_at + LabelAreaBytes() + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, bytes);
  if (p == nullptr) {
    // ENOMEM, as the kernel says it: an OSError in Python, exit 1 from the programs.
    return Status::IOError("", "cannot allocate a " + std::to_string(bytes) + "-byte output buffer",
                           ENOMEM);
  }
  uint8_t* base = static_cast<uint8_t*>(p);
  return std::make_pair(p,
                        Buffer{base, reinterpret_cast<int64_t*>(base + labels_at), sample_bytes});
}

Result<OutputPool::Buffer> HostOutputPool::AddBuffer(size_t sample_bytes) {
  RF_ASSIGN_OR_RETURN(auto made, Allocate(sample_bytes));
  memory_.emplace_back(made.first);
  return made.second;
}

Result<OutputPool::Buffer> HostOutputPool::ReplaceBuffer(uint32_t slot, size_t sample_bytes) {
  RF_ASSIGN_OR_RETURN(auto made, Allocate(sample_bytes));
  memory_[slot].reset(made.first);  // the consumer released it: nothing reads it any more
  return made.second;
}

}  // namespace rf
