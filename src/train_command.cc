// ringfeed train: the run's set-up and its loop, top to bottom in Train below:
//
//   1. the data: the training split and --test, opened and checked trainable
//   2. the outputs, before anything is written: none may replace an input or another output, and
//      the checkpoint's directory must take files
//   3. the model, from the dataset's shape and the flags
//   4. where training starts: fresh parameters, or a --resume checkpoint's, which adjusts the
//      config (src/train_config.h's ApplyCheckpoint); the config is final from here on
//   5. the engine: the backend and the training and test sources (src/train_engine.h)
//   6. the run's output files, and its opening lines
//   7. the loop (src/trainer.h: per epoch train, evaluate, report), then the files committed
//
// Checkpoints resume bit-exactly on the CPU: the backend is deterministic and the order a function
// of seed, window and epoch alone.
//
// Data-parallel: started by mpirun, every rank runs this same command; the World
// (parallel/world.h) says which rank it is. Each rank trains on its part of every epoch; rank 0
// reads a --resume checkpoint and hands it to the others, prints, and writes the outputs that are
// one file (--checkpoint, --metrics); --dump-order and --trace are per rank (PATH.rankR). An error
// on any rank is printed with its rank and ends the whole job (World::Abort), so no rank waits
// for it.
//
// The data path, top to bottom: TrainingSource::Next (streaming: the window's chunks read, copied
// where the backend computes and gathered into a batch, pipeline/sources/streaming_source.h;
// managed: gathered from one managed allocation, pipeline/sources/managed_source.h) ->
// Backend::TrainStep.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/augment_spec.h"
#include "io/dataset.h"
#include "model/checkpoint.h"
#include "parallel/world.h"
#include "pipeline/loader.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/mixture.h"
#include "pipeline/stage/trace.h"
#include "src/command_checks.h"
#include "src/commands.h"
#include "src/train_config.h"
#include "src/train_engine.h"
#include "src/train_flags.h"
#include "src/trainer.h"

namespace rf {
namespace {

// A Status from below that, here, means the command line disagrees with its files.
Status AsUsage(const Status& st) { return Status::Usage(st.message()).WithPath(st.path()); }

std::vector<std::string> ShardPaths(const Dataset& d) {
  std::vector<std::string> out;
  for (size_t s = 0; s < d.shard_count(); ++s) out.push_back(d.shard_path(s));
  return out;
}

// Usage naming the dataset where the CNN cannot train it. It trains images: samples of 3 dims
// (C,H,W) or 2 (H,W, one channel: how an .npy of (N,H,W) is stored), of a dtype it decodes
// (uint8, float16, bfloat16, float32; not ids such as token rows), fixed-shape (not records of
// any size but image/jpeg records, which the loader decodes to --image-size), with labels of 2
// or more classes.
Status CheckTrainable(const std::string& flag, const std::string& path, const format::Header& h,
                      uint32_t image_size) {
  const std::vector<uint64_t> shape = h.Shape();
  std::string why;
  if (format::HoldsJpegRecords(h) && image_size == 0) {
    why =
        "it holds image/jpeg records, which --image-size 0 leaves undecoded; give the size to "
        "train at (224 by default)";
  } else if (format::HoldsJpegRecords(h)) {
    // Decoded to 3 x image_size x image_size by the loader.
  } else if (h.variable()) {
    why = "it holds " + std::string(format::RecordKindName(h.record_kind)) +
          " records of any size; the CNN trains fixed-shape image tensors (read them with "
          "ringfeed.Loader, which hands them out as values and offsets)";
  } else if (!IsImageDType(h.sample_dtype)) {
    why = "its samples are " + std::string(DTypeName(h.sample_dtype)) +
          " ids; the CNN trains uint8, float16, bfloat16 or float32 images";
  } else if (shape.size() != 2 && shape.size() != 3) {
    why = "its samples have shape " + format::ShapeText(shape) +
          "; the CNN trains images of shape C,H,W or H,W";
  } else if (!h.HasLabels()) {
    why = "it has no labels; the CNN trains a classifier";
  } else if (h.num_classes < 2) {
    why = "it has 1 class; the CNN needs 2 or more";
  }
  if (why.empty()) return Status::Ok();
  return Status::Usage(flag + " " + path + ": cannot train on it: " + why);
}

// The datasets the run reads: the training split (one dataset, or a mixture's: --data a,b
// --weights), and the test split where --test names one (Usage where any cannot be trained on,
// a mixture's datasets hold other samples than each other, or the test split's shape or classes
// are not the training split's).
struct RunData {
  std::vector<Dataset> train;
  std::vector<double> weights;  // a mixture's, normalized; empty: one dataset
  std::optional<Dataset> test;

  const Dataset& first() const { return train[0]; }
  bool mixture() const { return !weights.empty(); }
  std::vector<const Dataset*> sources() const {
    std::vector<const Dataset*> out;
    for (const Dataset& d : train) out.push_back(&d);
    return out;
  }
  // The training split's samples: a mixture's datasets' together.
  uint64_t samples() const {
    uint64_t n = 0;
    for (const Dataset& d : train) n += d.sample_count();
    return n;
  }
};

Result<RunData> OpenData(const TrainConfig& c) {
  RunData d;
  RF_ASSIGN_OR_RETURN(const std::vector<std::string> paths, c.pipeline.DataPaths());
  for (const std::string& path : paths) {
    RF_ASSIGN_OR_RETURN(Dataset one, Dataset::Open(path));
    RF_RETURN_IF_ERROR(CheckTrainable("--data", path, one.header(), c.image.size));
    d.train.push_back(std::move(one));
  }
  if (!c.pipeline.weights.empty()) {
    Result<std::vector<double>> weights = NormalizeWeights(c.pipeline.weights, d.train.size());
    if (!weights.ok()) return Status::Usage("--" + weights.status().message());  // "--weights..."
    d.weights = std::move(weights).value();
    Status mixable = CheckMixable(d.sources());
    if (!mixable.ok()) return Status::Usage("--data: " + mixable.ToString());
  }
  if (c.test.empty()) return d;
  RF_ASSIGN_OR_RETURN(d.test, Dataset::Open(c.test));
  RF_RETURN_IF_ERROR(CheckTrainable("--test", c.test, d.test->header(), c.image.size));
  const format::Header &h = d.first().header(), &t = d.test->header();
  // Decoded images have the model's input shape whatever their files' sizes.
  const bool same_shape =
      format::HoldsJpegRecords(h) || format::HoldsJpegRecords(t)
          ? format::HoldsJpegRecords(h) && format::HoldsJpegRecords(t)
          : t.channels == h.channels && t.height == h.height && t.width == h.width;
  if (!same_shape || t.num_classes != h.num_classes) {
    return Status::Usage("--test " + c.test + " has another shape or class count than " +
                         d.first().path());
  }
  return d;
}

// The model the flags ask for on the dataset's input shape (Usage where --conv does not fit it).
Result<ModelConfig> ModelFor(const TrainConfig& c, const format::Header& h) {
  ModelConfig m;
  m.channels = h.channels;
  m.height = h.height;
  m.width = h.width;
  if (format::HoldsJpegRecords(h)) {  // the loader's decoded images: RGB at --image-size
    m.channels = 3;
    m.height = m.width = c.image.size;
  }
  m.classes = h.num_classes;
  m.conv = c.conv;
  m.hidden = c.hidden;
  m.batch_norm = c.batch_norm;
  if (Status st = m.Validate(); !st.ok()) return AsUsage(st);
  return m;
}

// The run's files before anything is written: no output may replace an input or another output
// (CheckTrainOutputs), an earlier run's --metrics or --dump-order is continued only by a resumed
// run or replaced under --overwrite (CheckRunLogTargets), and the checkpoint's directory must
// take files (or the run would be lost at its first checkpoint) and its file may be replaced
// (CheckCheckpointTarget); rank 0 writes it and --metrics.
Status CheckOutputs(const TrainConfig& c, const RunData& data, const World& world) {
  std::vector<std::string> shards;
  for (const Dataset& d : data.train) {
    for (std::string& s : ShardPaths(d)) shards.push_back(std::move(s));
  }
  RF_RETURN_IF_ERROR(CheckTrainOutputs(
      c, shards, data.test ? ShardPaths(*data.test) : std::vector<std::string>{}));
  RF_RETURN_IF_ERROR(CheckRunLogTargets(c, world.rank() == 0));
  if (c.checkpoint.empty() || world.rank() != 0) return Status::Ok();
  RF_RETURN_IF_ERROR(CheckDirectoryWritable("--checkpoint", c.checkpoint));
  return CheckCheckpointTarget(c);
}

// Where training starts: fresh parameters, or a checkpoint's, which also sets the config's seed,
// batch size, optimizer, lr schedule and shuffle (ApplyCheckpoint). A checkpoint of another model
// is a usage error (the flags disagree with it); a damaged one, or one of another dataset, a data
// error.
struct StartPoint {
  Tensors params, momentum;
  Tensors running_stats;  // batch norm's (none without it)
  RunState state;
};

// The --resume checkpoint's bytes: read by rank 0, handed to the others (a multi-machine job's
// checkpoint lies on rank 0's machine).
Result<std::vector<uint8_t>> CheckpointBytes(const std::string& path, World& world) {
  Result<std::vector<uint8_t>> bytes = std::vector<uint8_t>{};
  if (world.rank() == 0) bytes = ReadCheckpointBytes(path);
  if (world.size() == 1) return bytes;
  constexpr uint64_t kFailed = ~uint64_t{0};
  uint64_t size = bytes.ok() ? bytes->size() : kFailed;
  RF_RETURN_IF_ERROR(world.Broadcast(&size, sizeof size, 0));
  if (size == kFailed) {
    if (world.rank() == 0) return bytes.status();
    return Status::Aborted("rank 0 could not read --resume " + path);
  }
  bytes->resize(size);
  RF_RETURN_IF_ERROR(world.Broadcast(bytes->data(), size, 0));
  return bytes;
}

// The samples each rank trains on in `epoch` (a resumed epoch's own count), less a partial last
// batch with drop_last: a dataset's (PipelineConfig::EpochSamplesFor) or a mixture's
// (pipeline/sources/mixture.h's epochs); Usage for stretches the data cannot have had.
Result<uint64_t> EpochSamplesOf(const TrainConfig& c, const RunData& data, uint64_t epoch) {
  if (!data.mixture()) return c.pipeline.EpochSamplesFor(data.first().ChunkSampleCounts(), epoch);
  std::vector<uint64_t> samples;
  for (const Dataset& d : data.train) samples.push_back(d.sample_count());
  const OrderSettings& order = c.pipeline.order;
  RF_ASSIGN_OR_RETURN(const uint64_t count,
                      MixtureEpochCount(MixtureSamples(samples, data.weights), order, epoch));
  return EpochSamples(count, order.batch_size, order.drop_last);
}

// The samples of an ordinary epoch of each rank, before drop_last (what the schedule's span is
// counted from).
uint64_t OrdinaryEpochSamples(const TrainConfig& c, const RunData& data) {
  OrderSettings order = c.pipeline.order;
  order.resumed = {};
  if (!data.mixture())
    return WindowOrder(data.first().ChunkSampleCounts(), order).EpochSampleCount();
  std::vector<uint64_t> samples;
  for (const Dataset& d : data.train) samples.push_back(d.sample_count());
  const Result<uint64_t> count = MixtureEpochCount(MixtureSamples(samples, data.weights), order, 0);
  return count.ok() ? count.value() : 0;
}

// Usage (or, for other datasets, Corruption) naming what differs where the checkpoint `ck` is of
// another training split than `data`: one dataset against a mixture, other datasets, or other
// weights.
Status CheckCheckpointData(const Checkpoint& ck, const RunData& data, const TrainConfig& c) {
  const std::string& path = c.resume;
  if (!data.mixture()) {
    if (!ck.datasets.empty()) {
      return Status::Usage(
          "--resume " + path + " is of a mixture of " + std::to_string(ck.datasets.size()) +
          " datasets (--data a,b --weights ...); this run reads one, " + c.pipeline.data);
    }
    if (ck.dataset_id != data.first().header().dataset_id ||
        ck.dataset_samples != data.first().sample_count()) {
      return Status::Corruption(
          path, "checkpoint was trained on another dataset than " + c.pipeline.data);
    }
    return Status::Ok();
  }
  if (ck.datasets.empty()) {
    return Status::Usage("--resume " + path + " is of one dataset; this run mixes " +
                         std::to_string(data.train.size()) + " (" + c.pipeline.data + ")");
  }
  if (ck.datasets.size() != data.train.size()) {
    return Status::Usage("--resume " + path + " is of a mixture of " +
                         std::to_string(ck.datasets.size()) + " datasets; this run mixes " +
                         std::to_string(data.train.size()) + " (" + c.pipeline.data + ")");
  }
  for (size_t i = 0; i < ck.datasets.size(); ++i) {
    const Dataset& d = data.train[i];
    if (ck.datasets[i].dataset_id != d.header().dataset_id ||
        ck.datasets[i].dataset_samples != d.sample_count()) {
      return Status::Corruption(path, "checkpoint's dataset " + std::to_string(i + 1) +
                                          " of the mixture is another than " + d.path() + " (" +
                                          std::to_string(ck.datasets[i].dataset_samples) +
                                          " samples, not " + std::to_string(d.sample_count()) +
                                          ")");
    }
  }
  std::string theirs, ours;
  bool same = true;
  for (size_t i = 0; i < ck.datasets.size(); ++i) {
    char a[32], b[32];
    std::snprintf(a, sizeof a, "%s%.6g", i ? "," : "", ck.datasets[i].weight);
    std::snprintf(b, sizeof b, "%s%.6g", i ? "," : "", data.weights[i]);
    theirs += a;
    ours += b;
    same = same && ck.datasets[i].weight == data.weights[i];
  }
  if (!same) {
    return Status::Usage("--weights: --resume " + path + " mixes its datasets by weights " +
                         theirs + " (normalized), this run by " + ours +
                         "; a resumed mixture goes on with its own (give those)");
  }
  return Status::Ok();
}

// *model: the model the flags ask for, which a checkpoint of decoded images sets to the image
// size it trained at (ApplyCheckpoint).
Result<StartPoint> Start(const RunData& data, World& world, TrainConfig* c, ModelConfig* model) {
  if (c->resume.empty()) {
    return StartPoint{InitialParameters(*model, c->pipeline.order.seed),
                      OptimizerStateZeros(*model, c->optimizer.kind), InitialRunningStats(*model),
                      RunState{}};
  }
  RF_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, CheckpointBytes(c->resume, world));
  RF_ASSIGN_OR_RETURN(Checkpoint ck, DecodeCheckpoint(bytes.data(), bytes.size(), c->resume));
  // The checkpoint's settings first (a decoded file's batch size is not 0, so this does not
  // fail): the model it asks for takes the checkpoint's image size.
  uint64_t position = 0;
  RF_RETURN_IF_ERROR(
      ApplyCheckpoint(ck, c, &position, format::HoldsJpegRecords(data.first().header())));
  RF_ASSIGN_OR_RETURN(*model, ModelFor(*c, data.first().header()));
  // The one InvalidArgument: the file is of another model than the one asked for.
  if (Status st = CheckCheckpointModel(ck, *model, c->resume); !st.ok()) return AsUsage(st);
  RF_RETURN_IF_ERROR(CheckCheckpointData(ck, data, *c));
  // What the checkpoint set is held to the options' bounds too (a file of an older ringfeed may
  // hold a momentum of 5).
  if (Status st = c->Validate(); !st.ok()) {
    return Status::Usage(st.message() + " (the value --resume " + c->resume + " holds)");
  }
  // The checkpoint's stretches against this dataset (Usage), then its position against the epoch
  // it continues, which may be one resumed at another world size: its own count.
  RF_ASSIGN_OR_RETURN(const uint64_t epoch_samples, EpochSamplesOf(*c, data, ck.epoch));
  if (position > epoch_samples) {
    return Status::Corruption(c->resume, "checkpoint position is past the end of the epoch");
  }
  return StartPoint{std::move(ck.params), std::move(ck.momentum), std::move(ck.running_stats),
                    RunState{ck.epoch, ck.step, position}};
}

// The backend and the sources, holding the start point's state; *setup_seconds: how long making
// them took (the managed mode loads the whole dataset then). Rank 0 alone evaluates: the others
// get no test split.
Result<std::unique_ptr<TrainEngine>> MakeEngine(const TrainConfig& c, const ModelConfig& model,
                                                const RunData& data, const StartPoint& start,
                                                World& world, double* setup_seconds) {
  format::Header h = data.first().header();
  if (data.mixture()) {  // the mixture's statistics: its datasets', by weight
    std::vector<const format::Header*> headers;
    for (const Dataset& d : data.train) headers.push_back(&d.header());
    if (!MixtureStatistics(headers, data.weights, h.channels, &h.mean, &h.stddev)) {
      return Status::Usage("--weights: the datasets' channel statistics, mixed, overflow float32");
    }
  }
  EngineInputs in;
  in.config = model;
  in.norm.mean.assign(h.mean.begin(), h.mean.begin() + h.channels);
  in.norm.stddev.assign(h.stddev.begin(), h.stddev.begin() + h.channels);
  if (format::HoldsJpegRecords(h)) in.norm = DecodedImageStatistics();
  in.train = &data.first();
  if (data.mixture()) in.mixture = data.sources();
  in.test = data.test && world.rank() == 0 ? &*data.test : nullptr;
  in.world = &world;
  const auto t0 = std::chrono::steady_clock::now();
  RF_ASSIGN_OR_RETURN(std::unique_ptr<TrainEngine> engine,
                      TrainEngine::Create(c, in, start.params));
  *setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RF_RETURN_IF_ERROR(engine->backend().SetState(start.params, start.momentum));
  RF_RETURN_IF_ERROR(engine->backend().SetRunningStats(start.running_stats));
  return engine;
}

// `word` as one shell word: as it is where that is safe, else in single quotes.
std::string ShellWord(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_-+=./,:@%") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// The command line `args` (after "train") with its --resume, if any, replaced by --resume
// `checkpoint`: what continues the run from its emergency checkpoint.
std::string ResumeCommand(const std::vector<std::string>& args, const std::string& checkpoint) {
  std::string cmd = "ringfeed train";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--resume") {
      ++i;  // and its value
    } else if (args[i].rfind("--resume=", 0) != 0) {
      // Appended apart: " " + std::string&& trips GCC 12's -Wrestrict at -O3 (a false positive).
      cmd += ' ';
      cmd += ShellWord(args[i]);
    }
  }
  cmd += " --resume ";
  cmd += ShellWord(checkpoint);
  return cmd;
}

// Under a launcher: a warning where some rank may run on one CPU only (Open MPI's mpirun binds
// each rank to one core when it starts 2 ranks or fewer), else empty. ringfeed's reader, copy
// and training threads then share that core: 13% slower on one H200 (mpirun -np 1, page-cached
// data). A collective: every rank calls it.
Result<std::string> BoundCpuWarning(World& world) {
  if (DetectLauncher().empty()) return std::string();
  cpu_set_t set;
  CPU_ZERO(&set);
  uint64_t cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (cpus == 0 || sysconf(_SC_NPROCESSORS_ONLN) <= 1) cpus = 2;  // unknown, or nothing to gain
  RF_RETURN_IF_ERROR(world.AllReduceMin(&cpus, 1));
  if (cpus > 1) return std::string();
  return std::string(
      "warning: a rank may run on 1 CPU only (the launcher bound it there; mpirun binds "
      "each rank to a core when it starts 2 or fewer): its reader, copy and training threads "
      "share that core. Start the ranks with `mpirun --bind-to none` (or --map-by "
      "ppr:N:node:pe=K) for their full speed.\n");
}

// The run's output files: --metrics (rank 0's; its first record says what was set up) and
// --dump-order are written in place as the run goes, a record a write (io/line_output.h), so a
// killed run leaves every record written before it; a resumed run appends to them after a record
// that says where it resumed (CheckRunLogTargets has made sure a fresh run replaces no earlier
// file unasked). A write error fails the run naming the file. --trace is gathered in memory and
// written at the end. Not movable: the active Trace points into it.
class RunFiles {
 public:
  RunFiles() = default;
  RunFiles(const RunFiles&) = delete;
  RunFiles& operator=(const RunFiles&) = delete;
  ~RunFiles() {
    if (Trace::Active() == &trace_) Trace::Activate(nullptr);
  }

  // `at`: where the run starts; `overrides`: the flags a resumed checkpoint overrode
  // (ResumeOverrides), recorded in the resume record.
  Status Open(const TrainConfig& c, TrainEngine& engine, double setup_seconds, const World& world,
              const RunState& at, const std::vector<std::string>& overrides) {
    const bool resumed = !c.resume.empty();
    const LineOutput::Start start =
        resumed ? LineOutput::Start::kAppend : LineOutput::Start::kTruncate;
    if (world.rank() == 0 && !c.metrics.empty()) {
      RF_ASSIGN_OR_RETURN(metrics_, LineOutput::Open(c.metrics, start));
      if (resumed) {
        // "epoch" counts from 1, as the epoch records' do: the epoch the run continues.
        RF_RETURN_IF_ERROR(metrics_->Write(nlohmann::json{{"event", "resume"},
                                                          {"checkpoint", c.resume},
                                                          {"epoch", at.epoch + 1},
                                                          {"step", at.step},
                                                          {"overrides", overrides}}
                                               .dump() +
                                           "\n"));
      }
      RF_RETURN_IF_ERROR(metrics_->Write(nlohmann::json{{"event", "start"},
                                                        {"mode", PipelineModeName(c.pipeline.mode)},
                                                        {"backend", engine.description()},
                                                        {"source", engine.train().Describe()},
                                                        {"setup_seconds", setup_seconds},
                                                        {"world_size", world.size()},
                                                        {"augment", AugmentSpecText(c.augment)},
                                                        {"gpu_bytes", engine.gpu_bytes()}}
                                             .dump() +
                                         "\n"));
    }
    if (!c.dump_order.empty()) {
      RF_ASSIGN_OR_RETURN(dump_, LineOutput::Open(c.dump_order, start));
      if (resumed) {
        RF_RETURN_IF_ERROR(dump_->Write("# resumed from " + c.resume + " at epoch " +
                                        std::to_string(at.epoch + 1) + " step " +
                                        std::to_string(at.step) + "\n"));
      }
    }
    trace_path_ = c.trace;
    if (!trace_path_.empty()) Trace::Activate(&trace_);
    return Status::Ok();
  }

  TrainerOutputs ForTrainer(std::string resume_command) {
    return TrainerOutputs{metrics_ ? &*metrics_ : nullptr, dump_ ? &*dump_ : nullptr,
                          std::move(resume_command)};
  }

  // Syncs and closes the files whatever the run's outcome `st` (a run stopped by a data error
  // still reports how far it got), unless writing them is what failed: the first error wins.
  Status Close(Status st, TrainEngine& engine) {
    for (std::optional<LineOutput>* out : {&metrics_, &dump_}) {
      if (!*out) continue;
      Status closed = (*out)->Close();
      if (st.ok()) st = closed;
    }
    if (!trace_path_.empty()) {
      // Waits for every queued step, so their trace callbacks have run (the run is over: its
      // statistics are no longer needed).
      (void)engine.backend().TakeTrainStats();
      Trace::Activate(nullptr);
      Status written = trace_.Write(trace_path_);
      if (st.ok()) st = written;
    }
    return st;
  }

 private:
  std::optional<LineOutput> metrics_, dump_;
  std::string trace_path_;
  Trace trace_;
};

// Rank 0's opening lines: the data, model and batch, the backend, the ranks' reduction, the
// source, the set-up time; and, on every rank (a collective), the bound-CPU warning.
Status PrintStart(const TrainConfig& c, const RunData& data, const ModelConfig& model,
                  TrainEngine& engine, double setup_seconds, World& world) {
  RF_ASSIGN_OR_RETURN(const std::string bound, BoundCpuWarning(world));
  if (world.rank() != 0) return Status::Ok();
  const uint32_t batch_size = c.pipeline.order.batch_size;
  const std::string batch =
      (world.size() == 1 ? std::to_string(batch_size)
                         : std::to_string(batch_size) + " a rank (" +
                               std::to_string(uint64_t{batch_size} * world.size()) + " a step)") +
      (c.augment.enabled() ? ", augment " + AugmentSpecText(c.augment) : "");
  // GPU memory where the run holds some (the engine's 0 is the CPU's).
  char gpu_memory[64] = "";
  if (engine.gpu_bytes() > 0) {
    std::snprintf(gpu_memory, sizeof gpu_memory, "; GPU memory at start: %.1f MiB",
                  engine.gpu_bytes() / 1048576.0);
  }
  std::printf(
      "ringfeed train: %s: %llu samples, model %s, %zu parameters, batch %s%s\nbackend: %s\n"
      "%s%s%s\nset up in %.2f s%s\n%s",
      c.pipeline.data.c_str(), static_cast<unsigned long long>(data.samples()),
      DescribeModel(model).c_str(), ParameterCount(model), batch.c_str(),
      c.resume.empty() ? "" : (", resumed from " + c.resume).c_str(), engine.description().c_str(),
      engine.reduction().empty() ? "" : "ranks: ",
      engine.reduction().empty() ? "" : (engine.reduction() + "\n").c_str(),
      engine.train().Describe().c_str(), setup_seconds, gpu_memory, bound.c_str());
  std::fflush(stdout);
  return Status::Ok();
}

// Several ranks: PATH.rankR, so the ranks' files do not collide.
std::string PerRank(const std::string& path, const World& world) {
  if (path.empty() || world.size() == 1) return path;
  return path + ".rank" + std::to_string(world.rank());
}

// The run, top to bottom (the steps of this file's first comment). `args`: the command line after
// "train", for the command that resumes an emergency checkpoint; `given`: the options it gave
// (TrainFlags::given).
Status Train(TrainConfig c, const std::vector<std::string>& args,
             const std::set<std::string>& given, World& world) {
  // The ranks come from the World, not from flags; the per-rank files carry the rank.
  c.pipeline.order.rank = world.rank();
  c.pipeline.order.world_size = world.size();
  c.dump_order = PerRank(c.dump_order, world);
  c.trace = PerRank(c.trace, world);

  // 1. The data. 2. The outputs. 3. The model.
  RF_ASSIGN_OR_RETURN(RunData data, OpenData(c));
  RF_RETURN_IF_ERROR(CheckOutputs(c, data, world));
  RF_ASSIGN_OR_RETURN(ModelConfig model, ModelFor(c, data.first().header()));
  // 4. Where training starts; a resumed checkpoint has adjusted the config (and, for decoded
  // images, the model's input size), which is final now (rank 0 names each flag given that the
  // checkpoint overrode). The augmentation, the flag's or the checkpoint's, against the images it
  // transforms. The schedule spans ordinary epochs at this world size (or the span the checkpoint
  // recorded).
  const TrainConfig asked = c;
  RF_ASSIGN_OR_RETURN(StartPoint start, Start(data, world, &c, &model));
  const std::vector<std::string> overrides =
      c.resume.empty() ? std::vector<std::string>{} : ResumeOverrides(asked, c, given);
  if (world.rank() == 0) {
    for (const std::string& line : overrides) std::printf("ringfeed train: %s\n", line.c_str());
  }
  if (format::HoldsJpegRecords(data.first().header()) && c.augment.enabled()) {
    return Status::Usage("--augment " + AugmentSpecText(c.augment) +
                         ": image/jpeg records are decoded with their own random resized crop and "
                         "flip; leave --augment out");
  }
  if (!format::HoldsJpegRecords(data.first().header())) {
    RF_RETURN_IF_ERROR(CheckAugmentFits(c.augment, data.first().header(), "--augment"));
  }
  c.schedule_span = ScheduleSpanFor(c, OrdinaryEpochSamples(c, data));
  // 5. The engine.
  double setup_seconds = 0;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<TrainEngine> engine,
                      MakeEngine(c, model, data, start, world, &setup_seconds));
  // 6. The run's files and its opening lines.
  RunFiles files;
  RF_RETURN_IF_ERROR(files.Open(c, *engine, setup_seconds, world, start.state, overrides));
  RF_RETURN_IF_ERROR(PrintStart(c, data, model, *engine, setup_seconds, world));
  // 7. The loop.
  InstallStopHandlers();
  Trainer trainer(c, model, data.sources(), *engine, world,
                  files.ForTrainer(c.checkpoint.empty() ? "" : ResumeCommand(args, c.checkpoint)));
  return files.Close(trainer.Run(start.state), *engine);
}

}  // namespace

CommandStatus RunTrainCommand(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  Result<TrainFlags> flags = ReadTrainFlags(args);
  if (!flags.ok()) return {flags.status(), "ringfeed train"};
  if (flags->help) {
    std::cout << flags->help_text;
    return {};
  }
  Result<TrainConfig> config = TrainConfigFromFlags(*flags);
  if (!config.ok()) return {config.status()};
  Result<std::unique_ptr<World>> world = OpenWorld();
  if (!world.ok()) return {world.status()};
  Status st = Train(std::move(config).value(), args, flags->given, **world);
  if (!st.ok() && (*world)->size() > 1) {
    // The other ranks may be waiting for this one in a collective: end them all.
    std::fprintf(stderr, "ringfeed train: rank %u of %u: %s\n", (*world)->rank(), (*world)->size(),
                 st.ToString().c_str());
    (*world)->Abort(st.IsUsage() ? 2 : 1);
  }
  return {st};
}

}  // namespace rf
