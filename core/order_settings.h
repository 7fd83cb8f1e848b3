// OrderSettings: what decides which samples each batch holds, one value from the command line to
// the epoch order and into a checkpoint and back. `ringfeed train`'s flags and the Python loader's
// keyword arguments set the one inside a PipelineConfig (pipeline/pipeline_config.h); the batch
// sources hand it whole to the epoch order (pipeline/window_order.h, which states what each field
// does to the order); a checkpoint records it (model/checkpoint.h) and a resumed run takes it back
// (src/train_config.h's ApplyCheckpoint). It is copied whole, never field by field.
//
// ResumedEpoch is the resume record: an epoch begun by earlier runs at other world sizes, as the
// order continues it and as the checkpoint stores it.
//
// It lives in core/ because pipeline/ (the order) and model/ (the checkpoint) both use it and never
// include each other.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <vector>

namespace rf {

// The epoch order: a seeded shuffle over windows of chunks, or the stored order.
enum class ShuffleMode { kWindow, kNone };

// One stretch of an epoch trained at one world size: each of its world_size ranks took the first
// `position` samples of its part (positions are in the rank's order of that stretch).
struct EpochStretch {
  uint32_t world_size = 1;  // >= 1
  uint64_t position = 0;
};

// Epoch `epoch` was begun by earlier runs at other world sizes, `stretches` of it, oldest first:
// this run's ranks share, each exactly once, the samples those stretches left. Every other epoch is
// ordinary. No stretches: no epoch is resumed.
struct ResumedEpoch {
  uint64_t epoch = 0;
  std::vector<EpochStretch> stretches = {};
};

struct OrderSettings {
  uint32_t batch_size = 128;  // >= 1
  bool drop_last = false;     // each epoch's last batch is left out where it is smaller
  ShuffleMode shuffle = ShuffleMode::kWindow;
  uint32_t shuffle_window = 64;  // W, in chunks; >= 1
  // Each epoch's first window, in chunks (at most W), so the first batch need not wait for W
  // chunks from disk. No option sets it and no checkpoint records it: a constant of the order that
  // tests make small.
  uint32_t first_window_chunks = 8;
  uint64_t seed = 1;  // the order's (and, for training, the initial weights' and augmentation's)
  // This rank's part of every epoch: rank < world_size.
  uint32_t rank = 0;
  uint32_t world_size = 1;
  ResumedEpoch resumed;
};

}  // namespace rf
