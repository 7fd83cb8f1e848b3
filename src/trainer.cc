#include "src/trainer.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "core/units.h"
#include "pipeline/trace.h"

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

Trainer::Trainer(const TrainerOptions& o, const Dataset& train, ModelConfig config,
                 TrainEngine& engine, World& world, SequentialOutput* metrics,
                 SequentialOutput* dump_order)
    : o_(o),
      train_(train),
      config_(std::move(config)),
      engine_(engine),
      world_(world),
      backend_(engine.backend()),
      source_(engine.train()),
      test_(engine.test()),
      metrics_(metrics),
      dump_order_(dump_order) {
  if (world_.size() > 1) {
    // The training thread may be blocked behind the collective that failed: report from here,
    // free the GPU from kernels waiting for peers, and end the process (mpirun ends the rest).
    TrainEngine* e = &engine_;
    const std::string who = "ringfeed train: rank " + std::to_string(world_.rank()) + " of " +
                            std::to_string(world_.size()) + ": ";
    watchdog_ = std::make_unique<RankWatchdog>(
        o_.rank_timeout_s, [e] { return e->CollectiveError(); },
        [e, who](const std::string& why) {
          std::fprintf(stderr, "%s%s\n", who.c_str(), why.c_str());
          std::fflush(nullptr);
          e->AbortCollectives();
          std::_Exit(1);
        });
  }
  progress_.SetRanks(world_.size(), lead());
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

Status Trainer::Save(const RunState& s, const OptimizerConfig& opt, uint64_t seed) {
  if (o_.checkpoint.empty()) return Status::Ok();
  RF_RETURN_IF_ERROR(CheckRanksAgree(s));
  Status written = Status::Ok();
  if (lead()) {  // every rank holds the same parameters and momentum: rank 0 writes them
    Checkpoint c;
    c.config = config_;
    c.optimizer = opt;
    c.schedule = o_.schedule;
    c.schedule_span = o_.schedule_span;
    c.augment = o_.augment;
    RF_RETURN_IF_ERROR(backend_.GetState(&c.params, &c.momentum));
    RF_RETURN_IF_ERROR(backend_.GetRunningStats(&c.running_stats));
    c.seed = seed;
    // A finished epoch is stored as the start of the next, so a resume does not begin with an
    // empty epoch.
    const bool epoch_done = s.next_sample >= source_.epoch_samples();
    c.epoch = epoch_done ? s.epoch + 1 : s.epoch;
    c.next_sample = epoch_done ? 0 : s.next_sample;
    c.step = s.step;
    c.batch_size = o_.batch_size;
    c.order_window = o_.order_window;
    c.dataset_id = train_.header().dataset_id;
    c.dataset_samples = train_.sample_count();
    c.world_size = world_.size();
    if (!epoch_done && s.epoch == o_.resumed_epoch) c.stretches = o_.stretches;
    written = WriteCheckpoint(o_.checkpoint, c);
  }
  if (world_.size() == 1) return written;
  uint64_t ok = written.ok() ? 1 : 0;
  RF_RETURN_IF_ERROR(world_.Broadcast(&ok, sizeof ok, 0));
  if (ok == 0 && !lead()) {
    return Status::Aborted("rank 0 could not write the checkpoint " + o_.checkpoint);
  }
  return written;
}

Status Trainer::StopOnDataError(const RunState& s, const OptimizerConfig& opt, uint64_t seed,
                                Status error) {
  if (o_.checkpoint.empty() || world_.size() > 1) return error;
  if (s.step == first_step_) {
    // Nothing trained: an emergency checkpoint would hold only the start, and could replace a
    // better one.
    std::fprintf(stderr,
                 "ringfeed train: stopped by a data error before any step; no emergency "
                 "checkpoint written (%s left as it was)\n",
                 o_.checkpoint.c_str());
    return error;
  }
  // The backend holds the state after step s.step (GetState waits for queued steps), and
  // s.next_sample is the position after that step's batch: the failed batch was never trained.
  Status saved = Save(s, opt, seed);
  if (!saved.ok()) {
    std::fprintf(stderr, "ringfeed train: no emergency checkpoint: %s\n", saved.ToString().c_str());
    return error;
  }
  std::printf(
      "ringfeed train: stopped by a data error after step %llu (next: epoch %llu, sample %llu); "
      "emergency checkpoint written to %s\n",
      static_cast<unsigned long long>(s.step), static_cast<unsigned long long>(s.epoch + 1),
      static_cast<unsigned long long>(s.next_sample), o_.checkpoint.c_str());
  if (!o_.resume_command.empty()) {
    std::printf("ringfeed train: to resume once the data reads again: %s\n",
                o_.resume_command.c_str());
  }
  std::fflush(stdout);
  (void)WriteMetrics({{"event", "end"},
                      {"stopped_by", "data error"},
                      {"error", error.ToString()},
                      {"step", s.step},
                      {"epoch", s.epoch},
                      {"next_sample", s.next_sample},
                      {"checkpoint", o_.checkpoint}});
  return error;
}

Status Trainer::WriteMetrics(const nlohmann::json& j) {
  if (metrics_ == nullptr) return Status::Ok();
  return metrics_->Append(j.dump() + "\n");
}

Trainer::SourceCounters Trainer::Counters() const {
  return SourceCounters{source_.bytes_read(), source_.wait_seconds(),
                        source_.reader_held_seconds()};
}

Status Trainer::ReportEpoch(const RunState& s, std::chrono::steady_clock::time_point t0,
                            uint64_t samples, const SourceCounters& at_start) {
  const StepStats local = backend_.TakeTrainStats();  // waits for the epoch's last step
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SourceCounters now = Counters();
  RankFigures mine;
  mine.samples = static_cast<double>(samples);
  mine.seconds = seconds;
  mine.disk_bytes = static_cast<double>(now.bytes_read - at_start.bytes_read);
  mine.wait_s = now.wait_s - at_start.wait_s;
  mine.held_s = now.reader_held_s - at_start.reader_held_s;
  mine.rss_bytes = static_cast<double>(ResidentBytes("VmRSS:"));
  mine.gpu_bytes = static_cast<double>(engine_.gpu_bytes());
  // Loss and accuracy over every rank's samples.
  double sums[3] = {local.loss_sum, static_cast<double>(local.correct),
                    static_cast<double>(local.samples)};
  RF_RETURN_IF_ERROR(world_.AllReduceSum(sums, 3));
  StepStats train;
  train.loss_sum = sums[0];
  train.correct = static_cast<uint64_t>(sums[1]);
  train.samples = static_cast<uint64_t>(sums[2]);
  std::vector<RankFigures> ranks(world_.size());
  RF_RETURN_IF_ERROR(world_.Gather(&mine, sizeof mine, ranks.data(), 0));
  if (watchdog_) watchdog_->Beat();
  if (!lead()) return Status::Ok();

  // Over the ranks: samples in all over the slowest rank's time; disk rates add up; the rank
  // that waited longest for data is the one the others waited for.
  double all_samples = 0, slowest_s = 0, disk = 0, held = 0;
  size_t most_waiting = 0;
  nlohmann::json per_rank = nlohmann::json::array();
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankFigures& f = ranks[r];
    all_samples += f.samples;
    slowest_s = std::max(slowest_s, f.seconds);
    disk += f.disk_bytes / f.seconds / 1e9;
    held += f.held_s / f.seconds / ranks.size();
    if (f.wait_s / f.seconds > ranks[most_waiting].wait_s / ranks[most_waiting].seconds) {
      most_waiting = r;
    }
    per_rank.push_back({{"rank", r},
                        {"samples_per_s", f.samples / f.seconds},
                        {"disk_gb_per_s", f.disk_bytes / f.seconds / 1e9},
                        {"data_wait_share", f.wait_s / f.seconds},
                        {"reader_held_share", f.held_s / f.seconds},
                        {"rss_bytes", static_cast<uint64_t>(f.rss_bytes)},
                        {"gpu_bytes", static_cast<uint64_t>(f.gpu_bytes)}});
  }
  const RankFigures& worst = ranks[most_waiting];
  const double waited = worst.wait_s / worst.seconds;
  nlohmann::json j = {{"event", "epoch"},
                      {"epoch", s.epoch + 1},
                      {"step", s.step},
                      {"train_loss", train.mean_loss()},
                      {"train_accuracy", train.accuracy()},
                      {"lr", last_lr_},
                      {"samples_per_s", all_samples / slowest_s},
                      {"seconds", slowest_s},
                      {"disk_gb_per_s", disk},
                      {"data_wait_share", waited},
                      {"reader_held_share", held},
                      {"rss_bytes", static_cast<uint64_t>(mine.rss_bytes)},
                      {"peak_rss_bytes", ResidentBytes("VmHWM:")},
                      {"gpu_bytes", static_cast<uint64_t>(mine.gpu_bytes)}};
  if (world_.size() > 1) {
    j["world_size"] = world_.size();
    j["slowest_rank"] = most_waiting;
    j["ranks"] = per_rank;
  }
  std::string test_part;
  if (test_ != nullptr) {
    // Each evaluation is the test loader's next epoch (the same stored order every time), so its
    // reader runs on from one evaluation into the next.
    RF_RETURN_IF_ERROR(test_->StartEpoch(evaluations_++, 0));
    for (;;) {
      RF_ASSIGN_OR_RETURN(Batch b, test_->Next());
      if (b.n == 0) break;
      RF_RETURN_IF_ERROR(backend_.Evaluate(b));
    }
    const StepStats eval = backend_.TakeEvalStats();
    j["test_samples"] = eval.samples;
    j["test_loss"] = eval.mean_loss();
    j["test_accuracy"] = eval.accuracy();
    char buf[64];
    std::snprintf(buf, sizeof buf, ", test accuracy %.2f%%", 100 * eval.accuracy());
    test_part = buf;
  }
  // One rank: "disk 1.8 GB/s, waited for data 0.4%". Several: the sum of the disk rates and the
  // range, and the rank that waited longest, named.
  std::string io_part;
  char buf[256];
  if (world_.size() == 1) {
    std::snprintf(buf, sizeof buf, "disk %s, waited for data %.1f%%",
                  FormatRate(disk * 1e9).c_str(), 100 * waited);
  } else {
    double lo = 1e300, hi = 0;
    for (const RankFigures& f : ranks) {
      lo = std::min(lo, f.disk_bytes / f.seconds);
      hi = std::max(hi, f.disk_bytes / f.seconds);
    }
    std::snprintf(buf, sizeof buf,
                  "disk %s in all (%s to %s a rank), waited for data %.1f%% (rank %zu, the "
                  "slowest)",
                  FormatRate(disk * 1e9).c_str(), FormatRate(lo).c_str(), FormatRate(hi).c_str(),
                  100 * waited, most_waiting);
  }
  io_part = buf;
  // GPU memory where the run holds some: the engine's 0 is the CPU's (issue 26, item 7).
  char gpu_part[48] = "";
  if (mine.gpu_bytes > 0) {
    std::snprintf(gpu_part, sizeof gpu_part, ", GPU memory %.1f MiB", mine.gpu_bytes / 1048576.0);
  }
  std::printf(
      "epoch %llu/%llu: train loss %.4f, train accuracy %.2f%%%s, lr %.6g, %.0f samples/s, %.1f s, "
      "%s%s, host RSS %.1f MiB%s\n",
      static_cast<unsigned long long>(s.epoch + 1), static_cast<unsigned long long>(o_.epochs),
      train.mean_loss(), 100 * train.accuracy(), test_part.c_str(), last_lr_,
      all_samples / slowest_s, slowest_s, io_part.c_str(), gpu_part, mine.rss_bytes / 1048576.0,
      world_.size() > 1 ? " (rank 0's)" : "");
  std::fflush(stdout);
  return WriteMetrics(j);
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

Status Trainer::Run(RunState s, const OptimizerConfig& opt, uint64_t seed) {
  first_step_ = s.step;
  OptimizerConfig step_opt = opt;
  std::string stopped_by = "epochs";
  bool stopping = o_.max_steps != 0 && s.step >= o_.max_steps;
  if (stopping) stopped_by = "max-steps";
  while (s.epoch < o_.epochs && !stopping) {
    const auto t0 = std::chrono::steady_clock::now();
    const SourceCounters at_start = Counters();
    if (Status st = source_.StartEpoch(s.epoch, s.next_sample); !st.ok()) {
      return StopOnDataError(s, opt, seed, st);
    }
    const uint64_t first_sample = s.next_sample;
    progress_.StartEpoch(s.epoch, o_.epochs, first_sample, source_.epoch_samples());
    if (dump_order_ != nullptr)
      RF_RETURN_IF_ERROR(dump_order_->Append("# epoch " + std::to_string(s.epoch + 1) + "\n"));
    while (!stopping) {
      Result<Batch> next = source_.Next();
      if (!next.ok()) return StopOnDataError(s, opt, seed, next.status());
      const Batch b = std::move(next).value();
      if (b.n == 0) break;
      if (first_batch_ms_ < 0) {
        first_batch_ms_ =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (lead()) {
          std::printf("first batch after %.1f ms%s\n", first_batch_ms_,
                      world_.size() > 1 ? " (rank 0)" : "");
          std::fflush(stdout);
        }
      }
      if (dump_order_ != nullptr) {
        for (uint64_t i : source_.batch_samples())
          RF_RETURN_IF_ERROR(dump_order_->Append(std::to_string(i) + "\n"));
      }
      // The step's lr, from its index alone: a resumed run continues the schedule exactly.
      step_opt.lr = static_cast<float>(ScheduledLr(opt.lr, s.step, o_.schedule_span, o_.schedule));
      step_opt.adam_step = s.step + 1;
      last_lr_ = step_opt.lr;
      const uint64_t issued_ns = Trace::Active() != nullptr ? Trace::NowNs() : 0;
      RF_RETURN_IF_ERROR(backend_.TrainStep(b, step_opt));
      if (Trace::Active() != nullptr) RF_RETURN_IF_ERROR(MarkStep(issued_ns));
      ++s.step;
      s.next_sample = source_.position();
      progress_.Update(s.next_sample);
      if (watchdog_) watchdog_->Beat();
      RF_ASSIGN_OR_RETURN(const bool signalled,
                          AgreeStop(s.step, g_stop_requested.load(std::memory_order_relaxed)));
      if (signalled) {
        stopping = true;
        stopped_by = "signal";
      } else if (o_.max_steps != 0 && s.step >= o_.max_steps) {
        stopping = true;
        stopped_by = "max-steps";
      } else if (o_.checkpoint_every != 0 && s.step % o_.checkpoint_every == 0) {
        RF_RETURN_IF_ERROR(Save(s, opt, seed));
      }
    }
    if (s.next_sample < source_.epoch_samples()) break;  // stopped mid-epoch
    progress_.Finish();
    RF_RETURN_IF_ERROR(ReportEpoch(s, t0, s.next_sample - first_sample, at_start));
    ++s.epoch;
    s.next_sample = 0;
  }
  // After the last epoch (s.epoch == epochs, next_sample 0) Save stores exactly that. A run that
  // trained no step writes nothing: the file holds the same state already, or a better one.
  const bool trained = s.step != first_step_;
  if (trained) RF_RETURN_IF_ERROR(Save(s, opt, seed));
  if (!lead()) return Status::Ok();
  const std::string saved = o_.checkpoint.empty() ? ""
                            : trained             ? "; checkpoint written to " + o_.checkpoint
                                      : "; no step trained, so no checkpoint written (" +
                                            o_.checkpoint + " left as it was)";
  std::printf("ringfeed train: stopped by %s after step %llu (next: epoch %llu, sample %llu)%s\n",
              stopped_by.c_str(), static_cast<unsigned long long>(s.step),
              static_cast<unsigned long long>(s.epoch + 1),
              static_cast<unsigned long long>(s.next_sample), saved.c_str());
  std::fflush(stdout);
  return WriteMetrics({{"event", "end"},
                       {"stopped_by", stopped_by},
                       {"step", s.step},
                       {"epoch", s.epoch},
                       {"next_sample", s.next_sample},
                       {"peak_rss_bytes", ResidentBytes("VmHWM:")},
                       {"first_batch_ms", first_batch_ms_},
                       {"checkpoint", o_.checkpoint}});
}

}  // namespace rf
