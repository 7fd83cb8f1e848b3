#include "src/train_flags.h"

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/augment_spec.h"
#include "options/unsigned_flags.h"

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

constexpr char kRefusedHelp[] =
    "Options that would do nothing are refused (exit 2), not ignored:\n"
    "  --mode managed    refuses --io, --read-size, --queue-depth, --ring-slots, --copy-streams\n"
    "  --mode streaming  refuses --managed-prefetch, --managed-advise, --managed-oversubscribe\n"
    "  --device cpu      refuses --copy-streams, --precision, --cuda-graph\n"
    "(with --device auto on a machine without a GPU, the GPU options are ignored).\n"
    "  --optimizer sgd   refuses --beta1, --beta2, --eps\n"
    "  --optimizer adamw refuses --momentum\n"
    "--resume takes the seed, batch size, optimizer settings (--optimizer, --lr, --momentum,\n"
    "--weight-decay, --beta1, --beta2, --eps, --label-smoothing), the lr schedule (with its\n"
    "warmup and the steps it spans) and shuffle from the checkpoint.\n"
    "Schedules (s: the step, 0-based; T: steps per epoch x --epochs; W: warmup steps):\n"
    "  warmup    b * (s + 1) / W for s < W (not onecycle)\n"
    "  step      b, x0.1 from step floor(0.5 T), x0.01 from floor(0.75 T)\n"
    "  cosine    b * (1 + cos(pi (s - W) / (T - W))) / 2 after warmup\n"
    "  onecycle  linear from b/25 up to b over U = W (or 0.3 T) steps, then cosine down to\n"
    "            b/250000 at the end\n"
    "Data-parallel: mpirun -np N ringfeed train ... starts N ranks, one GPU each; every rank\n"
    "reads its own part of each epoch, the gradients are averaged (NCCL on GPUs, MPI on CPUs),\n"
    "and rank 0 prints and writes the one checkpoint. The learning rate is not scaled. A\n"
    "checkpoint resumes at any rank count: at another one, each sample its epoch had left is\n"
    "trained exactly once. With several ranks, --dump-order and --trace write PATH.rankR.\n"
    "--checkpoint, --metrics, --dump-order and --trace may not name a file of --data or --test.\n"
    "Exit status: 0 trained (or stopped by SIGINT/SIGTERM), 1 a data, file or run-time error,\n"
    "2 a usage error.\n";

// Options that would do nothing with `value` of `setting`: the first one given, as Usage.
Status RefuseGiven(const std::set<std::string>& given, std::initializer_list<const char*> options,
                   const std::string& setting, const char* why) {
  for (const char* o : options) {
    if (given.count(o) != 0) {
      return Status::Usage("--" + std::string(o) + " does nothing with " + setting + " (" + why +
                           "); leave it out");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<TrainFlags> ReadTrainFlags(const std::vector<std::string>& args) {
  TrainFlags f;
  TrainConfig& c = f.config;
  PipelineConfig& p = c.pipeline;
  f.mode = PipelineModeName(p.mode);
  f.device = DeviceKindName(p.device);
  f.precision = PrecisionName(c.precision);
  f.shuffle = ShuffleModeName(p.order.shuffle);
  f.io = IoModeName(p.streaming.io);
  f.read_size = ReadSizeText(p.streaming.read_bytes);
  f.conv = ConvWidthsText(c.conv);
  f.optimizer = c.optimizer.kind == OptimizerKind::kAdamW ? "adamw" : "sgd";
  f.lr_schedule = LrScheduleName(c.schedule.kind);
  f.augment = AugmentSpecText(c.augment);
  std::string cuda_graph = c.cuda_graph ? "on" : "off";
  bool no_verify = !p.verify;

  po::options_description opts("ringfeed train --data TRAIN.rfd [options]");
  // clang-format off
  opts.add_options()
    ("help,h", "show this help")
    ("config", po::value<std::string>(),
     "read options from this file too, one \"name = value\" per line (the command line wins)")
    ("data", po::value(&p.data), "training dataset")
    ("test", po::value(&c.test), "test dataset, evaluated after every epoch")
    ("device", po::value(&f.device)->default_value(f.device),
     "auto (the GPU where one is found, else the CPU), cuda or cpu")
    ("precision", po::value(&f.precision)->default_value(f.precision),
     "GPU math: bf16 (bf16 conv blocks on the tensor cores, float32 master weights and fully "
     "connected layers), tf32 (float32, TF32 tensor cores) or fp32 (full float32 products); not "
     "with --device cpu")
    ("cuda-graph", po::value(&cuda_graph)->default_value(cuda_graph),
     "on|off: replay each full batch's forward and backward pass as one CUDA graph; not with "
     "--device cpu")
    ("gpu", po::value(&c.gpu)->default_value(c.gpu),
     "the GPU to train on; -1: the rank's local rank (under mpirun) modulo the GPUs visible, so "
     "one process per GPU")
    ("rank-timeout", po::value(&c.rank_timeout)->default_value(c.rank_timeout),
     "under mpirun: end the job when no step has finished for this many seconds (a rank stuck "
     "in a collective); 0: never")
    ("epochs", po::value(&c.epochs)->default_value(c.epochs), "epochs to train (in all)")
    ("batch-size", po::value(&p.order.batch_size)->default_value(p.order.batch_size),
     "samples per step on each rank (under mpirun, a step trains ranks x this many)")
    ("optimizer", po::value(&f.optimizer)->default_value(f.optimizer),
     "sgd (with --momentum and --weight-decay, as torch.optim.SGD) or adamw (decoupled weight "
     "decay, as torch.optim.AdamW)")
    ("lr", po::value(&c.optimizer.lr)->default_value(c.optimizer.lr, Shortest(c.optimizer.lr)),
     "base learning rate (the schedule scales it each step)")
    ("lr-schedule", po::value(&f.lr_schedule)->default_value(f.lr_schedule),
     "constant, step (x0.1 at 50% and 75% of training), cosine (to 0 at the end) or onecycle "
     "(see below)")
    ("warmup-epochs", po::value(&c.schedule.warmup_epochs)
                          ->default_value(c.schedule.warmup_epochs,
                                          Shortest(c.schedule.warmup_epochs)),
     "linear warmup from lr/W to lr over this many epochs (fractions allowed; counted in W steps); "
     "with onecycle, the rise to the peak")
    ("label-smoothing", po::value(&c.optimizer.label_smoothing)
                            ->default_value(c.optimizer.label_smoothing,
                                            Shortest(c.optimizer.label_smoothing)),
     "E in [0, 1): train against (1 - E) * onehot + E / classes (the test loss stays plain)")
    ("beta1", po::value(&c.optimizer.beta1)->default_value(c.optimizer.beta1,
                                                            Shortest(c.optimizer.beta1)),
     "AdamW: decay of the first moment")
    ("beta2", po::value(&c.optimizer.beta2)->default_value(c.optimizer.beta2,
                                                            Shortest(c.optimizer.beta2)),
     "AdamW: decay of the second moment")
    ("eps", po::value(&c.optimizer.eps)->default_value(c.optimizer.eps, Shortest(c.optimizer.eps)),
     "AdamW: added to the denominator")
    ("momentum", po::value(&c.optimizer.momentum)->default_value(c.optimizer.momentum,
                                                           Shortest(c.optimizer.momentum)),
     "SGD momentum")
    ("weight-decay", po::value(&c.optimizer.weight_decay)->default_value(c.optimizer.weight_decay,
                                                                   Shortest(c.optimizer.weight_decay)),
     "weight decay: SGD adds weight_decay * w to the gradient; AdamW multiplies w by "
     "1 - lr * weight_decay each step")
    ("seed", po::value(&p.order.seed)->default_value(p.order.seed),
     "seeds the initial parameters and the epoch order")
    ("conv", po::value(&f.conv)->default_value(f.conv), "output channels of each conv block")
    ("augment", po::value(&f.augment)->default_value(f.augment),
     "augment the training split: a comma list of crop:P (random crop, P pixels of zero "
     "padding), flip (random horizontal flip), erase:P (random erasing, probability P), e.g. "
     "crop:4,flip; none: off. Each sample's transform depends on the seed, the epoch and its "
     "index only (a resumed run gives --augment again: the checkpoint does not hold it)")
    ("hidden", po::value(&c.hidden)->default_value(c.hidden), "width of the hidden layer")
    ("batch-norm", po::bool_switch(&c.batch_norm),
     "batch normalization after each convolution: the batch's statistics in training, running "
     "ones (kept in checkpoints) in evaluation; CPU backend only so far")
    ("checkpoint", po::value(&c.checkpoint),
     "write a checkpoint here at the end, on SIGINT/SIGTERM and every --checkpoint-every steps "
     "(its directory must be writable). An existing file here is replaced only by a run that "
     "resumes from it (--resume) or under --overwrite; a run that trains no step writes none")
    ("overwrite", po::bool_switch(&c.overwrite),
     "let --checkpoint replace an existing file that this run does not resume from")
    ("checkpoint-every", po::value(&c.checkpoint_every)->default_value(c.checkpoint_every),
     "steps between checkpoints (0: only at the end)")
    ("resume", po::value(&c.resume),
     "continue from this checkpoint (its optimizer settings, lr schedule, seed, batch size and "
     "shuffle win; --conv, --hidden and --batch-norm must match it)")
    ("max-steps", po::value(&c.max_steps)->default_value(c.max_steps),
     "stop after this many steps in all (0: no limit)")
    ("metrics", po::value(&c.metrics), "write one JSON object per epoch and one at the end")
    ("mode", po::value(&f.mode)->default_value(f.mode),
     "streaming: read chunks from disk as training goes, in fixed memory; managed: load the "
     "whole dataset into one CUDA managed allocation first (the baseline; GPU only)")
    ("managed-prefetch", po::value(&p.managed.prefetch_batches)
                             ->default_value(p.managed.prefetch_batches),
     "managed only: prefetch to the GPU the chunks of the batch this many ahead")
    ("managed-advise", po::bool_switch(&p.managed.advise),
     "managed only: advise read-mostly, preferred on the GPU")
    ("managed-oversubscribe", po::bool_switch(&p.managed.oversubscribe),
     "managed only: allow a dataset larger than the GPU's free memory (pages through it)")
    ("shuffle", po::value(&f.shuffle)->default_value(f.shuffle),
     "window: chunks in a seeded permutation, samples shuffled within windows of resident "
     "chunks; none: stored order")
    ("shuffle-window", po::value(&p.order.shuffle_window)->default_value(p.order.shuffle_window),
     "chunks resident together whose samples are shuffled together")
    ("drop-last", po::bool_switch(&p.order.drop_last), "skip each epoch's partial last batch")
    ("ring-slots", po::value(&p.streaming.ring_slots)->default_value(p.streaming.ring_slots),
     "streaming only: host ring slots (one chunk each) the reader fills ahead")
    ("copy-streams",
     po::value(&p.streaming.copy_streams)->default_value(p.streaming.copy_streams),
     "streaming on a GPU only: host-to-device copy streams")
    ("queue-depth", po::value(&p.streaming.queue_depth)->default_value(p.streaming.queue_depth),
     "streaming only: reads in flight")
    ("read-size", po::value(&f.read_size)->default_value(f.read_size),
     "streaming only: largest single read (a multiple of 4 KiB up to 1 GiB)")
    ("io", po::value(&f.io)->default_value(f.io),
     "streaming only: direct (O_DIRECT io_uring), buffered, pread")
    ("no-verify", po::bool_switch(&no_verify), "skip the per-chunk checksum")
    ("trace", po::value(&c.trace),
     "write a Chrome trace (chrome://tracing, ui.perfetto.dev) of the read, verify, copy and "
     "compute spans")
    ("dump-order", po::value(&c.dump_order),
     "write the sample indices each epoch visits, one per line, after a \"# epoch N\" line");
  // clang-format on
  po::variables_map vm;
  try {
    const po::parsed_options given = po::command_line_parser(args).options(opts).run();
    if (auto negative = NegativeUnsignedFlag(given, opts)) return Status::Usage(*negative);
    po::store(given, vm);
    // Options from a file come second: the command line wins where both set one.
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream file(path);
      if (!file) {
        return Status::Usage("cannot read --config " + path + ": " + std::strerror(errno));
      }
      const po::parsed_options from_file = po::parse_config_file(file, opts);
      if (auto negative = NegativeUnsignedFlag(from_file, opts)) {
        return Status::Usage(*negative + " (in --config " + path + ")");
      }
      po::store(from_file, vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return Status::Usage(std::string(e.what()) + " (see --help)");
  }
  if (vm.count("help")) {
    std::ostringstream help;
    help << opts << "\n" << kRefusedHelp;
    f.help = true;
    f.help_text = help.str();
    return f;
  }
  if (cuda_graph != "on" && cuda_graph != "off") {
    return Status::Usage("--cuda-graph must be on or off, got \"" + cuda_graph + "\"");
  }
  c.cuda_graph = cuda_graph == "on";
  p.verify = !no_verify;
  for (const auto& [name, value] : vm) {
    if (!value.defaulted()) f.given.insert(name);
  }
  return f;
}

Result<TrainConfig> TrainConfigFromFlags(const TrainFlags& f) {
  TrainConfig c = f.config;
  PipelineConfig& p = c.pipeline;
  RF_ASSIGN_OR_RETURN(p.device, ParseDeviceKind(f.device));
  RF_ASSIGN_OR_RETURN(c.precision, ParsePrecision(f.precision));
  RF_ASSIGN_OR_RETURN(p.mode, ParsePipelineMode(f.mode));
  RF_ASSIGN_OR_RETURN(p.order.shuffle, ParseShuffleMode(f.shuffle));
  Result<IoMode> io = ParseIoMode(f.io);
  if (!io.ok()) return Status::Usage("--io: " + io.status().message());
  p.streaming.io = *io;
  RF_ASSIGN_OR_RETURN(p.streaming.read_bytes, ParseReadSize(f.read_size));
  RF_ASSIGN_OR_RETURN(c.conv, ParseConvWidths(f.conv));
  RF_ASSIGN_OR_RETURN(c.schedule.kind, ParseLrSchedule(f.lr_schedule));
  if (f.optimizer == "adamw") {
    c.optimizer.kind = OptimizerKind::kAdamW;
    RF_RETURN_IF_ERROR(RefuseGiven(f.given, {"momentum"}, "--optimizer adamw", "SGD only"));
  } else if (f.optimizer == "sgd") {
    c.optimizer.kind = OptimizerKind::kSgd;
    RF_RETURN_IF_ERROR(
        RefuseGiven(f.given, {"beta1", "beta2", "eps"}, "--optimizer sgd", "AdamW only"));
  } else {
    return Status::Usage("--optimizer must be sgd or adamw, got \"" + f.optimizer + "\"");
  }
  RF_ASSIGN_OR_RETURN(c.augment, ParseAugmentSpec(f.augment));

  if (p.mode == PipelineMode::kManaged) {
    RF_RETURN_IF_ERROR(RefuseGiven(f.given,
                                   {"io", "read-size", "queue-depth", "ring-slots", "copy-streams"},
                                   "--mode managed", "it sets the streaming reader and ring"));
  } else {
    RF_RETURN_IF_ERROR(RefuseGiven(f.given,
                                   {"managed-prefetch", "managed-advise", "managed-oversubscribe"},
                                   "--mode streaming", "managed mode only"));
  }
  if (p.device == DeviceKind::kCpu) {
    RF_RETURN_IF_ERROR(RefuseGiven(f.given, {"copy-streams", "precision", "cuda-graph", "gpu"},
                                   "--device cpu", "GPU only"));
  }
  RF_RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace rf
