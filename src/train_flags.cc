#include "src/train_flags.h"

#include "options/command_line.h"
#include "src/train_options.h"

namespace rf {
namespace {

constexpr char kUsage[] =
    "usage: ringfeed train DATA [options]   (or --data DATA)\n"
    "\n"
    "Options (each also as \"name = value\" in a --config file):\n";

constexpr char kMoreHelp[] =
    "\n"
    "An option that would do nothing where it is given (\"only with ...\" above) is refused\n"
    "(exit 2), not ignored; with --device auto on a machine without a GPU the GPU options are\n"
    "ignored.\n"
    "--resume continues the checkpoint's run: its seed, batch size, shuffle, optimizer settings\n"
    "(--optimizer, --lr, --momentum, --weight-decay, --beta1, --beta2, --eps, --label-smoothing),\n"
    "lr schedule (with its warmup and the steps it spans), augmentation and, for JPEG records,\n"
    "--image-size win over the flags, and each flag given that the checkpoint overrides is\n"
    "named with the value that wins.\n"
    "--metrics and --dump-order are written as the run goes (a killed run keeps its lines); a\n"
    "resumed run appends to them after a line saying where it resumed.\n"
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

}  // namespace

Result<TrainFlags> ReadTrainFlags(const std::vector<std::string>& args) {
  const OptionTable<TrainConfig>& table = TrainOptionTable();
  const std::vector<OptionSpec> specs = table.Specs(kTrainCommand);
  RF_ASSIGN_OR_RETURN(const ParsedOptions parsed, ParseCommandLine(specs, args));
  TrainFlags f;
  if (parsed.help) {
    f.help = true;
    f.help_text = kUsage + FormatOptionsHelp(specs) + kMoreHelp;
    return f;
  }
  for (const auto& [name, value] : parsed.values) {
    RF_RETURN_IF_ERROR(
        table.Set(&f.config, *table.FindByName(name), value, OptionFace::kCommandLine));
  }
  f.given = parsed.given;
  return f;
}

Result<TrainConfig> TrainConfigFromFlags(const TrainFlags& f) {
  RF_RETURN_IF_ERROR(TrainOptionTable().RefuseIdle(f.config, f.given, OptionFace::kCommandLine));
  TrainConfig c = f.config;
  // --partition node without --node-ranks: the launcher's ranks on this machine (the world
  // itself is known later: Train checks that they divide it).
  c.pipeline.ResolveLocalRanks(LauncherLocalRanks());
  RF_RETURN_IF_ERROR(c.Validate());
  return c;
}

std::vector<std::string> ResumeOverrides(const TrainConfig& asked, const TrainConfig& resumed,
                                         const std::set<std::string>& given) {
  constexpr OptionFace kFace = OptionFace::kCommandLine;
  const OptionTable<TrainConfig>& table = TrainOptionTable();
  std::vector<std::string> lines;
  for (const auto& e : table.entries()) {
    if (given.count(e.spec.name) == 0) continue;
    const OptionValue was = e.get(asked), is = e.get(resumed);
    const std::string head = OptionSettingText(e.spec, was, kFace) + " given, but --resume " +
                             resumed.resume + " continues its run with ";
    // The flags passed RefuseIdle, so an option idle now is idle by the checkpoint's doing
    // (--momentum given, the checkpoint's run AdamW): the value it holds would mislead.
    if (const auto* other = table.IdleBecause(resumed, e); other != nullptr) {
      lines.push_back(head + OptionSettingText(other->spec, other->get(resumed), kFace) +
                      ", where " + OptionName(e.spec, kFace) +
                      " does nothing (the checkpoint's wins)");
    } else if (was != is) {
      lines.push_back(head + OptionSettingText(e.spec, is, kFace) + " (the checkpoint's wins)");
    }
  }
  return lines;
}

}  // namespace rf
