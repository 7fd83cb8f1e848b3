#include "pipeline/stage/chunk_staging.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/cpus.h"

namespace rf {

namespace {
// A chunk copy's part, at least (smaller ones are not worth waking a thread for).
constexpr uint64_t kCopyPartBytes = 1 << 20;
}  // namespace

uint32_t HostChunkStaging::DefaultHostCopyThreads() {
  return std::clamp<uint32_t>(AvailableCpus() / LocalRanks() / 4, 1, 4);
}

HostChunkStaging::~HostChunkStaging() = default;

Result<std::unique_ptr<HostChunkStaging>> HostChunkStaging::Create(const StagingLayout& layout,
                                                                   uint32_t copy_threads) {
  if (layout.slots == 0 || layout.slot_bytes == 0 || layout.max_batch == 0) {
    return Status::InvalidArgument("chunk staging needs slots, a slot size and a batch size");
  }
  std::unique_ptr<HostChunkStaging> s(new HostChunkStaging());
  s->layout_ = layout;
  RF_ASSIGN_OR_RETURN(s->area_,
                      // Three windows of chunks: faulted in by the chunks' first copies, so that a
                      // loader's first batch waits for its first window only, not for the whole
                      // area (its size grows with the window, up to hundreds of MB).
                      HostBuffer::Allocate(uint64_t{layout.slots} * layout.slot_bytes,
                                           PinMode::kOff, Prefault::kOnFirstWrite));
  if (!layout.records)
    s->samples_.reset(new uint8_t[size_t{layout.max_batch} * layout.sample_bytes]);
  s->labels_.reset(new uint8_t[size_t{layout.max_batch} * layout.label_bytes]);
  if (copy_threads > 1) s->copiers_ = std::make_unique<WorkPool>(copy_threads, "rf-copy-help");
  return s;
}

Status HostChunkStaging::CopyIn(uint32_t slot, const uint8_t* src, size_t bytes, ReleaseFn release,
                                void* arg) {
  if (slot >= layout_.slots || bytes > layout_.slot_bytes) {
    return Status::InvalidArgument("chunk of " + std::to_string(bytes) +
                                   " bytes does not fit staging slot " + std::to_string(slot));
  }
  uint8_t* dst = area_.data() + slot * layout_.slot_bytes;
  const uint32_t parts = copiers_ ? static_cast<uint32_t>(std::clamp<uint64_t>(
                                        bytes / kCopyPartBytes, 1, copiers_->threads()))
                                  : 1;
  if (parts <= 1) {
    std::memcpy(dst, src, bytes);
  } else {
    copiers_->Run(parts, [&](uint32_t p) {
      // Parts of whole 4 KiB pages (each page faulted in by one thread).
      const uint64_t pages = (bytes + 4095) / 4096;
      const uint64_t lo = std::min<uint64_t>(bytes, pages * p / parts * 4096);
      const uint64_t hi = std::min<uint64_t>(bytes, pages * (p + 1) / parts * 4096);
      std::memcpy(dst + lo, src + lo, hi - lo);
    });
  }
  release(arg);
  return Status::Ok();
}

Result<Batch> HostChunkStaging::GatherFrom(const uint8_t* base, const SampleRef* refs,
                                           const uint64_t* indices, uint32_t n) {
  if (n > layout_.max_batch) return Status::InvalidArgument("batch larger than the staging's");
  // Offsets from `base`, or addresses (base null): one integer sum either way.
  const auto at = [origin = reinterpret_cast<uintptr_t>(base)](uint64_t offset) {
    return reinterpret_cast<const uint8_t*>(origin + offset);
  };
  if (layout_.records) {
    const size_t elem = DTypeSize(layout_.sample_dtype);
    offsets_.resize(size_t{n} + 1);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; ++i) {
      offsets_[i] = static_cast<int64_t>(total / elem);
      total += refs[i].record_bytes;
    }
    offsets_[n] = static_cast<int64_t>(total / elem);
    if (values_.size() < total) values_.resize(total);
    for (uint32_t i = 0; i < n; ++i) {
      std::memcpy(values_.data() + static_cast<uint64_t>(offsets_[i]) * elem,
                  at(refs[i].sample_offset), refs[i].record_bytes);
      std::memcpy(labels_.get() + i * layout_.label_bytes, at(refs[i].label_offset),
                  layout_.label_bytes);
    }
    Batch b = layout_.BatchAt(values_.data(), labels_.get(), n);
    b.sample_indices = indices;
    b.offsets = offsets_.data();
    b.values_bytes = total;
    return b;
  }
  for (uint32_t i = 0; i < n; ++i) {
    std::memcpy(samples_.get() + i * layout_.sample_bytes, at(refs[i].sample_offset),
                layout_.sample_bytes);
    std::memcpy(labels_.get() + i * layout_.label_bytes, at(refs[i].label_offset),
                layout_.label_bytes);
  }
  Batch b = layout_.BatchAt(samples_.get(), labels_.get(), n);
  b.sample_indices = indices;  // host memory already, valid until the next Gather (the contract)
  return b;
}

}  // namespace rf
