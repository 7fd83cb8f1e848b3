// SourceMaker: the part of a maker whose batches are made one at a time straight from the
// source's (pipeline/sources/training_source.h): fixed-shape tensors and records of any size. It
// starts, places and reads the source, and sets each batch's place and sample indices from it;
// a kind says how a stored batch becomes its output (Fill).
//
// Ownership and threads: as BatchMaker (pipeline/makers/batch_maker.h); the source and the pool
// are the Loader's.
#pragma once

#include <memory>
#include <utility>

#include "pipeline/makers/batch_maker.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/output_pool.h"

namespace rf {

class SourceMaker : public BatchMaker {
 public:
  SourceMaker(TrainingSource& source, LoaderDevice& device, std::shared_ptr<OutputPool> pool)
      : source_(source), device_(device), pool_(std::move(pool)) {}

  Status StartEpoch(uint64_t epoch, uint64_t position) override {
    return source_.StartEpoch(epoch, position);
  }
  Result<std::shared_ptr<LoadedBatch>> Make(uint64_t epoch) override {
    const uint64_t position = source_.position();
    RF_ASSIGN_OR_RETURN(const Batch stored, source_.Next());
    if (stored.n == 0) return std::shared_ptr<LoadedBatch>();
    RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> out, Fill(stored));
    out->mutable_indices() = source_.batch_samples();
    out->SetPlace(epoch, position);
    return out;
  }
  uint64_t position() const override { return source_.position(); }
  const MixtureState* mixture_state() const override { return source_.mixture_state(); }

 protected:
  // `stored` (the source's batch, valid until its next call) in a buffer of the pool, its
  // writes queued on the device.
  virtual Result<std::shared_ptr<LoadedBatch>> Fill(const Batch& stored) = 0;

  TrainingSource& source_;
  LoaderDevice& device_;
  std::shared_ptr<OutputPool> pool_;
};

}  // namespace rf
