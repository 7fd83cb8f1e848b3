// ringfeed train: its options (command line and --config file), and the run's set-up: the
// dataset, the model, a resumed checkpoint, the engine (backend and training source:
// src/train_engine.h), then the loop (src/trainer.h). Checkpoints resume bit-exactly on the CPU:
// the backend is deterministic and the order a function of seed, window and epoch alone.
//
// The data path, top to bottom: TrainingSource::Next (streaming: the window's chunks read, copied
// where the backend computes and gathered into a batch, pipeline/streaming_source.h; managed:
// gathered from one managed allocation, pipeline/managed_source.h) -> Backend::TrainStep.
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
#include "src/trainer.h"

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

  // A resumed run takes the optimizer settings, seed, batch size and shuffle (mode and window)
  // from its checkpoint: the epoch order and the bit-exact continuation depend on them.
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
    if (c.order_window == kOrderStored) {
      args.shuffle = "none";
    } else if (c.order_window != 0) {
      args.shuffle = "window";
      args.shuffle_window = c.order_window;
    }
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
  so_train.order.shuffle = args.shuffle == "window";
  so_train.order.window_chunks = args.shuffle_window;
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
  // Set-up: the backend, and the training source (managed mode loads the whole dataset here).
  const auto setup0 = std::chrono::steady_clock::now();
  RF_ASSIGN_OR_RETURN(std::unique_ptr<TrainEngine> engine,
                      TrainEngine::Create(a.engine, in, params));
  const double setup_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - setup0).count();
  RF_RETURN_IF_ERROR(engine->backend().SetState(params, momentum));
  if (state.next_sample > engine->train().epoch_samples()) {
    return Status::Corruption(a.resume, "checkpoint position is past the end of the epoch");
  }

  std::ofstream metrics;
  if (!a.metrics.empty()) {
    metrics.open(a.metrics, std::ios::trunc);
    if (!metrics) return Status::IOError(a.metrics, "cannot create metrics file", errno);
    metrics << nlohmann::json{{"event", "start"},
                              {"mode", a.engine.mode},
                              {"backend", engine->description()},
                              {"source", engine->train().Describe()},
                              {"setup_seconds", setup_seconds},
                              {"gpu_bytes", engine->gpu_bytes()}}
                   .dump()
            << "\n";
  }
  std::printf(
      "ringfeed train: %s: %llu samples, model %s, %zu parameters, batch %u%s\nbackend: %s\n"
      "%s\nset up in %.2f s; GPU memory at start: %.1f MiB\n",
      a.data.c_str(), static_cast<unsigned long long>(train.sample_count()),
      DescribeModel(config).c_str(), ParameterCount(config), args.batch_size,
      a.resume.empty() ? "" : (", resumed from " + a.resume).c_str(), engine->description().c_str(),
      engine->train().Describe().c_str(), setup_seconds, engine->gpu_bytes() / 1048576.0);
  std::fflush(stdout);
  InstallStopHandlers();
  std::ofstream dump;
  if (!a.dump_order.empty()) {
    dump.open(a.dump_order, std::ios::trunc);
    if (!dump) return Status::IOError(a.dump_order, "cannot create order file", errno);
  }
  Trace trace;
  if (!a.trace.empty()) Trace::Activate(&trace);
  TrainerOptions to;
  to.epochs = args.epochs;
  to.batch_size = args.batch_size;
  to.order_window = so_train.order.shuffle ? so_train.order.window_chunks : kOrderStored;
  to.checkpoint = args.checkpoint;
  to.checkpoint_every = args.checkpoint_every;
  to.max_steps = args.max_steps;
  to.metrics = args.metrics;
  Trainer t(to, train, config, *engine, a.metrics.empty() ? nullptr : &metrics,
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
