// TrainConfig: everything one `ringfeed train` run is asked to do, typed and validated. The
// command line (and --config file) is read into one once (src/train_flags.h); a resumed
// checkpoint adjusts it in one place (ApplyCheckpoint); every component's options are derived
// from it in one place (DeriveTrainComponents), so the batch size, the order and the I/O settings
// each exist once.
//
// The pipeline-facing part (dataset, batch size, shuffle, seed, drop_last, mode, I/O, device) is
// a PipelineConfig (pipeline/pipeline_config.h), which a library's loader shares without src/;
// the rest (test split, model, SGD, epochs, checkpoints, output files) is the trainer's.
//
// Errors are Status::Usage (exit 2) for what the command line asks, naming the flag.
//
// Thread safety: plain values and functions of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/augment.h"
#include "core/status.h"
#include "model/checkpoint.h"
#include "model/lr_schedule.h"
#include "model/model.h"
#include "pipeline/batch_source.h"
#include "pipeline/pipeline_config.h"
#include "src/train_engine.h"
#include "src/trainer.h"

namespace rf {

struct TrainConfig {
  PipelineConfig pipeline;
  std::string test;  // the test split, evaluated after every epoch; empty: none
  // The model: the input shape and classes come from the dataset.
  std::vector<uint32_t> conv = ModelConfig{}.conv;  // output channels of each conv block
  uint32_t hidden = ModelConfig{}.hidden;
  bool batch_norm = false;    // --batch-norm: after each convolution (model/model.h)
  OptimizerConfig optimizer;  // lr: the base learning rate the schedule scales
  LrScheduleConfig schedule;
  // The steps the schedule spans: from a resumed checkpoint, else {0, 0} until the run computes
  // it from the training data (ScheduleSpanFor).
  LrScheduleSpan schedule_span;
  uint64_t epochs = TrainerOptions{}.epochs;  // >= 1
  Precision precision = EngineOptions{}.precision;
  bool cuda_graph = EngineOptions{}.cuda_graph;
  // Data augmentation of the training split (--augment; core/augment_spec.h), keyed by the seed:
  // never the test split's. In the checkpoint (version 3 on): a resumed run continues it.
  AugmentParams augment;
  // Files. Inputs: resume. Outputs: the others (none of them may be an input: CheckTrainOutputs).
  std::string checkpoint, resume, metrics, dump_order, trace;
  uint64_t checkpoint_every = TrainerOptions{}.checkpoint_every;  // steps; 0: at the end only
  // --checkpoint may replace an existing file the run does not resume from (CheckCheckpointTarget).
  bool overwrite = false;
  uint64_t max_steps = TrainerOptions{}.max_steps;  // 0: no limit
  // Data-parallel (the ranks come from mpirun: dist/world.h; pipeline.rank and world_size are
  // set from the World, not from flags).
  int gpu = -1;               // this rank's GPU; -1: its local rank modulo the GPUs visible
  double rank_timeout = 600;  // seconds without a finished step before the job ends; 0: never

  // Usage errors: PipelineConfig::Validate's, an option outside its declared bounds
  // (src/train_options.h: epochs, widths, optimizer settings, each naming its flag), no conv block.
  Status Validate() const;
};

// "32,64,128" <-> {32, 64, 128}. Usage naming --conv for anything but positive counts.
Result<std::vector<uint32_t>> ParseConvWidths(const std::string& s);
std::string ConvWidthsText(const std::vector<uint32_t>& widths);

// A resumed run continues its checkpoint's order and optimizer exactly: the checkpoint's seed,
// batch size (per rank), optimizer (kind, lr, momentum, weight decay, betas, eps, label
// smoothing), lr schedule with its warmup and span, augmentation (files before version 3: SGD,
// constant, span not recorded, the config's augmentation) and shuffle (mode and window; files from
// before the window was recorded keep the config's) replace the config's. Corruption naming
// config->resume for a checkpoint whose batch size is 0.
//
// Where the run has config->pipeline.world_size ranks:
//   the checkpoint's world size   the interrupted epoch continues at the checkpoint's position
//                                 (*position = c.next_sample): the same samples in the same
//                                 order as the uninterrupted run;
//   another world size            the samples the checkpoint's ranks had not trained in that
//                                 epoch are shared by this run's ranks, each exactly once
//                                 (pipeline/window_order.h's stretches); *position = 0.
Status ApplyCheckpoint(const Checkpoint& c, TrainConfig* config, uint64_t* position);

// The steps the schedule spans for a run of `c` on a dataset whose ordinary epoch gives each rank
// `epoch_samples` samples: c.schedule_span where recorded, else {ceil(EpochSamples(...) /
// batch size), c.epochs}.
LrScheduleSpan ScheduleSpanFor(const TrainConfig& c, uint64_t epoch_samples);

// Every component's options, from one config.
struct TrainComponents {
  EngineOptions engine;  // backend, mode, and the training source's options
  // (engine.test: the test split's pipeline: stored order, every sample, one rank, streaming)
  TrainerOptions trainer;  // the loop, checkpoints
};
TrainComponents DeriveTrainComponents(const TrainConfig& c);

// The run's outputs (--checkpoint, --metrics, --dump-order, --trace) against each other and its
// inputs (io/file.h's CheckOutputPaths, by any name): Usage naming both when two outputs are one
// file, when an output may not go where it points (a directory), or when an output is a shard
// of --data (`data_shards`) or --test (`test_shards`), or, for all but --checkpoint, --resume (a
// checkpoint replacing the one it resumed from is how runs continue).
Status CheckTrainOutputs(const TrainConfig& c, const std::vector<std::string>& data_shards,
                         const std::vector<std::string>& test_shards);

// --checkpoint against what is there already: a run replaces an existing checkpoint (or any other
// regular file) only when it resumes from that file (--resume, by any name) or under --overwrite,
// so a run started afresh never replaces a better checkpoint unasked. Usage naming the file, and
// the steps it holds where it is a checkpoint. A device or FIFO (written in place), or no file,
// passes.
Status CheckCheckpointTarget(const TrainConfig& c);

}  // namespace rf
