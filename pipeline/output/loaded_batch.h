// LoadedBatch: one batch a Loader (pipeline/loader.h) hands out, in a buffer of its own.
//
// Ownership and lifetime: the batch holds its buffer through a shared_ptr to the OutputPool
// (pipeline/output/output_pool.h) it came from, so it stays valid, unchanged, for as long as any
// holder keeps it, whatever the loader does meanwhile, even after the loader is destroyed; when
// the last holder lets go, the buffer goes back to the pool.
//
// Streams (a GPU's batch): the loader's work that writes it is queued on the loader's stream and
// ends with the batch's `ready` event; WaitOn(stream) makes a consumer's stream wait for it (no
// host wait) and remembers the stream, so that the buffer is written again only after the work
// that stream had queued by the release.
//
// Thread safety: its accessors, WaitOn, Synchronize and the release may run on any thread; the
// producer's setters run on the producing thread before the batch is handed out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace rf {

class OutputPool;  // pipeline/output/output_pool.h

// One decoded batch: n samples in `dtype`, shaped `shape` ({n, C, H, W} or {n, H, W, C} for
// images; {n, d1, ...} otherwise), and n int64 labels; host memory, or memory of GPU `device`.
class LoadedBatch {
 public:
  ~LoadedBatch();  // hands the buffer back to the pool (any thread)
  LoadedBatch(const LoadedBatch&) = delete;
  LoadedBatch& operator=(const LoadedBatch&) = delete;

  void* samples() const { return samples_; }
  int64_t* labels() const { return labels_; }
  // Records of any size (tokens, bytes): samples() holds the n records back to back, shape()
  // {total elements}, and offsets() n + 1 int64 element offsets (record i is elements
  // offsets[i] .. offsets[i + 1]), in the same memory as the samples; null for fixed shapes.
  int64_t* offsets() const { return records_ ? offsets_ : nullptr; }
  uint32_t size() const { return n_; }
  // The samples of the epoch the batch stands for: size(), plus the bad records skipped from it
  // (decoded images under skip_bad_records). position() + span() is where the next batch starts.
  uint32_t span() const { return span_ != 0 ? span_ : n_; }
  // Packed token sequences (pipeline/sequences/sequence_loader.h): the batch's tensors, each a
  // compact row-major view of its buffer (tokens, lengths, cu_seqlens, position_ids); empty
  // otherwise.
  struct View {
    void* data = nullptr;
    DType dtype = DType::kInt64;
    std::vector<int64_t> shape;
  };
  const std::vector<View>& views() const { return views_; }
  // Samples of several fields (pipeline/fields/field_split.h): each field by name, in the
  // dataset's table order, and where it lies: the batch's samples (the decoded image field), its
  // labels (the label field), or views (values, and offsets for tokens and bytes: -1 none).
  // Empty for the other kinds.
  struct Field {
    enum Where { kSamples, kLabels, kViews };
    std::string name;
    Where where = kViews;
    int values = -1, offsets = -1;
  };
  const std::vector<Field>& fields() const { return fields_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  bool on_gpu() const { return gpu_device_ >= 0; }
  int gpu_device() const { return gpu_device_; }  // -1 on the host
  // Global sample indices, in batch order; and where the batch sits in its epoch.
  const std::vector<uint64_t>& indices() const { return indices_; }
  uint64_t epoch() const { return epoch_; }
  uint64_t position() const { return position_; }  // of its first sample

  // GPU: makes `stream` (a cudaStream_t; null = the legacy default stream) wait until the batch is
  // written, without a host wait, and remembers it for the release (above). Host: nothing.
  Status WaitOn(void* stream);
  // GPU: blocks the calling thread until the batch is written. Host: nothing.
  Status Synchronize();

  // For the batch's producer (the maker that writes it, before it is handed out), never for its
  // consumers: where it sits in its epoch (span: the samples of the epoch it stands for, 0 for
  // size()), its samples' global indices, the first n samples kept (n <= size(): the shape's
  // first dim and the indices follow), the record offsets switched on (records of any size: the
  // n + 1 int64 offsets in the batch's memory, returned), and its views (packed sequences).
  void SetPlace(uint64_t epoch, uint64_t position, uint32_t span = 0) {
    epoch_ = epoch;
    position_ = position;
    span_ = span;
  }
  std::vector<uint64_t>& mutable_indices() { return indices_; }
  void Truncate(uint32_t n) {
    n_ = n;
    if (!shape_.empty()) shape_[0] = n;
    if (indices_.size() > n) indices_.resize(n);
  }
  int64_t* UseRecordOffsets() {
    records_ = true;
    return offsets_;
  }
  void SetViews(std::vector<View> views) { views_ = std::move(views); }
  void SetFields(std::vector<Field> fields) { fields_ = std::move(fields); }

 private:
  friend class OutputPool;  // makes the batch in one of its buffers, and reseats it (Reserve)
  LoadedBatch() = default;

  std::shared_ptr<OutputPool> pool_;  // keeps the buffer's memory alive
  uint32_t slot_ = 0;
  void* samples_ = nullptr;
  int64_t* labels_ = nullptr;
  int64_t* offsets_ = nullptr;
  bool records_ = false;
  uint32_t n_ = 0;
  uint32_t span_ = 0;  // 0: n_
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  int gpu_device_ = -1;
  std::vector<uint64_t> indices_;
  uint64_t epoch_ = 0, position_ = 0;
  std::vector<View> views_;
  std::vector<Field> fields_;
};

}  // namespace rf
