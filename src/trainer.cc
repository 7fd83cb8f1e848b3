#include "src/trainer.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>

#include "io/units.h"
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
                 TrainEngine& engine, std::ofstream* metrics, std::ofstream* dump_order)
    : o_(o),
      train_(train),
      config_(std::move(config)),
      engine_(engine),
      backend_(engine.backend()),
      source_(engine.train()),
      test_(engine.test()),
      metrics_(metrics),
      dump_order_(dump_order) {}

Status Trainer::Save(const RunState& s, const SgdConfig& sgd, uint64_t seed) {
  if (o_.checkpoint.empty()) return Status::Ok();
  Checkpoint c;
  c.config = config_;
  c.sgd = sgd;
  RF_RETURN_IF_ERROR(backend_.GetState(&c.params, &c.momentum));
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
  return WriteCheckpoint(o_.checkpoint, c);
}

Status Trainer::WriteMetrics(const nlohmann::json& j) {
  if (metrics_ == nullptr) return Status::Ok();
  *metrics_ << j.dump() << "\n" << std::flush;
  if (!metrics_->good()) return Status::IOError(o_.metrics, "cannot write metrics", errno);
  return Status::Ok();
}

Trainer::SourceCounters Trainer::Counters() const {
  return SourceCounters{source_.bytes_read(), source_.wait_seconds(),
                        source_.reader_held_seconds()};
}

Status Trainer::ReportEpoch(const RunState& s, std::chrono::steady_clock::time_point t0,
                            uint64_t samples, const SourceCounters& at_start) {
  const StepStats train = backend_.TakeTrainStats();  // waits for the epoch's last step
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SourceCounters now = Counters();
  const double disk = static_cast<double>(now.bytes_read - at_start.bytes_read) / seconds / 1e9;
  const double waited = (now.wait_s - at_start.wait_s) / seconds;
  nlohmann::json j = {{"event", "epoch"},
                      {"epoch", s.epoch + 1},
                      {"step", s.step},
                      {"train_loss", train.mean_loss()},
                      {"train_accuracy", train.accuracy()},
                      {"samples_per_s", samples / seconds},
                      {"seconds", seconds},
                      {"disk_gb_per_s", disk},
                      {"data_wait_share", waited},
                      {"reader_held_share", (now.reader_held_s - at_start.reader_held_s) / seconds},
                      {"rss_bytes", ResidentBytes("VmRSS:")},
                      {"peak_rss_bytes", ResidentBytes("VmHWM:")},
                      {"gpu_bytes", engine_.gpu_bytes()}};
  std::string test_part;
  if (test_ != nullptr) {
    RF_RETURN_IF_ERROR(test_->StartEpoch(0, 0));
    for (;;) {
      RF_ASSIGN_OR_RETURN(Batch b, test_->Next());
      if (b.n == 0) break;
      RF_RETURN_IF_ERROR(backend_.Evaluate(b));
    }
    const StepStats eval = backend_.TakeEvalStats();
    j["test_loss"] = eval.mean_loss();
    j["test_accuracy"] = eval.accuracy();
    char buf[64];
    std::snprintf(buf, sizeof buf, ", test accuracy %.2f%%", 100 * eval.accuracy());
    test_part = buf;
  }
  std::printf(
      "epoch %llu/%llu: train loss %.4f, train accuracy %.2f%%%s, %.0f samples/s, %.1f s, disk "
      "%s, waited for data %.1f%%, GPU memory %.1f MiB, host RSS %.1f MiB\n",
      static_cast<unsigned long long>(s.epoch + 1), static_cast<unsigned long long>(o_.epochs),
      train.mean_loss(), 100 * train.accuracy(), test_part.c_str(), samples / seconds, seconds,
      FormatRate(disk * 1e9).c_str(), 100 * waited, j["gpu_bytes"].get<uint64_t>() / 1048576.0,
      j["rss_bytes"].get<uint64_t>() / 1048576.0);
  std::fflush(stdout);
  return WriteMetrics(j);
}

void Trainer::StepDone(void* arg, uint64_t done_ns) {
  const auto* m = static_cast<const StepMark*>(arg);
  const uint64_t start = std::max(m->issued_ns, m->trainer->last_done_ns_);
  TraceSpan("train step", "compute", start, std::max(start, done_ns));
  m->trainer->last_done_ns_ = done_ns;
}

Status Trainer::MarkStep() {
  StepMark& m = marks_[marks_used_++ % marks_.size()];
  m = StepMark{this, Trace::NowNs()};
  return backend_.WhenDone(&Trainer::StepDone, &m);
}

Status Trainer::Run(RunState s, const SgdConfig& sgd, uint64_t seed) {
  std::string stopped_by = "epochs";
  bool stopping = o_.max_steps != 0 && s.step >= o_.max_steps;
  if (stopping) stopped_by = "max-steps";
  while (s.epoch < o_.epochs && !stopping) {
    const auto t0 = std::chrono::steady_clock::now();
    const SourceCounters at_start = Counters();
    RF_RETURN_IF_ERROR(source_.StartEpoch(s.epoch, s.next_sample));
    const uint64_t first_sample = s.next_sample;
    progress_.StartEpoch(s.epoch, o_.epochs, first_sample, source_.epoch_samples());
    if (dump_order_ != nullptr) *dump_order_ << "# epoch " << s.epoch + 1 << "\n";
    while (!stopping) {
      RF_ASSIGN_OR_RETURN(Batch b, source_.Next());
      if (b.n == 0) break;
      if (first_batch_ms_ < 0) {
        first_batch_ms_ =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        std::printf("first batch after %.1f ms\n", first_batch_ms_);
        std::fflush(stdout);
      }
      if (dump_order_ != nullptr) {
        for (uint64_t i : source_.batch_samples()) *dump_order_ << i << "\n";
      }
      RF_RETURN_IF_ERROR(backend_.TrainStep(b, sgd));
      if (Trace::Active() != nullptr) RF_RETURN_IF_ERROR(MarkStep());
      ++s.step;
      s.next_sample = source_.position();
      progress_.Update(s.next_sample);
      if (g_stop_requested.load(std::memory_order_relaxed)) {
        stopping = true;
        stopped_by = "signal";
      } else if (o_.max_steps != 0 && s.step >= o_.max_steps) {
        stopping = true;
        stopped_by = "max-steps";
      } else if (o_.checkpoint_every != 0 && s.step % o_.checkpoint_every == 0) {
        RF_RETURN_IF_ERROR(Save(s, sgd, seed));
      }
    }
    if (s.next_sample < source_.epoch_samples()) break;  // stopped mid-epoch
    progress_.Finish();
    RF_RETURN_IF_ERROR(ReportEpoch(s, t0, s.next_sample - first_sample, at_start));
    ++s.epoch;
    s.next_sample = 0;
  }
  // After the last epoch (s.epoch == epochs, next_sample 0) Save stores exactly that.
  RF_RETURN_IF_ERROR(Save(s, sgd, seed));
  std::printf("ringfeed train: stopped by %s after step %llu (next: epoch %llu, sample %llu)%s%s\n",
              stopped_by.c_str(), static_cast<unsigned long long>(s.step),
              static_cast<unsigned long long>(s.epoch + 1),
              static_cast<unsigned long long>(s.next_sample),
              o_.checkpoint.empty() ? "" : "; checkpoint written to ", o_.checkpoint.c_str());
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
