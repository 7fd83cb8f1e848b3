// MemoryBatchSource: a BatchSource that reads every chunk of a dataset into host memory once, at
// Load(), and gathers each batch from there. It needs RAM for the whole dataset (Fashion-MNIST:
// 47 MB), so it is for small datasets, tests and the CPU reference runs; the streaming pipeline
// replaces it for datasets larger than RAM.
//
// Memory: the dataset and one batch buffer are allocated at Load(); Next() allocates nothing
// (StartEpoch computes the epoch's order, one vector of sample_count indices).
#pragma once

#include <memory>
#include <vector>

#include "io/dataset.h"
#include "pipeline/batch_source.h"

namespace rf {

class MemoryBatchSource final : public BatchSource {
 public:
  // Reads and verifies every chunk of `d` (errors name the file, chunk and offset).
  // InvalidArgument when batch_size is 0.
  static Result<std::unique_ptr<MemoryBatchSource>> Load(const Dataset& d,
                                                         const BatchSourceOptions& options);

  uint64_t sample_count() const override { return count_; }
  uint64_t epoch_samples() const override;
  Status StartEpoch(uint64_t epoch, uint64_t position) override;
  Result<Batch> Next() override;
  uint64_t position() const override { return position_; }

 private:
  MemoryBatchSource() = default;

  BatchSourceOptions opts_;
  uint64_t count_ = 0;
  size_t sample_bytes_ = 0, label_bytes_ = 0;
  DType sample_dtype_ = DType::kUInt8, label_dtype_ = DType::kUInt8;
  std::vector<uint8_t> samples_, labels_;  // the whole dataset, in stored order
  std::vector<uint8_t> batch_samples_, batch_labels_;
  std::vector<uint64_t> order_;  // the current epoch's order (empty: stored order)
  uint64_t position_ = 0;
};

}  // namespace rf
