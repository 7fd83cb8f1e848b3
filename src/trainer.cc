#include "src/trainer.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/units.h"
#include "pipeline/sources/mixture.h"
#include "pipeline/stage/trace.h"

namespace rf {
namespace {

// Lock-free, so storing to it is async-signal-safe; the handler does nothing else.
std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void RequestStop(int) { g_stop_requested.store(true, std::memory_order_relaxed); }

// A host memory figure from /proc/self/status: "VmRSS:" in use now, "VmHWM:" the peak so far
// (0 where it cannot be read).
uint64_t ResidentBytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;  // "... kB"
  }
  return 0;
}

}  // namespace

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = RequestStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

Trainer::Trainer(const TrainConfig& c, ModelConfig model, std::vector<const Dataset*> train,
                 TrainEngine& engine, World& world, TrainerOutputs outputs)
    : c_(c),
      order_(c.pipeline.order),
      model_(std::move(model)),
      train_(std::move(train)),
      engine_(engine),
      world_(world),
      outputs_(std::move(outputs)),
      backend_(engine.backend()),
      source_(engine.train()),
      test_(engine.test()) {
  if (world_.size() > 1) {
    // The training thread may be blocked behind the collective that failed: report from here,
    // free the GPU from kernels waiting for peers, and end the process (mpirun ends the rest).
    TrainEngine* e = &engine_;
    const std::string who = "ringfeed train: rank " + std::to_string(world_.rank()) + " of " +
                            std::to_string(world_.size()) + ": ";
    watchdog_ = std::make_unique<RankWatchdog>(
        c_.rank_timeout, [e] { return e->CollectiveError(); },
        [e, who](const std::string& why) {
          std::fprintf(stderr, "%s%s\n", who.c_str(), why.c_str());
          std::fflush(nullptr);
          e->AbortCollectives();
          std::_Exit(1);
        });
  }
  progress_.SetRanks(world_.size(), lead());
}

Status Trainer::Run(RunState s) {
  first_step_ = s.step;
  std::string stopped_by;  // empty while the run goes on
  if (c_.max_steps != 0 && s.step >= c_.max_steps) stopped_by = "max-steps";
  while (s.epoch < c_.epochs && stopped_by.empty()) {
    const EpochStart start{std::chrono::steady_clock::now(), Counters(), s.next_sample};
    RF_RETURN_IF_ERROR(TrainEpoch(&s, start, &stopped_by));
    if (s.next_sample < source_.epoch_samples()) break;  // stopped mid-epoch
    const EpochFigures figures = MeasureEpoch(start, s.next_sample);
    RF_ASSIGN_OR_RETURN(const std::optional<StepStats> test, Evaluate());
    RF_RETURN_IF_ERROR(ReportEpoch(s, figures, test));
    ++s.epoch;
    s.next_sample = 0;
  }
  return Finish(s, stopped_by.empty() ? "epochs" : stopped_by);
}

Status Trainer::TrainEpoch(RunState* s, const EpochStart& start, std::string* stopped_by) {
  if (Status st = source_.StartEpoch(s->epoch, s->next_sample); !st.ok()) {
    return StopOnDataError(*s, st);
  }
  progress_.StartEpoch(s->epoch, c_.epochs, s->next_sample, source_.epoch_samples());
  if (outputs_.dump_order != nullptr) {
    RF_RETURN_IF_ERROR(
        outputs_.dump_order->Write("# epoch " + std::to_string(s->epoch + 1) + "\n"));
  }
  OptimizerConfig step_opt = c_.optimizer;
  while (stopped_by->empty()) {
    Result<Batch> next = source_.Next();
    if (!next.ok()) return StopOnDataError(*s, next.status());
    const Batch b = std::move(next).value();
    if (b.n == 0) break;
    if (first_batch_ms_ < 0) {
      first_batch_ms_ =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start.time)
              .count();
      if (lead()) {
        std::printf("first batch after %.1f ms%s\n", first_batch_ms_,
                    world_.size() > 1 ? " (rank 0)" : "");
        std::fflush(stdout);
      }
    }
    if (outputs_.dump_order != nullptr) RF_RETURN_IF_ERROR(DumpBatchOrder());
    // The step's lr, from its index alone: a resumed run continues the schedule exactly.
    step_opt.lr =
        static_cast<float>(ScheduledLr(c_.optimizer.lr, s->step, c_.schedule_span, c_.schedule));
    step_opt.adam_step = s->step + 1;
    last_lr_ = step_opt.lr;
    const uint64_t issued_ns = Trace::Active() != nullptr ? Trace::NowNs() : 0;
    RF_RETURN_IF_ERROR(backend_.TrainStep(b, step_opt));
    if (Trace::Active() != nullptr) RF_RETURN_IF_ERROR(MarkStep(issued_ns));
    ++s->step;
    s->next_sample = source_.position();
    progress_.Update(s->next_sample);
    if (watchdog_) watchdog_->Beat();
    RF_ASSIGN_OR_RETURN(const bool signalled,
                        AgreeStop(s->step, g_stop_requested.load(std::memory_order_relaxed)));
    if (signalled) {
      *stopped_by = "signal";
    } else if (c_.max_steps != 0 && s->step >= c_.max_steps) {
      *stopped_by = "max-steps";
    } else if (c_.checkpoint_every != 0 && s->step % c_.checkpoint_every == 0) {
      RF_RETURN_IF_ERROR(Save(*s));
    }
  }
  return Status::Ok();
}

Trainer::EpochFigures Trainer::MeasureEpoch(const EpochStart& start, uint64_t end_sample) {
  progress_.Finish();
  EpochFigures f;
  f.train = backend_.TakeTrainStats();  // waits for the epoch's last step
  RankFigures& r = f.rank;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start.time).count();
  const SourceCounters now = Counters();
  r.samples = static_cast<double>(end_sample - start.first_sample);
  r.disk_bytes = static_cast<double>(now.bytes_read - start.counters.bytes_read);
  r.delivered_bytes = static_cast<double>(now.bytes_delivered - start.counters.bytes_delivered);
  if (const uint32_t threads = source_.decode_threads(); threads != 0)
    r.decode_busy_share = (now.decode_busy_s - start.counters.decode_busy_s) / r.seconds / threads;
  r.wait_s = now.wait_s - start.counters.wait_s;
  r.held_s = now.reader_held_s - start.counters.reader_held_s;
  r.rss_bytes = static_cast<double>(ResidentBytes("VmRSS:"));
  r.gpu_bytes = static_cast<double>(engine_.gpu_bytes());
  return f;
}

Result<std::optional<StepStats>> Trainer::Evaluate() {
  if (test_ == nullptr) return std::optional<StepStats>();
  // Each evaluation is the test loader's next epoch (the same stored order every time), so its
  // reader runs on from one evaluation into the next.
  RF_RETURN_IF_ERROR(test_->StartEpoch(evaluations_++, 0));
  for (;;) {
    RF_ASSIGN_OR_RETURN(Batch b, test_->Next());
    if (b.n == 0) break;
    RF_RETURN_IF_ERROR(backend_.Evaluate(b));
  }
  return std::optional<StepStats>(backend_.TakeEvalStats());
}

Status Trainer::ReportEpoch(const RunState& s, const EpochFigures& mine,
                            const std::optional<StepStats>& test) {
  RF_ASSIGN_OR_RETURN(const EpochSummary epoch, GatherEpoch(mine));
  // Each rank's bad records skipped (--skip-bad-records), named, before the epoch's line.
  if (const std::string skipped = source_.EpochReport(); !skipped.empty()) {
    std::printf("%s%s\n",
                world_.size() > 1 ? ("rank " + std::to_string(world_.rank()) + ": ").c_str() : "",
                skipped.c_str());
  }
  if (!lead()) return Status::Ok();
  std::fputs(EpochLine(s, epoch, mine, test).c_str(), stdout);
  std::fflush(stdout);
  return WriteMetrics(EpochRecord(s, epoch, mine, test));
}

Result<Trainer::EpochSummary> Trainer::GatherEpoch(const EpochFigures& mine) {
  // Loss and accuracy over every rank's samples, and every rank's figures on rank 0.
  double sums[3] = {mine.train.loss_sum, static_cast<double>(mine.train.correct),
                    static_cast<double>(mine.train.samples)};
  RF_RETURN_IF_ERROR(world_.AllReduceSum(sums, 3));
  EpochSummary e;
  e.train.loss_sum = sums[0];
  e.train.correct = static_cast<uint64_t>(sums[1]);
  e.train.samples = static_cast<uint64_t>(sums[2]);
  e.ranks.resize(world_.size());
  RF_RETURN_IF_ERROR(world_.Gather(&mine.rank, sizeof mine.rank, e.ranks.data(), 0));
  if (watchdog_) watchdog_->Beat();
  if (!lead()) return e;
  // Over the ranks: samples in all over the slowest rank's time; disk rates add up; the rank
  // that waited longest for data is the one the others waited for.
  for (size_t r = 0; r < e.ranks.size(); ++r) {
    const RankFigures& f = e.ranks[r];
    e.samples += f.samples;
    e.seconds = std::max(e.seconds, f.seconds);
    e.disk_gb_per_s += f.disk_bytes / f.seconds / 1e9;
    e.delivered_gb_per_s += f.delivered_bytes / f.seconds / 1e9;
    e.decode_busy_share += f.decode_busy_share / e.ranks.size();
    e.reader_held_share += f.held_s / f.seconds / e.ranks.size();
    const RankFigures& slowest = e.ranks[e.slowest_rank];
    if (f.wait_s / f.seconds > slowest.wait_s / slowest.seconds) e.slowest_rank = r;
  }
  const RankFigures& slowest = e.ranks[e.slowest_rank];
  e.data_wait_share = slowest.wait_s / slowest.seconds;
  return e;
}

std::string Trainer::EpochLine(const RunState& s, const EpochSummary& e, const EpochFigures& mine,
                               const std::optional<StepStats>& test) const {
  char test_part[64] = "";
  if (test) {
    std::snprintf(test_part, sizeof test_part, ", test accuracy %.2f%%", 100 * test->accuracy());
  }
  // One rank: "disk 1.8 GB/s, waited for data 0.4%". Several: the sum of the disk rates and the
  // range, and the rank that waited longest, named.
  char io_part[256];
  if (e.ranks.size() == 1) {
    std::snprintf(io_part, sizeof io_part, "disk %s, waited for data %.1f%%",
                  FormatRate(e.disk_gb_per_s * 1e9).c_str(), 100 * e.data_wait_share);
  } else {
    double lo = 1e300, hi = 0;
    for (const RankFigures& f : e.ranks) {
      lo = std::min(lo, f.disk_bytes / f.seconds);
      hi = std::max(hi, f.disk_bytes / f.seconds);
    }
    std::snprintf(io_part, sizeof io_part,
                  "disk %s in all (%s to %s a rank), waited for data %.1f%% (rank %zu, the "
                  "slowest)",
                  FormatRate(e.disk_gb_per_s * 1e9).c_str(), FormatRate(lo).c_str(),
                  FormatRate(hi).c_str(), 100 * e.data_wait_share, e.slowest_rank);
  }
  // Compressed chunks: what the disk's bytes became, and how busy the chunk stage was.
  if (e.delivered_gb_per_s > e.disk_gb_per_s * 1.0001) {
    const size_t n = std::strlen(io_part);
    std::snprintf(io_part + n, sizeof io_part - n, ", %s delivered, decode %.0f%% busy",
                  FormatRate(e.delivered_gb_per_s * 1e9).c_str(), 100 * e.decode_busy_share);
  }
  // GPU memory where the run holds some: the engine's 0 is the CPU's (issue 26, item 7).
  char gpu_part[48] = "";
  if (mine.rank.gpu_bytes > 0) {
    std::snprintf(gpu_part, sizeof gpu_part, ", GPU memory %.1f MiB",
                  mine.rank.gpu_bytes / 1048576.0);
  }
  char line[1024];
  std::snprintf(
      line, sizeof line,
      "epoch %llu/%llu: train loss %.4f, train accuracy %.2f%%%s, lr %.6g, %.0f samples/s, %.1f s, "
      "%s%s, host RSS %.1f MiB%s\n",
      static_cast<unsigned long long>(s.epoch + 1), static_cast<unsigned long long>(c_.epochs),
      e.train.mean_loss(), 100 * e.train.accuracy(), test_part, last_lr_, e.samples / e.seconds,
      e.seconds, io_part, gpu_part, mine.rank.rss_bytes / 1048576.0,
      e.ranks.size() > 1 ? " (rank 0's)" : "");
  return line;
}

nlohmann::json Trainer::EpochRecord(const RunState& s, const EpochSummary& e,
                                    const EpochFigures& mine,
                                    const std::optional<StepStats>& test) const {
  nlohmann::json j = {{"event", "epoch"},
                      {"epoch", s.epoch + 1},
                      {"step", s.step},
                      {"train_loss", e.train.mean_loss()},
                      {"train_accuracy", e.train.accuracy()},
                      {"lr", last_lr_},
                      {"samples_per_s", e.samples / e.seconds},
                      {"seconds", e.seconds},
                      {"disk_gb_per_s", e.disk_gb_per_s},
                      {"delivered_gb_per_s", e.delivered_gb_per_s},
                      {"decode_busy_share", e.decode_busy_share},
                      {"data_wait_share", e.data_wait_share},
                      {"reader_held_share", e.reader_held_share},
                      {"rss_bytes", static_cast<uint64_t>(mine.rank.rss_bytes)},
                      {"peak_rss_bytes", ResidentBytes("VmHWM:")},
                      {"gpu_bytes", static_cast<uint64_t>(mine.rank.gpu_bytes)}};
  if (e.ranks.size() > 1) {
    nlohmann::json per_rank = nlohmann::json::array();
    for (size_t r = 0; r < e.ranks.size(); ++r) {
      const RankFigures& f = e.ranks[r];
      per_rank.push_back({{"rank", r},
                          {"samples_per_s", f.samples / f.seconds},
                          {"disk_gb_per_s", f.disk_bytes / f.seconds / 1e9},
                          {"delivered_gb_per_s", f.delivered_bytes / f.seconds / 1e9},
                          {"decode_busy_share", f.decode_busy_share},
                          {"data_wait_share", f.wait_s / f.seconds},
                          {"reader_held_share", f.held_s / f.seconds},
                          {"rss_bytes", static_cast<uint64_t>(f.rss_bytes)},
                          {"gpu_bytes", static_cast<uint64_t>(f.gpu_bytes)}});
    }
    j["world_size"] = e.ranks.size();
    j["slowest_rank"] = e.slowest_rank;
    j["ranks"] = per_rank;
  }
  if (test) {
    j["test_samples"] = test->samples;
    j["test_loss"] = test->mean_loss();
    j["test_accuracy"] = test->accuracy();
  }
  return j;
}

Status Trainer::Finish(const RunState& s, const std::string& stopped_by) {
  // After the last epoch (s.epoch == epochs, next_sample 0) Save stores exactly that. A run that
  // trained no step writes nothing: the file holds the same state already, or a better one.
  const bool trained = s.step != first_step_;
  if (trained) RF_RETURN_IF_ERROR(Save(s));
  if (!lead()) return Status::Ok();
  const std::string saved = c_.checkpoint.empty() ? ""
                            : trained             ? "; checkpoint written to " + c_.checkpoint
                                      : "; no step trained, so no checkpoint written (" +
                                            c_.checkpoint + " left as it was)";
  // In an epoch earlier runs began at other world sizes, the position counts this run's share of
  // what they left: say what they trained, or "sample 0" reads as the epoch's start.
  const ResumedEpoch& resumed = c_.pipeline.order.resumed;
  std::string earlier;
  if (!resumed.stretches.empty() && resumed.epoch == s.epoch) {
    uint64_t before = 0;
    for (const EpochStretch& st : resumed.stretches) before += st.position * st.world_size;
    earlier =
        " of what earlier runs left: they trained " + std::to_string(before) +
        " samples of it at " +
        (resumed.stretches.size() == 1 ? std::to_string(resumed.stretches[0].world_size) + " ranks"
                                       : "other world sizes");
  }
  std::printf("ringfeed train: stopped by %s after step %llu (next: epoch %llu, sample %llu%s)%s\n",
              stopped_by.c_str(), static_cast<unsigned long long>(s.step),
              static_cast<unsigned long long>(s.epoch + 1),
              static_cast<unsigned long long>(s.next_sample), earlier.c_str(), saved.c_str());
  std::fflush(stdout);
  return WriteMetrics({{"event", "end"},
                       {"stopped_by", stopped_by},
                       {"step", s.step},
                       {"epoch", s.epoch},
                       {"next_sample", s.next_sample},
                       {"peak_rss_bytes", ResidentBytes("VmHWM:")},
                       {"first_batch_ms", first_batch_ms_},
                       {"checkpoint", c_.checkpoint}});
}

Status Trainer::CheckRanksAgree(const RunState& s) {
  if (world_.size() == 1) return Status::Ok();
  uint64_t lo[3] = {s.epoch, s.step, s.next_sample}, hi[3] = {s.epoch, s.step, s.next_sample};
  RF_RETURN_IF_ERROR(world_.AllReduceMin(lo, 3));
  RF_RETURN_IF_ERROR(world_.AllReduceMax(hi, 3));
  if (std::equal(lo, lo + 3, hi)) return Status::Ok();
  return Status::Aborted("the ranks disagree on the training position (steps " +
                         std::to_string(lo[1]) + " to " + std::to_string(hi[1]) + ")");
}

Result<bool> Trainer::AgreeStop(uint64_t step, bool local) {
  if (world_.size() == 1) return local;
  // Asked every kStopAgreementSteps steps only: each ask is a host round trip between the ranks
  // (tens of microseconds on one machine, more between machines), which every step would pay.
  if (step % kStopAgreementSteps != 0) return false;
  uint64_t any = local ? 1 : 0;
  RF_RETURN_IF_ERROR(world_.AllReduceMax(&any, 1));
  return any != 0;
}

Status Trainer::Save(const RunState& s) {
  if (c_.checkpoint.empty()) return Status::Ok();
  RF_RETURN_IF_ERROR(CheckRanksAgree(s));
  // The logs first: whatever a crash loses after this, they reach the checkpoint a resume takes.
  RF_RETURN_IF_ERROR(SyncLogs());
  Status written = Status::Ok();
  if (lead()) {  // every rank holds the same parameters and momentum: rank 0 writes them
    Checkpoint c;
    c.config = model_;
    c.optimizer = c_.optimizer;
    c.schedule = c_.schedule;
    c.schedule_span = c_.schedule_span;
    c.augment = c_.augment;
    RF_RETURN_IF_ERROR(backend_.GetState(&c.params, &c.momentum));
    RF_RETURN_IF_ERROR(backend_.GetRunningStats(&c.running_stats));
    // A finished epoch is stored as the start of the next, so a resume does not begin with an
    // empty epoch.
    const bool epoch_done = s.next_sample >= source_.epoch_samples();
    c.epoch = epoch_done ? s.epoch + 1 : s.epoch;
    c.next_sample = epoch_done ? 0 : s.next_sample;
    c.step = s.step;
    // The run's order (its world size the World's); the stretches of a resumed epoch are recorded
    // again while it is not finished.
    c.order = order_;
    if (epoch_done || s.epoch != order_.resumed.epoch) c.order.resumed = ResumedEpoch{c.epoch, {}};
    if (const MixtureState* mixture = source_.mixture_state(); mixture != nullptr) {
      // A mixture: its datasets and stream; the top-level id and samples are theirs together.
      RF_ASSIGN_OR_RETURN(const std::vector<double> weights,
                          NormalizeWeights(c_.pipeline.weights, train_.size()));
      std::vector<uint64_t> ids;
      c.dataset_samples = 0;
      for (size_t i = 0; i < train_.size(); ++i) {
        c.datasets.push_back(
            {train_[i]->header().dataset_id, train_[i]->sample_count(), weights[i]});
        ids.push_back(train_[i]->header().dataset_id);
        c.dataset_samples += train_[i]->sample_count();
      }
      c.dataset_id = PartsDatasetId(ids);
      c.mixture = *mixture;
    } else {
      c.dataset_id = train_[0]->header().dataset_id;
      c.dataset_samples = train_[0]->sample_count();
    }
    written = WriteCheckpoint(c_.checkpoint, c);
  }
  if (world_.size() == 1) return written;
  uint64_t ok = written.ok() ? 1 : 0;
  RF_RETURN_IF_ERROR(world_.Broadcast(&ok, sizeof ok, 0));
  if (ok == 0 && !lead()) {
    return Status::Aborted("rank 0 could not write the checkpoint " + c_.checkpoint);
  }
  return written;
}

Status Trainer::StopOnDataError(const RunState& s, Status error) {
  if (c_.checkpoint.empty() || world_.size() > 1) return error;
  if (s.step == first_step_) {
    // Nothing trained: an emergency checkpoint would hold only the start, and could replace a
    // better one.
    std::fprintf(stderr,
                 "ringfeed train: stopped by a data error before any step; no emergency "
                 "checkpoint written (%s left as it was)\n",
                 c_.checkpoint.c_str());
    return error;
  }
  // The backend holds the state after step s.step (GetState waits for queued steps), and
  // s.next_sample is the position after that step's batch: the failed batch was never trained.
  Status saved = Save(s);
  if (!saved.ok()) {
    std::fprintf(stderr, "ringfeed train: no emergency checkpoint: %s\n", saved.ToString().c_str());
    return error;
  }
  std::printf(
      "ringfeed train: stopped by a data error after step %llu (next: epoch %llu, sample %llu); "
      "emergency checkpoint written to %s\n",
      static_cast<unsigned long long>(s.step), static_cast<unsigned long long>(s.epoch + 1),
      static_cast<unsigned long long>(s.next_sample), c_.checkpoint.c_str());
  if (!outputs_.resume_command.empty()) {
    std::printf("ringfeed train: to resume once the data reads again: %s\n",
                outputs_.resume_command.c_str());
  }
  std::fflush(stdout);
  (void)WriteMetrics({{"event", "end"},
                      {"stopped_by", "data error"},
                      {"error", error.ToString()},
                      {"step", s.step},
                      {"epoch", s.epoch},
                      {"next_sample", s.next_sample},
                      {"checkpoint", c_.checkpoint}});
  return error;
}

Status Trainer::WriteMetrics(const nlohmann::json& j) {
  if (outputs_.metrics == nullptr) return Status::Ok();
  return outputs_.metrics->Write(j.dump() + "\n");
}

// One record a batch, not a line: a write(2) per sample would cost the training thread a system
// call per sample (~1 us: a second a second at a million samples/s).
Status Trainer::DumpBatchOrder() {
  dump_record_.clear();
  char digits[24];
  for (uint64_t i : source_.batch_samples()) {
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, i);
    dump_record_.append(digits, end);
    dump_record_ += '\n';
  }
  return outputs_.dump_order->Write(dump_record_);
}

Status Trainer::SyncLogs() {
  for (LineOutput* log : {outputs_.metrics, outputs_.dump_order}) {
    if (log != nullptr) RF_RETURN_IF_ERROR(log->Sync());
  }
  return Status::Ok();
}

Trainer::SourceCounters Trainer::Counters() const {
  return SourceCounters{source_.bytes_read(), source_.bytes_delivered(), source_.wait_seconds(),
                        source_.reader_held_seconds(), source_.decode_busy_seconds()};
}

void Trainer::StepDone(void* arg, uint64_t done_ns) {
  const auto* m = static_cast<const StepMark*>(arg);
  const uint64_t start = std::max(m->issued_ns, m->trainer->last_done_ns_);
  TraceSpan("train step", "compute", start, std::max(start, done_ns));
  m->trainer->last_done_ns_ = done_ns;
}

Status Trainer::MarkStep(uint64_t issued_ns) {
  StepMark& m = marks_[marks_used_++ % marks_.size()];
  m = StepMark{this, issued_ns};
  return backend_.WhenDone(&Trainer::StepDone, &m);
}

}  // namespace rf
