// Trainer: `ringfeed train`'s loop. Run reads top to bottom: per epoch, train on every batch of
// the training source (src/train_engine.h), evaluate the test split, report (gather the epoch's
// figures over the ranks and print one line: loss, accuracies, samples/s, disk GB/s, the share of
// time spent waiting for data, GPU and host memory; also as JSON with --metrics); then the final
// checkpoint and the line saying why the run stopped. Checkpoints every N steps, at the end, and
// when SIGINT or SIGTERM arrives: the handler only sets a flag, which the loop checks after each
// step, so an interrupted run stops cleanly (exit 0) and can be resumed where it stopped.
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
#include <optional>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/line_output.h"
#include "model/checkpoint.h"
#include "model/lr_schedule.h"
#include "parallel/rank_watchdog.h"
#include "parallel/world.h"
#include "src/train_config.h"
#include "src/train_engine.h"
#include "src/train_progress.h"

namespace rf {

// The run's files the loop writes, owned by the caller, which closes them after Run (metrics is
// rank 0's alone; either may be null), and the command that resumes from an emergency checkpoint
// ("": none printed). Each record goes to the file as it is made: a metrics line per epoch and
// at the end, an order line per epoch and a batch's indices per step; both are synced before
// each checkpoint, so after a machine crash they hold at least what led to the checkpoint.
struct TrainerOutputs {
  LineOutput* metrics = nullptr;
  LineOutput* dump_order = nullptr;
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
  // `c` is the run's config after its set-up (a resumed checkpoint applied, the schedule's span
  // set: src/train_config.h); it, `train` (the training split's datasets: one, or a mixture's),
  // `engine` and `world` must outlive the Trainer.
  Trainer(const TrainConfig& c, ModelConfig model, std::vector<const Dataset*> train,
          TrainEngine& engine, World& world, TrainerOutputs outputs);

  // Trains from `s` until c.epochs are done, --max-steps is reached, a signal arrives or an error.
  // c.optimizer.lr is the base lr; each step trains at the schedule's lr for its index (adam_step
  // set from the step count).
  Status Run(RunState s);

 private:
  // The epoch's start: its time, the source's running counters (an epoch reports how far they
  // moved) and its first sample.
  struct SourceCounters {
    uint64_t bytes_read = 0, bytes_delivered = 0;
    double wait_s = 0, reader_held_s = 0, decode_busy_s = 0;
  };
  struct EpochStart {
    std::chrono::steady_clock::time_point time;
    SourceCounters counters;
    uint64_t first_sample = 0;
  };
  // One rank's figures of an epoch, gathered on rank 0 (plain doubles, sent as bytes).
  struct RankFigures {
    double samples = 0, seconds = 0, disk_bytes = 0, wait_s = 0, held_s = 0;
    double rss_bytes = 0, gpu_bytes = 0;
    // The data handed on (decompressed), and the chunk stage's busy share of its threads' time.
    double delivered_bytes = 0, decode_busy_share = 0;
  };
  struct EpochFigures {
    StepStats train;  // this rank's loss and accuracy
    RankFigures rank;
  };

  // Run's steps, in the order it takes them.
  //   Trains epoch s->epoch from s->next_sample: a step per batch until the epoch ends or the run
  //   stops (*stopped_by: "max-steps", "signal"). A data error returns StopOnDataError's.
  Status TrainEpoch(RunState* s, const EpochStart& start, std::string* stopped_by);
  //   The finished epoch's figures on this rank (waits for its last step, so the time is the
  //   epoch's).
  EpochFigures MeasureEpoch(const EpochStart& start, uint64_t end_sample);
  //   The test split, one pass (rank 0's; nullopt without --test): its loss and accuracy.
  Result<std::optional<StepStats>> Evaluate();
  //   Gathers the epoch's figures over the ranks; rank 0 prints its line and writes --metrics.
  Status ReportEpoch(const RunState& s, const EpochFigures& mine,
                     const std::optional<StepStats>& test);
  // ReportEpoch's parts. The epoch over the ranks (every rank calls; the figures over the ranks
  // are rank 0's alone): samples in all over the slowest rank's time, disk rates added, the rank
  // that waited longest for data named.
  struct EpochSummary {
    StepStats train;  // over every rank's samples
    std::vector<RankFigures> ranks;
    double samples = 0, seconds = 0, disk_gb_per_s = 0, reader_held_share = 0;
    double delivered_gb_per_s = 0, decode_busy_share = 0;  // the ranks' mean busy share
    double data_wait_share = 0;                            // the slowest rank's
    size_t slowest_rank = 0;
  };
  Result<EpochSummary> GatherEpoch(const EpochFigures& mine);
  // The epoch's line, and its --metrics record ("event": "epoch").
  std::string EpochLine(const RunState& s, const EpochSummary& e, const EpochFigures& mine,
                        const std::optional<StepStats>& test) const;
  nlohmann::json EpochRecord(const RunState& s, const EpochSummary& e, const EpochFigures& mine,
                             const std::optional<StepStats>& test) const;
  //   The final checkpoint (where a step was trained) and the line saying why the run stopped.
  Status Finish(const RunState& s, const std::string& stopped_by);

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
  // The checkpoint of the state after the steps `s` counts (rank 0 writes it; every rank calls).
  Status Save(const RunState& s);
  // The training source failed with `error` after the steps `s` counts: writes the emergency
  // checkpoint where one can be written (see above), and returns `error`.
  Status StopOnDataError(const RunState& s, Status error);
  // Whether any rank asks to stop after step `step` (`local`: this one does). With several ranks
  // they agree every kStopAgreementSteps steps (the same steps on every rank), so a signal stops
  // the job within that many steps.
  static constexpr uint64_t kStopAgreementSteps = 16;
  Result<bool> AgreeStop(uint64_t step, bool local);
  // Data-parallel: InvalidArgument unless every rank is at `s`.
  Status CheckRanksAgree(const RunState& s);
  bool lead() const { return world_.rank() == 0; }
  SourceCounters Counters() const;
  Status WriteMetrics(const nlohmann::json& j);
  // --dump-order: the batch's sample indices, one a line, as one record.
  Status DumpBatchOrder();
  // Makes the run's logs durable (before a checkpoint; every rank its own).
  Status SyncLogs();

  const TrainConfig& c_;
  const OrderSettings& order_;  // c_.pipeline.order
  const ModelConfig model_;
  const std::vector<const Dataset*> train_;
  TrainEngine& engine_;
  World& world_;
  const TrainerOutputs outputs_;
  std::unique_ptr<RankWatchdog> watchdog_;  // data-parallel runs only
  Backend& backend_;
  TrainingSource& source_;
  BatchSource* test_;
  double first_batch_ms_ = -1;
  uint64_t first_step_ = 0;           // the step Run began at: a run that trains none saves nothing
  uint64_t evaluations_ = 0;          // test split passes so far
  double last_lr_ = 0;                // the lr of the last step taken, for the epoch's line
  std::array<StepMark, 64> marks_{};  // more than the backend's pending WhenDone calls
  uint64_t marks_used_ = 0;
  uint64_t last_done_ns_ = 0;
  TrainProgress progress_;
  std::string dump_record_;  // DumpBatchOrder's text, its capacity kept from batch to batch
};

}  // namespace rf
