// BatchSource: what the training loop pulls batches (core/batch.h) from, one epoch at a time.
// Implementations: the training sources of pipeline/sources/training_source.h (StreamingSource,
// ManagedSource), for the training split and, in stored order, the test split.
//
// An epoch visits every sample once, in WindowOrder (pipeline/order/window_order.h), batch_size at
// a time; the last batch is partial unless drop_last is set, in which case its samples are skipped
// for that epoch.
//
// Thread safety: none; one thread drives a source.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/batch.h"
#include "core/status.h"

namespace rf {

// Samples an epoch of `samples` trains on in batches of `batch`: all of them, or with drop_last
// only the full batches'.
inline uint64_t EpochSamples(uint64_t samples, uint32_t batch, bool drop_last) {
  return drop_last ? samples / batch * batch : samples;
}
// The size of the batch that starts at `position`: a full batch, the epoch's partial last one, or
// 0 at the epoch's end.
inline uint32_t BatchSizeAt(uint64_t position, uint32_t batch, uint64_t epoch_samples) {
  return static_cast<uint32_t>(std::min<uint64_t>(batch, epoch_samples - position));
}
// Epochs count from 0. The most an epoch counter holds (a checkpoint's, a state dict's,
// set_epoch's; model/checkpoint.h's kMaxCheckpointEpoch, checked equal where both are seen) is
// kMaxEpoch: where the end of the last epoch a source hands out, kMaxEpoch - 1, leaves it (as
// `ringfeed train --epochs` is at most kMaxEpoch). So whatever a run reaches, its state holds.
inline constexpr uint64_t kMaxEpoch = 0xffffffffu;
// The check every StartEpoch makes of its epoch: Usage for one past kMaxEpoch - 1.
inline Status CheckEpochHandedOut(uint64_t epoch) {
  if (epoch < kMaxEpoch) return Status::Ok();
  return Status::Usage("epoch " + std::to_string(epoch) + " is past the last epoch a loader " +
                       "hands out, " + std::to_string(kMaxEpoch - 1) +
                       " (epochs count from 0; a state or checkpoint holds at most " +
                       std::to_string(kMaxEpoch) + ", where the last one's end leaves it)");
}
// The check every StartEpoch makes of its position: InvalidArgument when position >
// epoch_samples.
inline Status CheckEpochPosition(uint64_t position, uint64_t epoch_samples) {
  if (position <= epoch_samples) return Status::Ok();
  return Status::InvalidArgument("epoch position " + std::to_string(position) +
                                 " is past the epoch's " + std::to_string(epoch_samples) +
                                 " samples");
}

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  virtual uint64_t sample_count() const = 0;
  // Samples the epoch StartEpoch began last (epoch 0 before any) trains on: sample_count() (a
  // rank's part of it in the training sources, whose resumed epoch may hold fewer, see
  // pipeline/order/window_order.h), less a partial last batch with drop_last.
  virtual uint64_t epoch_samples() const = 0;

  // Starts epoch `epoch` at `position`, the index in the epoch's order of the first sample to
  // deliver (0 for a fresh epoch; a checkpoint's next_sample on resume). Usage for an epoch
  // past kMaxEpoch - 1 (CheckEpochHandedOut); InvalidArgument when position is past that
  // epoch's samples.
  virtual Status StartEpoch(uint64_t epoch, uint64_t position) = 0;
  // The next batch of the current epoch; n == 0 once the epoch is over.
  virtual Result<Batch> Next() = 0;
  // Index in the epoch's order of the next sample Next() will deliver.
  virtual uint64_t position() const = 0;
};

}  // namespace rf
