// ChunkStaging: where the chunks of the resident windows live while their batches are trained,
// in the memory the backend computes from, and the three operations the streaming source does on
// it. One implementation per backend, chosen once:
//   HostChunkStaging (below)             host memory; copies and gathers are plain memcpy
//   CudaChunkStaging (cuda_chunk_staging.h)  device memory; copies on K copy streams, a gather
//                                         kernel on the compute stream
//
// The staging area is `slots` equal slots of `slot_bytes`, each holding one whole chunk as stored
// (samples, then labels at the chunk's labels offset). The source decides which chunk goes where
// and when a slot may be reused:
//
//   copy thread:    CopyIn(slot, host chunk) -- the host memory is handed back through `release`
//                   as soon as the copy has read it
//   compute thread: AwaitCopy(slot) before the first batch that reads the slot;
//                   Gather(refs, indices) -> a batch in the backend's memory;
//                   Retire(slot) once no batch queued from now on reads it: the next CopyIn into
//                   it must not overwrite it before the work queued so far has run.
//
// Thread safety: CopyIn is called from one thread (the copy thread), the others from one other
// thread (the compute thread); the source orders a slot's Retire before its next CopyIn on the
// host (through its free list), and the implementation orders the device work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/batch.h"
#include "core/dtype.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/stage/host_buffer.h"
#include "pipeline/stage/work_pool.h"

namespace rf {

// One sample of a batch: byte offsets into the staging area of its sample and of its label, and
// for records of any size the record's bytes (0 for fixed-shape samples: the layout's size).
struct SampleRef {
  uint64_t sample_offset;
  uint64_t label_offset;
  uint64_t record_bytes = 0;
};

struct StagingLayout {
  uint32_t slots = 0;
  uint64_t slot_bytes = 0;
  uint32_t max_batch = 0;
  size_t sample_bytes = 0, label_bytes = 0;
  DType sample_dtype = DType::kUInt8, label_dtype = DType::kUInt8;
  // Records of any size (sample_bytes: the largest): only the host staging gathers them.
  bool records = false;

  // A batch of n samples (and labels) of this layout's types at `samples` (and `labels`).
  Batch BatchAt(const void* samples, const void* labels, uint32_t n) const {
    return Batch{samples, sample_dtype, labels, label_dtype, n};
  }
};

// Sample `sample` of global chunk `chunk`, whose stored bytes start at `chunk_base` of an area.
inline SampleRef RefTo(const Dataset& d, uint64_t chunk, uint64_t chunk_base, uint32_t sample) {
  const format::Header& h = d.header();
  return SampleRef{chunk_base + uint64_t{sample} * h.SampleBytes(),
                   chunk_base + d.LabelsOffset(chunk) + uint64_t{sample} * h.LabelBytes()};
}

// Record `sample` of global chunk `chunk` (records of any size), whose data starts at
// `chunk_base` of an area and, readable on the host, at `chunk_data` (its record table, which
// Dataset::CheckRecords has checked).
inline SampleRef RecordRefTo(const Dataset& d, uint64_t chunk, uint64_t chunk_base,
                             const uint8_t* chunk_data, uint32_t sample) {
  uint64_t at[2];
  std::memcpy(at, chunk_data + uint64_t{sample} * sizeof(uint64_t), sizeof at);
  return SampleRef{chunk_base + d.RecordsOffset(chunk) + at[0],
                   chunk_base + d.LabelsOffset(chunk) + uint64_t{sample} * d.header().LabelBytes(),
                   at[1] - at[0]};
}

class ChunkStaging {
 public:
  using ReleaseFn = void (*)(void* arg);
  virtual ~ChunkStaging() = default;

  virtual const StagingLayout& layout() const = 0;
  // Copies `bytes` of a host chunk into `slot`; calls release(arg) once `src` may be reused
  // (possibly later, from another thread).
  virtual Status CopyIn(uint32_t slot, const uint8_t* src, size_t bytes, ReleaseFn release,
                        void* arg) = 0;
  virtual Status AwaitCopy(uint32_t slot) = 0;
  virtual Status Retire(uint32_t slot) = 0;
  // A batch of n <= max_batch samples, valid until the next Gather (device memory: until the work
  // queued before the next Gather has run). `indices` (host memory, n global sample indices) become
  // the batch's sample_indices, in its memory; the caller keeps them unchanged until the next
  // Gather and sets the batch's epoch.
  virtual Result<Batch> Gather(const SampleRef* refs, const uint64_t* indices, uint32_t n) {
    return GatherFrom(area(), refs, indices, n);
  }
  // The same with the refs' offsets counted from `base` instead of this area's start; base null:
  // they are addresses (reinterpret_cast<uintptr_t>), of memory the gather can read (a mixture's
  // batch, pipeline/sources/mixed_source.h, from the staging areas of several sources of this
  // layout).
  virtual Result<Batch> GatherFrom(const uint8_t* base, const SampleRef* refs,
                                   const uint64_t* indices, uint32_t n) = 0;
  // The area's first byte (host or device memory): what SampleRef offsets count from.
  virtual const uint8_t* area() const = 0;
  // Waits until every copy and every batch queued so far has run (and every release called).
  virtual Status Drain() = 0;
  // The staging area where the host can read it (a slot's chunk once AwaitCopy returned for it);
  // null where it lives on a device.
  virtual const uint8_t* host_area() const { return nullptr; }
};

// Host memory: the CPU backend's staging, and records'. CopyIn copies at once, split over
// `copy_threads` (the copy thread and helpers: the chunks of a window that came in together are
// copied each in a fraction of the time, so a first window waits for the slowest chunk's read,
// not for its chunks' copies one after another), and releases; Gather copies the batch's samples
// and labels into one batch buffer.
class HostChunkStaging final : public ChunkStaging {
 public:
  static Result<std::unique_ptr<HostChunkStaging>> Create(
      const StagingLayout& layout, uint32_t copy_threads = DefaultHostCopyThreads());
  ~HostChunkStaging() override;
  // A quarter of the cores this process may use, shared with the other ranks on the machine, 1
  // to 4.
  static uint32_t DefaultHostCopyThreads();

  const StagingLayout& layout() const override { return layout_; }
  Status CopyIn(uint32_t slot, const uint8_t* src, size_t bytes, ReleaseFn release,
                void* arg) override;
  Status AwaitCopy(uint32_t) override { return Status::Ok(); }
  Status Retire(uint32_t) override { return Status::Ok(); }
  Result<Batch> GatherFrom(const uint8_t* base, const SampleRef* refs, const uint64_t* indices,
                           uint32_t n) override;
  const uint8_t* area() const override { return area_.data(); }
  Status Drain() override { return Status::Ok(); }
  const uint8_t* host_area() const override { return area_.data(); }

 private:
  HostChunkStaging() = default;
  StagingLayout layout_;
  HostBuffer area_;
  std::unique_ptr<WorkPool> copiers_;
  std::unique_ptr<uint8_t[]> samples_, labels_;
  // Records of any size: the batch's records (grown to the largest batch yet) and offsets.
  std::vector<uint8_t> values_;
  std::vector<int64_t> offsets_;
};

}  // namespace rf
