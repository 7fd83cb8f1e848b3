// TrainingSource: what `ringfeed train` trains from, in either mode (StreamingSource,
// ManagedSource): a BatchSource in the backend's memory that also says which samples its last
// batch holds, what it read from disk and how long the consumer waited for data. Both visit the
// samples in WindowOrder (pipeline/order/window_order.h), so the same seed gives the same batches
// in either mode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/order_settings.h"
#include "pipeline/sources/batch_source.h"

namespace rf {

// One sample where it lies in host memory: a record of any size, or a fixed-shape sample.
struct HostSpan {
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;
};

class TrainingSource : public BatchSource {
 public:
  // Global sample indices of the last batch, in batch order (for --dump-order).
  virtual const std::vector<uint64_t>& batch_samples() const = 0;
  // Bytes read from disk, and seconds Next() spent blocked waiting for data, since creation.
  virtual uint64_t bytes_read() const = 0;
  virtual double wait_seconds() const = 0;
  // The chunks' data handed on since creation: bytes_read() decompressed (format version 2).
  virtual uint64_t bytes_delivered() const { return bytes_read(); }
  // The chunk stage's (pipeline/stage/chunk_feeder.h) working seconds, summed over its threads, and
  // its thread count (0: no stage).
  virtual double decode_busy_seconds() const { return 0; }
  virtual uint32_t decode_threads() const { return 0; }
  // Seconds the disk reader sat idle since creation, all its reads done and no free buffer to
  // read into: the pipeline behind it holding it back. (Fewer reads in flight than the queue
  // depth is not counted.)
  virtual double reader_held_seconds() const { return 0; }
  // One line for the start of a run: the mode and its memory.
  virtual std::string Describe() const = 0;
  // What the epoch StartEpoch began last has to report at its end (decoded images: the bad
  // records skipped); "" for nothing.
  virtual std::string EpochReport() const { return ""; }
  // A mixture of datasets (pipeline/sources/mixed_source.h): where its stream stands after the last
  // batch handed out, for a checkpoint; null for one dataset.
  virtual const MixtureState* mixture_state() const { return nullptr; }
  // A mixture: back to `s`, a state mixture_state() gave after an earlier batch of the same
  // order, for a consumer that read ahead of its own consumer and drops the batches after it
  // (pipeline/images/image_stage.h); the next StartEpoch names the mixture epoch and position.
  // Usage where `s` cannot be this mixture's; Unsupported for one dataset.
  virtual Status RewindMixture(const MixtureState& /*s*/) {
    return Status::Unsupported("a mixture's state: this source reads one dataset");
  }
  // The next batch's samples where they lie, ungathered (a reader that copies each sample once,
  // to where it goes: pipeline/sequences/sequence_loader.h's packing): `out` gets one span a
  // sample, valid until the next call of NextInPlace, Next or StartEpoch; 0 once the epoch is over.
  // Where the source's samples are not in host memory: Unsupported.
  virtual Result<uint32_t> NextInPlace(std::vector<HostSpan>* /*out*/) {
    return Status::Unsupported("this source's samples are not in host memory");
  }
};

}  // namespace rf
