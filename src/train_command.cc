// ringfeed train: trains the model (kernels/model.h) on a dataset with a backend, one epoch after
// another, printing a line per epoch; writes checkpoints and resumes from them bit-exactly (the
// CPU backend is deterministic and the epoch order is a function of seed and epoch alone).
//
// The data path, top to bottom: StreamingSource::Next (the window's chunks read, copied where the
// backend computes and gathered into a batch: pipeline/streaming_source.h, src/train_engine.h)
// -> Backend::TrainStep. The test split is evaluated from memory after every epoch.
//
// SIGINT and SIGTERM only set a flag; the loop checks it after each step, writes the checkpoint
// and exits 0, so an interrupted run can be resumed.
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/dataset.h"
#include "io/units.h"
#include "kernels/checkpoint.h"
#include "pipeline/memory_batch_source.h"
#include "pipeline/trace.h"
#include "src/commands.h"
#include "src/train_engine.h"

namespace po = boost::program_options;

namespace rf {
namespace {

// A float as the shortest text that reads back as the same float ("0.01", not "0.00999999978"),
// for --help.
std::string Shortest(float v) {
  char buf[32];
  for (int digits = 1; digits < 10; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;
}

// Lock-free, so storing to it is async-signal-safe; the handler does nothing else.
std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void RequestStop(int) { g_stop_requested.store(true, std::memory_order_relaxed); }

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = RequestStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

struct TrainArgs {
  std::string data, test;
  EngineOptions engine;
  uint64_t epochs = 1;
  uint32_t batch_size = 128;
  SgdConfig sgd;
  uint64_t seed = 1;
  std::string conv = "32,64,128";
  uint32_t hidden = 256;
  std::string checkpoint, resume, metrics, dump_order, trace;
  uint64_t checkpoint_every = 0, max_steps = 0;
  // Streaming.
  std::string shuffle = "window", io = "direct";
  uint32_t managed_prefetch = 0;
  bool managed_advise = false, managed_oversubscribe = false;
  uint32_t shuffle_window = WindowOrderOptions{}.window_chunks;
  bool drop_last = false, no_verify = false;
  uint32_t ring_slots = 16, queue_depth = ReaderOptions{}.queue_depth;
  std::string read_size = "4MiB";
};

// Host memory in use, from /proc/self/status (0 where it cannot be read).
uint64_t ResidentBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "... kB"
  }
  return 0;
}

Result<std::vector<uint32_t>> ParseWidths(const std::string& s) {
  std::vector<uint32_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0 || v > 65536) {
      return Status::InvalidArgument("--conv wants comma-separated channel counts, got \"" + s +
                                     "\"");
    }
    out.push_back(static_cast<uint32_t>(v));
  }
  if (out.empty()) return Status::InvalidArgument("--conv is empty");
  return out;
}

BatchRef ToBatchRef(const Batch& b) {
  return BatchRef{b.samples, b.sample_dtype, b.labels, b.label_dtype, b.n};
}

// Everything the loop keeps between steps besides the backend's own state.
struct RunState {
  uint64_t epoch = 0, step = 0;
  uint64_t next_sample = 0;  // in the current epoch's order
};

class Trainer {
 public:
  Trainer(const TrainArgs& a, const Dataset& train, ModelConfig config, TrainEngine& engine,
          std::ofstream* metrics, std::ofstream* dump_order)
      : dump_order_(dump_order),
        a_(a),
        train_(train),
        config_(std::move(config)),
        engine_(engine),
        backend_(engine.backend()),
        source_(engine.train()),
        test_(engine.test()),
        metrics_(metrics) {}

  Status Run(RunState s, const SgdConfig& sgd, uint64_t seed);

 private:
  std::ofstream* dump_order_;
  double first_batch_ms_ = -1;
  // --trace: each step's span on the "compute" track, from its issue (or the previous step's end)
  // to the end of its work, which the backend reports through WhenDone.
  struct StepMark {
    Trainer* trainer;
    uint64_t issued_ns;
  };
  static void StepDone(void* arg);
  Status MarkStep();
  std::array<StepMark, 64> marks_{};  // more than the steps the host can run ahead of the GPU
  uint64_t marks_used_ = 0;
  uint64_t last_done_ns_ = 0;  // written by StepDone only
  Status Save(const RunState& s, const SgdConfig& sgd, uint64_t seed);
  // t0: the epoch's start; bytes0, wait0: the source's counters then.
  Status ReportEpoch(const RunState& s, std::chrono::steady_clock::time_point t0, uint64_t samples,
                     uint64_t bytes0, double wait0);
  Status WriteMetrics(const nlohmann::json& j);

  const TrainArgs& a_;
  const Dataset& train_;
  ModelConfig config_;
  TrainEngine& engine_;
  Backend& backend_;
  TrainingSource& source_;
  BatchSource* test_;
  std::ofstream* metrics_;
};

Status Trainer::Save(const RunState& s, const SgdConfig& sgd, uint64_t seed) {
  if (a_.checkpoint.empty()) return Status::Ok();
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
  c.batch_size = a_.batch_size;
  c.dataset_id = train_.header().dataset_id;
  c.dataset_samples = train_.sample_count();
  return WriteCheckpoint(a_.checkpoint, c);
}

Status Trainer::WriteMetrics(const nlohmann::json& j) {
  if (metrics_ == nullptr) return Status::Ok();
  *metrics_ << j.dump() << "\n" << std::flush;
  if (!metrics_->good()) return Status::IOError(a_.metrics, "cannot write metrics", errno);
  return Status::Ok();
}

Status Trainer::ReportEpoch(const RunState& s, std::chrono::steady_clock::time_point t0,
                            uint64_t samples, uint64_t bytes0, double wait0) {
  const StepStats train = backend_.TakeTrainStats();  // waits for the epoch's last step
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double disk = static_cast<double>(source_.bytes_read() - bytes0) / seconds / 1e9;
  const double waited = (source_.wait_seconds() - wait0) / seconds;
  nlohmann::json j = {{"event", "epoch"},
                      {"epoch", s.epoch + 1},
                      {"step", s.step},
                      {"train_loss", train.mean_loss()},
                      {"train_accuracy", train.accuracy()},
                      {"samples_per_s", samples / seconds},
                      {"seconds", seconds},
                      {"disk_gb_per_s", disk},
                      {"data_wait_share", waited},
                      {"rss_bytes", ResidentBytes()},
                      {"gpu_bytes", engine_.gpu_bytes()}};
  std::string test_part;
  if (test_ != nullptr) {
    RF_RETURN_IF_ERROR(test_->StartEpoch(0, 0));
    for (;;) {
      RF_ASSIGN_OR_RETURN(Batch b, test_->Next());
      if (b.n == 0) break;
      RF_RETURN_IF_ERROR(backend_.Evaluate(ToBatchRef(b)));
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
      "%.2f GB/s, waited for data %.1f%%, GPU memory %.1f MiB, host RSS %.1f MiB\n",
      static_cast<unsigned long long>(s.epoch + 1), static_cast<unsigned long long>(a_.epochs),
      train.mean_loss(), 100 * train.accuracy(), test_part.c_str(), samples / seconds, seconds,
      disk, 100 * waited, j["gpu_bytes"].get<uint64_t>() / 1048576.0,
      j["rss_bytes"].get<uint64_t>() / 1048576.0);
  std::fflush(stdout);
  return WriteMetrics(j);
}

void Trainer::StepDone(void* arg) {
  const auto* m = static_cast<const StepMark*>(arg);
  const uint64_t now = Trace::NowNs();
  TraceSpan("train step", "compute", std::max(m->issued_ns, m->trainer->last_done_ns_), now);
  m->trainer->last_done_ns_ = now;
}

Status Trainer::MarkStep() {
  StepMark& m = marks_[marks_used_++ % marks_.size()];
  m = StepMark{this, Trace::NowNs()};
  return backend_.WhenDone(&Trainer::StepDone, &m);
}

Status Trainer::Run(RunState s, const SgdConfig& sgd, uint64_t seed) {
  std::string stopped_by = "epochs";
  bool stopping = a_.max_steps != 0 && s.step >= a_.max_steps;
  if (stopping) stopped_by = "max-steps";
  while (s.epoch < a_.epochs && !stopping) {
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t bytes0 = source_.bytes_read();
    const double wait0 = source_.wait_seconds();
    RF_RETURN_IF_ERROR(source_.StartEpoch(s.epoch, s.next_sample));
    const uint64_t first_sample = s.next_sample;
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
      RF_RETURN_IF_ERROR(backend_.TrainStep(ToBatchRef(b), sgd));
      if (Trace::Active() != nullptr) RF_RETURN_IF_ERROR(MarkStep());
      ++s.step;
      s.next_sample = source_.position();
      if (g_stop_requested.load(std::memory_order_relaxed)) {
        stopping = true;
        stopped_by = "signal";
      } else if (a_.max_steps != 0 && s.step >= a_.max_steps) {
        stopping = true;
        stopped_by = "max-steps";
      } else if (a_.checkpoint_every != 0 && s.step % a_.checkpoint_every == 0) {
        RF_RETURN_IF_ERROR(Save(s, sgd, seed));
      }
    }
    if (s.next_sample < source_.epoch_samples()) break;  // stopped mid-epoch
    RF_RETURN_IF_ERROR(ReportEpoch(s, t0, s.next_sample - first_sample, bytes0, wait0));
    ++s.epoch;
    s.next_sample = 0;
  }
  // After the last epoch (s.epoch == epochs, next_sample 0) Save stores exactly that.
  RF_RETURN_IF_ERROR(Save(s, sgd, seed));
  std::printf("ringfeed train: stopped by %s after step %llu (next: epoch %llu, sample %llu)%s%s\n",
              stopped_by.c_str(), static_cast<unsigned long long>(s.step),
              static_cast<unsigned long long>(s.epoch + 1),
              static_cast<unsigned long long>(s.next_sample),
              a_.checkpoint.empty() ? "" : "; checkpoint written to ", a_.checkpoint.c_str());
  std::fflush(stdout);
  return WriteMetrics({{"event", "end"},
                       {"stopped_by", stopped_by},
                       {"step", s.step},
                       {"epoch", s.epoch},
                       {"next_sample", s.next_sample},
                       {"checkpoint", a_.checkpoint}});
}

Status Run(const TrainArgs& a) {
  RF_ASSIGN_OR_RETURN(std::vector<uint32_t> widths, ParseWidths(a.conv));
  RF_ASSIGN_OR_RETURN(Dataset train, Dataset::Open(a.data));
  const format::Header& h = train.header();
  ModelConfig config;
  config.channels = h.channels;
  config.height = h.height;
  config.width = h.width;
  config.classes = h.num_classes;
  config.conv = widths;
  config.hidden = a.hidden;
  RF_RETURN_IF_ERROR(config.Validate());
  Normalization norm;
  norm.mean.assign(h.mean.begin(), h.mean.begin() + h.channels);
  norm.stddev.assign(h.stddev.begin(), h.stddev.begin() + h.channels);

  // A resumed run takes the optimizer settings, seed and batch size from its checkpoint: the
  // epoch order and the bit-exact continuation depend on them.
  RunState state;
  SgdConfig sgd = a.sgd;
  uint64_t seed = a.seed;
  TrainArgs args = a;
  Tensors params = InitialParameters(config, a.seed), momentum = ZerosLike(config);
  if (!a.resume.empty()) {
    RF_ASSIGN_OR_RETURN(Checkpoint c, LoadCheckpoint(a.resume, config));
    if (c.dataset_id != h.dataset_id || c.dataset_samples != train.sample_count()) {
      Status st =
          Status::InvalidArgument("checkpoint was trained on another dataset than " + a.data);
      return st.WithPath(a.resume);
    }
    sgd = c.sgd;
    seed = c.seed;
    args.batch_size = c.batch_size;
    params = std::move(c.params);
    momentum = std::move(c.momentum);
    state = RunState{c.epoch, c.step, c.next_sample};
  }

  BatchSourceOptions so;
  so.batch_size = args.batch_size;
  so.shuffle = false;
  std::unique_ptr<MemoryBatchSource> test_source;
  if (!a.test.empty()) {
    RF_ASSIGN_OR_RETURN(Dataset test, Dataset::Open(a.test));
    const format::Header& t = test.header();
    if (t.channels != h.channels || t.height != h.height || t.width != h.width ||
        t.num_classes != h.num_classes) {
      return Status::InvalidArgument("--test " + a.test +
                                     " has another shape or class count than " + a.data);
    }
    RF_ASSIGN_OR_RETURN(test_source, MemoryBatchSource::Load(test, so));
  }

  EngineInputs in;
  in.config = config;
  in.norm = norm;
  in.max_batch = args.batch_size;
  in.sample_bytes = h.SampleBytes();
  in.label_bytes = h.LabelBytes();
  in.train = &train;
  in.test = test_source.get();
  StreamingOptions& so_train = in.streaming;
  so_train.batch_size = args.batch_size;
  so_train.drop_last = a.drop_last;
  so_train.order.shuffle = a.shuffle == "window";
  so_train.order.window_chunks = a.shuffle_window;
  so_train.order.seed = seed;
  so_train.ring_slots = a.ring_slots;
  so_train.epochs = a.epochs;
  so_train.feeder.verify = !a.no_verify;
  so_train.feeder.reader.queue_depth = a.queue_depth;
  RF_ASSIGN_OR_RETURN(so_train.feeder.reader.mode, ParseIoMode(a.io));
  RF_ASSIGN_OR_RETURN(const uint64_t read_bytes, ParseByteSize(a.read_size));
  if (read_bytes == 0 || read_bytes % 4096 != 0 || read_bytes > (1u << 30)) {
    return Status::InvalidArgument("--read-size must be a multiple of 4 KiB up to 1 GiB");
  }
  so_train.feeder.reader.read_bytes = static_cast<uint32_t>(read_bytes);
  ManagedOptions& mo = in.managed;
  mo.batch_size = args.batch_size;
  mo.drop_last = a.drop_last;
  mo.order = so_train.order;
  mo.prefetch_batches = a.managed_prefetch;
  mo.advise = a.managed_advise;
  mo.oversubscribe = a.managed_oversubscribe;
  mo.verify = !a.no_verify;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<TrainEngine> engine,
                      TrainEngine::Create(a.engine, in, params));
  RF_RETURN_IF_ERROR(engine->backend().SetState(params, momentum));
  if (state.next_sample > engine->train().epoch_samples()) {
    return Status::Corruption(a.resume, "checkpoint position is past the end of the epoch");
  }

  std::ofstream metrics;
  if (!a.metrics.empty()) {
    metrics.open(a.metrics, std::ios::trunc);
    if (!metrics) return Status::IOError(a.metrics, "cannot create metrics file", errno);
  }
  std::printf(
      "ringfeed train: %s: %llu samples, model %s, %zu parameters, batch %u%s\nbackend: %s\n"
      "%s\nGPU memory at start: %.1f MiB\n",
      a.data.c_str(), static_cast<unsigned long long>(train.sample_count()),
      DescribeModel(config).c_str(), ParameterCount(config), args.batch_size,
      a.resume.empty() ? "" : (", resumed from " + a.resume).c_str(), engine->description().c_str(),
      engine->train().Describe().c_str(), engine->gpu_bytes() / 1048576.0);
  std::fflush(stdout);
  InstallStopHandlers();
  std::ofstream dump;
  if (!a.dump_order.empty()) {
    dump.open(a.dump_order, std::ios::trunc);
    if (!dump) return Status::IOError(a.dump_order, "cannot create order file", errno);
  }
  Trace trace;
  if (!a.trace.empty()) Trace::Activate(&trace);
  Trainer t(args, train, config, *engine, a.metrics.empty() ? nullptr : &metrics,
            a.dump_order.empty() ? nullptr : &dump);
  Status st = t.Run(state, sgd, seed);
  if (!a.trace.empty()) {
    // Waits for every queued step, so their trace callbacks have run (the run is over: its
    // statistics are no longer needed).
    (void)engine->backend().TakeTrainStats();
    Trace::Activate(nullptr);
    Status written = trace.Write(a.trace);
    if (st.ok()) st = written;
  }
  return st;
}

}  // namespace

int RunTrainCommand(int argc, char** argv) {
  TrainArgs a;
  std::string cuda_graph;
  po::options_description opts("ringfeed train --data TRAIN.rfd [options]");
  opts.add_options()("help,h", "show this help")(
      "config", po::value<std::string>(),
      "read options from this file too, one \"name = value\" per line (the command line wins)")(
      "data", po::value(&a.data), "training dataset")("test", po::value(&a.test),
                                                      "test dataset, evaluated after every epoch")(
      "device", po::value(&a.engine.device)->default_value(a.engine.device),
      "auto (the GPU where one is found, else the CPU), cuda or cpu")(
      "precision", po::value(&a.engine.precision)->default_value(a.engine.precision),
      "GPU math: bf16 (bf16 conv blocks on the tensor cores, float32 master weights and fully "
      "connected layers), tf32 (float32, TF32 tensor cores) or fp32 (full float32 products)")(
      "cuda-graph", po::value(&cuda_graph)->default_value("on"),
      "on|off: replay each full batch's forward and backward pass as one CUDA graph")(
      "epochs", po::value(&a.epochs)->default_value(a.epochs), "epochs to train (in all)")(
      "batch-size", po::value(&a.batch_size)->default_value(a.batch_size), "samples per step")(
      "lr", po::value(&a.sgd.lr)->default_value(a.sgd.lr, Shortest(a.sgd.lr)), "SGD learning rate")(
      "momentum",
      po::value(&a.sgd.momentum)->default_value(a.sgd.momentum, Shortest(a.sgd.momentum)),
      "SGD momentum")("weight-decay",
                      po::value(&a.sgd.weight_decay)
                          ->default_value(a.sgd.weight_decay, Shortest(a.sgd.weight_decay)),
                      "L2 weight decay")("seed", po::value(&a.seed)->default_value(a.seed),
                                         "seeds the initial parameters and the epoch order")(
      "conv", po::value(&a.conv)->default_value(a.conv), "output channels of each conv block")(
      "hidden", po::value(&a.hidden)->default_value(a.hidden), "width of the hidden layer")(
      "checkpoint", po::value(&a.checkpoint),
      "write a checkpoint here at the end, on SIGINT/SIGTERM and every --checkpoint-every steps")(
      "checkpoint-every", po::value(&a.checkpoint_every)->default_value(0),
      "steps between checkpoints (0: only at the end)")(
      "resume", po::value(&a.resume),
      "continue from this checkpoint (its lr, momentum, weight decay, seed and batch size win; "
      "--conv and --hidden must match it)")("max-steps", po::value(&a.max_steps)->default_value(0),
                                            "stop after this many steps in all (0: no limit)")(
      "metrics", po::value(&a.metrics), "write one JSON object per epoch and one at the end")(
      "mode", po::value(&a.engine.mode)->default_value(a.engine.mode),
      "streaming: read chunks from disk as training goes, in fixed memory; managed: load the "
      "whole dataset into one CUDA managed allocation first (the baseline; GPU only)")(
      "managed-prefetch", po::value(&a.managed_prefetch)->default_value(0),
      "managed: prefetch to the GPU the chunks of the batch this many ahead")(
      "managed-advise", po::bool_switch(&a.managed_advise),
      "managed: advise read-mostly, preferred on the GPU")(
      "managed-oversubscribe", po::bool_switch(&a.managed_oversubscribe),
      "managed: allow a dataset larger than the GPU's free memory (pages through it)")(
      "shuffle", po::value(&a.shuffle)->default_value(a.shuffle),
      "window: chunks in a seeded permutation, samples shuffled within windows of resident "
      "chunks; none: stored order")("shuffle-window",
                                    po::value(&a.shuffle_window)->default_value(a.shuffle_window),
                                    "chunks resident together whose samples are shuffled together")(
      "drop-last", po::bool_switch(&a.drop_last), "skip each epoch's partial last batch")(
      "ring-slots", po::value(&a.ring_slots)->default_value(a.ring_slots),
      "host ring slots (one chunk each) the reader fills ahead")(
      "copy-streams", po::value(&a.engine.copy_streams)->default_value(a.engine.copy_streams),
      "GPU: host-to-device copy streams")(
      "queue-depth", po::value(&a.queue_depth)->default_value(a.queue_depth), "reads in flight")(
      "read-size", po::value(&a.read_size)->default_value(a.read_size),
      "largest single read (a multiple of 4 KiB)")("io", po::value(&a.io)->default_value(a.io),
                                                   "direct (O_DIRECT io_uring), buffered, pread")(
      "no-verify", po::bool_switch(&a.no_verify), "skip the per-chunk checksum")(
      "trace", po::value(&a.trace),
      "write a Chrome trace (chrome://tracing, ui.perfetto.dev) of the read, verify, copy and "
      "compute spans")(
      "dump-order", po::value(&a.dump_order),
      "write the sample indices each epoch visits, one per line, after a \"# epoch N\" line");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    // Options from a file come second: the command line wins where both set one.
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream file(path);
      if (!file) {
        std::fprintf(stderr, "ringfeed train: cannot read --config %s: %s\n", path.c_str(),
                     std::strerror(errno));
        return 2;
      }
      po::store(po::parse_config_file(file, opts), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "ringfeed train: %s (see --help)\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (cuda_graph != "on" && cuda_graph != "off") {
    std::fprintf(stderr, "ringfeed train: --cuda-graph must be on or off, got \"%s\"\n",
                 cuda_graph.c_str());
    return 2;
  }
  a.engine.cuda_graph = cuda_graph == "on";
  if (a.data.empty()) {
    std::fprintf(stderr, "ringfeed train: no --data given (see --help)\n");
    return 2;
  }
  if (a.epochs == 0 || a.batch_size == 0) {
    std::fprintf(stderr, "ringfeed train: --epochs and --batch-size must be >= 1\n");
    return 2;
  }
  if (a.shuffle != "window" && a.shuffle != "none") {
    std::fprintf(stderr, "ringfeed train: --shuffle must be window or none, got \"%s\"\n",
                 a.shuffle.c_str());
    return 2;
  }
  if (a.shuffle_window == 0 || a.ring_slots < 2 || a.queue_depth == 0 ||
      a.engine.copy_streams == 0) {
    std::fprintf(stderr,
                 "ringfeed train: --shuffle-window, --queue-depth and --copy-streams must be >= 1, "
                 "--ring-slots >= 2\n");
    return 2;
  }
  Status st = Run(a);
  if (!st.ok()) {
    std::fprintf(stderr, "ringfeed: %s\n", st.ToString().c_str());
    return st.IsInvalidArgument() ? 2 : 1;  // a bad flag or a mismatched checkpoint
  }
  return 0;
}

}  // namespace rf
