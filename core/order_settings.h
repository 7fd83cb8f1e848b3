// OrderSettings: what decides which samples each batch holds, one value from the command line to
// the epoch order and into a checkpoint and back. `ringfeed train`'s flags and the Python loader's
// keyword arguments set the one inside a PipelineConfig (pipeline/sources/pipeline_config.h); the
// batch sources hand it whole to the epoch order (pipeline/order/window_order.h, which states what
// each field does to the order); a checkpoint records it (model/checkpoint.h) and a resumed run
// takes it back (src/train_config.h's ApplyCheckpoint). It is copied whole, never field by field.
//
// ResumedEpoch is the resume record: an epoch begun by earlier runs at other world sizes, as the
// order continues it and as the checkpoint stores it. MixtureState is a weighted mixture of
// datasets' (pipeline/sources/mixture.h): where its stream and each dataset's epoch stand.
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
  // The stretch's partition (OrderSettings::node_ranks): 0 the global one. Only stretch 0's
  // decides an order (the later ones split what it left).
  uint32_t node_ranks = 0;
  bool operator==(const EpochStretch&) const = default;
};

// Epoch `epoch` was begun by earlier runs at other world sizes, `stretches` of it, oldest first:
// this run's ranks share, each exactly once, the samples those stretches left. Every other epoch is
// ordinary. No stretches: no epoch is resumed.
struct ResumedEpoch {
  uint64_t epoch = 0;
  std::vector<EpochStretch> stretches = {};
};

// Where a weighted mixture of datasets stands (pipeline/sources/mixture.h states the mixture): the
// steps each rank has taken since the start (every rank takes one sample a step, all from the same
// dataset), how many of them each dataset gave, and where each dataset's own epoch stands. The
// same on every rank; a checkpoint records it (model/checkpoint.h) and a state dict (Python).
struct MixtureSourceState {
  uint64_t epoch = 0;     // the dataset's own epoch
  uint64_t position = 0;  // samples of it each rank took, in the rank's order of that epoch
  // The stretches of `epoch` that runs at other world sizes trained before the one `position`
  // counts in (ResumedEpoch's, oldest first); none for an ordinary epoch.
  std::vector<EpochStretch> stretches = {};
  bool operator==(const MixtureSourceState&) const = default;
};
struct MixtureState {
  uint64_t steps = 0;                // k: samples each rank took since the start
  std::vector<uint64_t> drawn = {};  // per dataset: the steps it gave (they sum to steps)
  std::vector<MixtureSourceState> sources = {};  // per dataset; none: the mixture's start
  bool operator==(const MixtureState&) const = default;
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
  // The partition: 0, the global one (each epoch deals all the chunks to all the ranks); L >= 1,
  // the node partition: ranks in machines of L consecutive ones, each machine's ranks drawing
  // from the same part of the dataset every epoch (pipeline/order/world_order.h). Set by
  // --partition node / --node-ranks (PipelineConfig::ResolveLocalRanks); a checkpoint (version 6)
  // and a state dict (version 5) record it. Like world_size, the run's own: a resume in another
  // layout appends the saved stretch.
  uint32_t node_ranks = 0;
  ResumedEpoch resumed;
};

}  // namespace rf
