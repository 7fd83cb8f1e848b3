// Trainer: `ringfeed train`'s loop, one epoch after another: take a batch from the training source
// (src/train_engine.h), train on it, and after every epoch evaluate the test split and print one
// line (loss, accuracies, samples/s, disk GB/s, the share of time spent waiting for data, GPU and
// host memory; also as JSON with --metrics). Checkpoints every N steps, at the end, and when
// SIGINT or SIGTERM arrives: the handler only sets a flag, which the loop checks after each step,
// so an interrupted run stops cleanly (exit 0) and can be resumed where it stopped.
//
// A data error (the training source fails: a read that outlasted its retries, a chunk that fails
// its checksum) stops the run with that error. On one rank with --checkpoint, the loop first
// writes an emergency checkpoint of the last completed step: the parameters and optimizer state
// after it, and the position just past its batch, so that a resume trains exactly the samples this
// run had not; it prints where it is and the command that resumes. The error is still returned
// (the run exits 1). A run that trained no step writes no checkpoint at all, emergency or final:
// it would hold only where the run began, and could replace a better one (CheckCheckpointTarget,
// src/train_config.h, keeps a run started afresh from replacing one unasked).
//   Not with several ranks: the checkpoint needs every rank at the same step, and a rank whose
//   read failed cannot make the others stop there (they may be inside a collective, or a step
//   ahead). The job ends as for any rank's error (World::Abort, naming rank, file, chunk and
//   offset) and resumes from the last periodic checkpoint.
//
// Data-parallel (a World of N > 1 ranks; every rank runs a Trainer in step with the others):
//   - every rank takes the same number of steps of the same size each epoch (the pipeline gives
//     every rank as many samples: window_order.h), so no rank waits for a step another will not
//     take; the backend averages the gradients (src/train_engine.h);
//   - a stop is the same step on every rank: --max-steps counts the same steps everywhere, and a
//     signal on any rank is agreed on every kStopAgreementSteps steps;
//   - checkpoints: the ranks confirm they are at the same step and position, rank 0 writes the
//     one file (every rank holds the same parameters), and tells the others whether it could;
//   - rank 0 alone prints (the epoch's figures summed or combined over ranks: loss and accuracy
//     over every rank's samples, samples/s in all, each rank's disk rate and waited-for-data
//     share, the slowest rank named), writes --metrics (with each rank's figures) and evaluates
//     the test split.
//
// Thread safety: one thread runs it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/sequential_output.h"
#include "model/checkpoint.h"
#include "model/lr_schedule.h"
#include "parallel/rank_watchdog.h"
#include "parallel/world.h"
#include "src/train_engine.h"
#include "src/train_progress.h"

namespace rf {

// Made from a TrainConfig (DeriveTrainComponents, src/train_config.h), whose epochs,
// checkpoint_every and max_steps default to these.
struct TrainerOptions {
  uint64_t epochs = 1;
  uint32_t batch_size = 0;    // the config's batch size; recorded in checkpoints
  uint32_t order_window = 0;  // recorded in checkpoints (model/checkpoint.h)
  std::string checkpoint;     // empty: none
  // The lr schedule and the steps it spans (model/lr_schedule.h); recorded in checkpoints.
  LrScheduleConfig schedule;
  LrScheduleSpan schedule_span;
  AugmentParams augment;  // the training split's (--augment); recorded in checkpoints
  uint64_t checkpoint_every = 0, max_steps = 0;
  std::string metrics;  // the metrics file's name, for errors
  // The epoch begun by earlier runs at other world sizes, and their stretches (recorded again by
  // this run's checkpoints of that epoch: pipeline/window_order.h).
  uint64_t resumed_epoch = 0;
  std::vector<CheckpointStretch> stretches;
  // Data-parallel: seconds without a finished step before the job is ended (0: never).
  double rank_timeout_s = 0;
  // The command that resumes from `checkpoint`, printed after an emergency checkpoint ("" :
  // none printed).
  std::string resume_command;
};

// Everything the loop keeps between steps besides the backend's own state.
struct RunState {
  uint64_t epoch = 0, step = 0;
  uint64_t next_sample = 0;  // in the current epoch's order
};

// SIGINT and SIGTERM ask the running Trainer to stop after its current step.
void InstallStopHandlers();

class Trainer {
 public:
  // metrics and dump_order may be null (metrics is rank 0's alone); the caller commits them
  // after Run. `world` must outlive it.
  Trainer(const TrainerOptions& o, const Dataset& train, ModelConfig config, TrainEngine& engine,
          World& world, SequentialOutput* metrics, SequentialOutput* dump_order);

  // `opt.lr` is the base lr; each step trains at the schedule's lr for its index (adam_step set
  // from the step count).
  Status Run(RunState s, const OptimizerConfig& opt, uint64_t seed);

 private:
  // --trace: each step's span on the "compute" track, from its issue (or the previous step's
  // end) to the end of its work, which the backend reports through WhenDone (on this thread).
  struct StepMark {
    Trainer* trainer;
    uint64_t issued_ns;
  };
  static void StepDone(void* arg, uint64_t done_ns);
  // `issued_ns`: when the step began to be issued (before TrainStep: on the CPU the step computes
  // inside it, so a mark taken after it spanned ~1 us).
  Status MarkStep(uint64_t issued_ns);
  Status Save(const RunState& s, const OptimizerConfig& opt, uint64_t seed);
  // The training source failed with `error` after the steps `s` counts: writes the emergency
  // checkpoint where one can be written (see above), and returns `error`.
  Status StopOnDataError(const RunState& s, const OptimizerConfig& opt, uint64_t seed,
                         Status error);
  // Whether any rank asks to stop after step `step` (`local`: this one does). With several ranks
  // they agree every kStopAgreementSteps steps (the same steps on every rank), so a signal stops
  // the job within that many steps.
  static constexpr uint64_t kStopAgreementSteps = 16;
  Result<bool> AgreeStop(uint64_t step, bool local);
  // Data-parallel: InvalidArgument unless every rank is at `s`.
  Status CheckRanksAgree(const RunState& s);
  // Data-parallel: the epoch's per-rank figures, gathered on rank 0.
  struct RankFigures {
    double samples = 0, seconds = 0, disk_bytes = 0, wait_s = 0, held_s = 0;
    double rss_bytes = 0, gpu_bytes = 0;
  };
  bool lead() const { return world_.rank() == 0; }
  // The source's running counters; an epoch reports how far they moved.
  struct SourceCounters {
    uint64_t bytes_read = 0;
    double wait_s = 0, reader_held_s = 0;
  };
  SourceCounters Counters() const;
  // t0 and at_start: the epoch's start and the counters then.
  Status ReportEpoch(const RunState& s, std::chrono::steady_clock::time_point t0, uint64_t samples,
                     const SourceCounters& at_start);
  Status WriteMetrics(const nlohmann::json& j);

  const TrainerOptions o_;
  const Dataset& train_;
  ModelConfig config_;
  TrainEngine& engine_;
  World& world_;
  std::unique_ptr<RankWatchdog> watchdog_;  // data-parallel runs only
  Backend& backend_;
  TrainingSource& source_;
  BatchSource* test_;
  SequentialOutput* metrics_;
  SequentialOutput* dump_order_;
  double first_batch_ms_ = -1;
  uint64_t first_step_ = 0;           // the step Run began at: a run that trains none saves nothing
  uint64_t evaluations_ = 0;          // test split passes so far
  double last_lr_ = 0;                // the lr of the last step taken, for the epoch's line
  std::array<StepMark, 64> marks_{};  // more than the backend's pending WhenDone calls
  uint64_t marks_used_ = 0;
  uint64_t last_done_ns_ = 0;
  TrainProgress progress_;
};

}  // namespace rf
