// Checkpoint: everything needed to continue a training run exactly where it stopped, in one
// backend-independent file (parameters and momentum are host copies, so a checkpoint written from
// the CPU backend loads in the CUDA backend and back).
//
// File layout (version 6, all integers and floats little-endian):
//
//   magic "RFCKPT\0\x1a" (8) | u32 version
//   model:     u32 channels, height, width, classes | u32 blocks | u32 conv[blocks] | u32 hidden
//              (a dataset of image records: 3, S, S for the --image-size S it decoded at,
//              which a resume takes: src/train_config.h's ApplyCheckpoint)
//   sgd:       f32 lr, momentum, weight_decay     (lr: the base lr the schedule scales)
//   position:  u64 seed, epoch, next_sample, step | u32 batch_size | u32 order_window
//              u64 dataset_id, dataset_samples
//   ranks:     u32 world_size | u32 stretches | per stretch: u32 world_size, u64 position
//   optimizer: u32 kind (0 SGD, 1 AdamW) | f32 beta1, beta2, eps | f32 label_smoothing   (v3)
//   schedule:  u32 kind (LrScheduleKind) | f32 warmup_epochs | u64 steps_per_epoch, epochs (v3)
//   augment:   u32 crop_pad | u32 flip | u64 erase_threshold (core/augment.h's AugmentParams) (v3)
//   batch norm: u32 0 or 1 (the model's; the tensors follow from it)                        (v4)
//   mixture:   u32 datasets (0: one dataset, none of what follows) | u64 steps                (v5)
//              per dataset: u64 dataset_id, dataset_samples | f64 weight (normalized)
//                           u64 drawn, epoch, next_sample | u32 stretches
//                           per stretch: u32 world_size, u64 position
//   partition: u32 node_ranks (0: the global partition) | per stretch of `ranks`: u32 node_ranks
//              | per mixture dataset, per stretch: u32 node_ranks                            (v6)
//   u32 tensors | per parameter tensor (ParameterShapes order): u64 count, f32[count]
//                 then the same for each optimizer state tensor: OptimizerSlots(kind) slots of
//                 `tensors` tensors (SGD: momentum; AdamW: first moments, then second moments)
//                 then, with batch norm, the running statistics (RunningStatShapes order) (v4)
//   u64 XXH3-64 of every byte before it
//
// AdamW's bias corrections count its updates: one per step, so `step` is that count (the next
// update is number step + 1). The schedule's span (steps per epoch, epochs) is the one the run
// began with; a resumed run keeps it, so it computes the same lr for every step (0 in files
// before version 3: not recorded). Version 1 and 2 files read as SGD, no label smoothing, the
// constant schedule, with the augmentation not recorded (a resume keeps --augment's).
//
// The order's settings are the run's OrderSettings (core/order_settings.h), as far as the file
// records them: the shuffling state is (seed, order_window, epoch): the order of an epoch is
// recomputed from them (pipeline/order/window_order.h), so no generator state is stored.
// next_sample indexes that order. order_window is the shuffle window W in chunks, kOrderStored for
// the stored order, or 0 in files written before it was recorded (the field was reserved, always
// 0). A data-parallel run records the world size it ran at (next_sample is then each rank's
// position in its part of the epoch) and, where the epoch was begun by runs at other world sizes,
// their stretches (the resume record, core/order_settings.h's ResumedEpoch), oldest first; version
// 1 files (written before ranks) read as world size 1 with none. A mixture of datasets (`ringfeed
// train --data a,b --weights`, pipeline/sources/mixture.h) records its datasets (id, samples,
// normalized weight) and its stream (core/order_settings.h's MixtureState: the steps, and each
// dataset's draws, epoch, position in its epoch's order at the checkpoint's world size, and that
// epoch's stretches); the top-level epoch, next_sample and stretches are then the mixture epoch's,
// dataset_id the datasets' ids hashed (io/dataset.h's PartsDatasetId) and dataset_samples their
// samples together. Files before version 5 read as one dataset. The partition (version 6) is the
// run's OrderSettings::node_ranks and each stretch's (pipeline/order/world_order.h's node
// partition); files before it read as the global partition. Writing goes through AtomicOutput
// (temp name, fsync, rename): a crash mid-write leaves the previous checkpoint in place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/augment.h"
#include "core/order_settings.h"
#include "core/status.h"
#include "model/lr_schedule.h"
#include "model/model.h"

namespace rf {

struct Checkpoint {
  ModelConfig config;
  OptimizerConfig optimizer;  // lr: the base learning rate the schedule scales
  LrScheduleConfig schedule;
  LrScheduleSpan schedule_span;  // {0, 0}: not recorded (files before version 3)
  // The training split's augmentation (--augment), keyed by the seed, epoch and sample index, so
  // a resumed run continues it exactly; nullopt: not recorded (files before version 3).
  std::optional<AugmentParams> augment;
  // Parameters in ParameterShapes(config) order and sizes; the optimizer state as
  // Backend::GetState gives it: OptimizerSlots(optimizer.kind) slots of such tensors.
  Tensors params, momentum;
  // Batch norm's running statistics in RunningStatShapes(config) order (none without it).
  Tensors running_stats;
  // The order the run trained in, as far as the file records it: the seed, the batch size (per
  // rank), the shuffle and its window, the world size of the run that wrote it, and `resumed`:
  // the stretches of `epoch` begun by earlier runs at other world sizes (resumed.epoch is
  // `epoch`). Not recorded, so read as OrderSettings's defaults (a resume keeps its own):
  // drop_last, the rank, the first window.
  OrderSettings order;
  // false: a file from before the shuffle was recorded (order_window 0): order.shuffle and
  // shuffle_window are the defaults, and a resume keeps its own.
  bool shuffle_recorded = true;
  uint64_t epoch = 0;        // the epoch to continue (0-based)
  uint64_t next_sample = 0;  // index, in epoch's order, of the next sample to train on
  uint64_t step = 0;         // training steps taken so far, over all epochs
  uint64_t dataset_id = 0;   // of the training dataset, so a resume on other data is refused
  uint64_t dataset_samples = 0;
  // A mixture's datasets, in order (none: one dataset), and its stream (sources: one a dataset).
  struct MixtureDataset {
    uint64_t dataset_id = 0, dataset_samples = 0;
    double weight = 0;  // normalized
    bool operator==(const MixtureDataset&) const = default;
  };
  std::vector<MixtureDataset> datasets;
  MixtureState mixture;
};

inline constexpr char kCheckpointMagic[8] = {'R', 'F', 'C', 'K', 'P', 'T', '\0', '\x1a'};
inline constexpr uint32_t kCheckpointVersion = 6;
inline constexpr uint32_t kMaxMixtureDatasets = 4096;      // more is a damaged file
inline constexpr uint32_t kMaxCheckpointStretches = 1024;  // more is a damaged file
inline constexpr uint32_t kOrderStored = 0xffffffffu;      // order_window of `--shuffle none`
// No run trains 2^32 epochs: a larger epoch is a damaged or forged file.
inline constexpr uint64_t kMaxCheckpointEpoch = 0xffffffffu;

// The bytes of a checkpoint file. Fails with InvalidArgument when the tensors do not match
// ParameterShapes(c.config), for a world size of 0, more than kMaxCheckpointStretches stretches,
// or stretches of an epoch other than c.epoch.
Result<std::vector<uint8_t>> EncodeCheckpoint(const Checkpoint& c);
// Parses and validates checkpoint bytes; errors are Corruption naming `path` and the byte offset
// (truncation, bad magic or version, an invalid model (ModelConfig::Validate: its size too),
// tensor sizes that do not match the model, trailing bytes, checksum mismatch), and, in a file
// whose checksum holds, fields no run writes: a learning rate that is not finite, a momentum or
// weight decay that is negative or not finite, an unknown optimizer or schedule, betas outside
// [0, 1), an eps that is not positive and finite, a label smoothing outside [0, 1), a warmup
// that is negative or not finite, an augmentation --augment cannot ask for, a batch norm flag
// other than 0 or 1, a running statistic that is not finite or a negative variance, an epoch above
// kMaxCheckpointEpoch, a next sample past dataset_samples, a batch size or world size of 0, a
// mixture's weight that is negative or not finite or weights all 0, draws that do not sum to its
// steps, a dataset's position past its samples or epoch above kMaxCheckpointEpoch. Nothing
// is allocated from a size the file claims before the bytes for it are known to be there.
Result<Checkpoint> DecodeCheckpoint(const uint8_t* data, size_t n, const std::string& path);

// Writes atomically: the file at `path` is either the old one or the complete new one.
Status WriteCheckpoint(const std::string& path, const Checkpoint& c);
// Reads and validates a checkpoint file (errors as DecodeCheckpoint, or IOError/NotFound).
Result<Checkpoint> ReadCheckpoint(const std::string& path);
// A checkpoint file's bytes, unchecked (DecodeCheckpoint checks them; a data-parallel run reads
// the file on rank 0 and hands the bytes to the others).
Result<std::vector<uint8_t>> ReadCheckpointBytes(const std::string& path);
// InvalidArgument naming `path` when the checkpoint's model is not `requested`.
Status CheckCheckpointModel(const Checkpoint& c, const ModelConfig& requested,
                            const std::string& path);
// ReadCheckpoint, then CheckCheckpointModel.
Result<Checkpoint> LoadCheckpoint(const std::string& path, const ModelConfig& requested);

// "1x28x28, 10 classes, conv 8,16, hidden 32": for messages.
std::string DescribeModel(const ModelConfig& c);

}  // namespace rf
