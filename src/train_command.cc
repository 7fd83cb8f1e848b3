// ringfeed train: the run's set-up and its loop, top to bottom in Train below:
//
//   1. the data: the training split and --test, opened and checked trainable (src/train_data.h)
//   2. the outputs, before anything is written: none may replace an input or another output, and
//      the checkpoint's directory must take files
//   3. the model, from the dataset's shape and the flags (src/train_start.h)
//   4. where training starts: fresh parameters, or a --resume checkpoint's, which adjusts the
//      config (src/train_config.h's ApplyCheckpoint); the config is final from here on
//      (src/train_start.h)
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
#include "io/remote/remote_object.h"
#include "parallel/world.h"
#include "pipeline/loader.h"
#include "pipeline/sources/mixture.h"
#include "pipeline/stage/trace.h"
#include "src/command_checks.h"
#include "src/commands.h"
#include "src/train_config.h"
#include "src/train_data.h"
#include "src/train_engine.h"
#include "src/train_flags.h"
#include "src/train_start.h"
#include "src/trainer.h"

namespace rf {
namespace {

std::vector<std::string> ShardPaths(const Dataset& d) {
  std::vector<std::string> out;
  for (size_t s = 0; s < d.shard_count(); ++s) out.push_back(d.shard_path(s));
  return out;
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
  if (format::HoldsImageRecords(h)) in.norm = DecodedImageStatistics();
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
      ShownPath(c.pipeline.data).c_str(), static_cast<unsigned long long>(data.samples()),
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
  RF_RETURN_IF_ERROR(c.pipeline.CheckPartition());
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
  RF_ASSIGN_OR_RETURN(StartPoint start, StartPointFor(data, world, &c, &model));
  const std::vector<std::string> overrides =
      c.resume.empty() ? std::vector<std::string>{} : ResumeOverrides(asked, c, given);
  if (world.rank() == 0) {
    for (const std::string& line : overrides) std::printf("ringfeed train: %s\n", line.c_str());
  }
  if (format::HoldsImageRecords(data.first().header()) && c.augment.enabled()) {
    return Status::Usage("--augment " + AugmentSpecText(c.augment) +
                         ": image records are decoded with their own random resized crop and "
                         "flip; leave --augment out");
  }
  if (!format::HoldsImageRecords(data.first().header())) {
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
