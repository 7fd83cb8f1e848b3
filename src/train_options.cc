#include "src/train_options.h"

#include <cfloat>
#include <charconv>
#include <string>

#include "core/augment_spec.h"
#include "pipeline/images/image_options.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sources/pipeline_config.h"

namespace rf {
namespace {

static_assert(kMaxEpoch == kMaxCheckpointEpoch, "the loader's epochs are the checkpoint's");

// Settings of the GPU: on the CPU they do nothing.
constexpr char kGpuOnly[] = "GPU only";
// More than the model's layers can use (a bucket per layer at most); the bound of the flag.
constexpr uint32_t kMaxReduceBuckets = 1024;

OptionTable<TrainConfig> MakeTable() {
  OptionTable<TrainConfig> t;
  t.Include(
      PipelineOptionTable(), kTrainCommand, [](auto& c) -> auto& { return c.pipeline; });
  t.Include(
      ImageOptionTable(), kTrainCommand, [](auto& c) -> auto& { return c.image; });
  t.Custom(
       OptionSpec::Of("config", OptionType::kText).For(kTrainCommand),
       [](TrainConfig&, const OptionValue&) { return Status::Ok(); },  // read by the parser
       [](const TrainConfig&) { return OptionValue(std::string()); })
      .Metavar("FILE")
      .Help(
          "more options from this file, one \"name = value\" a line (the command line's names; "
          "# comments); the command line wins");
  t.Field(
       "test", OptionType::kText, [](auto& c) -> auto& { return c.test; })
      .Metavar("FILE")
      .For(kTrainCommand)
      .Help("a test dataset, evaluated after every epoch (streamed, in stored order)");
  t.Field(
       "epochs", OptionType::kCount, [](auto& c) -> auto& { return c.epochs; })
      .Range(1, kMaxCheckpointEpoch)
      .For(kTrainCommand)
      .Help("epochs to train, in all (a resumed run counts the ones before it)");
  t.Word("precision", [](auto& c) -> auto& { return c.precision; },
         {{PrecisionName(Precision::kBf16), Precision::kBf16},
          {PrecisionName(Precision::kTf32), Precision::kTf32},
          {PrecisionName(Precision::kFp32), Precision::kFp32}})
      .For(kTrainCommand)
      .OnlyWith("device", {"auto", "cuda"}, kGpuOnly)
      .Help(
          "GPU math: bf16 (bf16 conv blocks on the tensor cores, float32 master weights and "
          "fully connected layers), tf32 (float32, TF32 tensor cores) or fp32 (full float32 "
          "products)");
  t.Field(
       "cuda-graph", OptionType::kOnOff, [](auto& c) -> auto& { return c.cuda_graph; })
      .For(kTrainCommand)
      .OnlyWith("device", {"auto", "cuda"}, kGpuOnly)
      .Help("replay each full batch's forward and backward pass as one CUDA graph");
  t.Custom(
       OptionSpec::Of("reduce-buckets", OptionType::kText).For(kTrainCommand),
       [](TrainConfig& c, const OptionValue& v) -> Status {
         const std::string& text = std::get<std::string>(v);
         if (text == "auto") {
           c.reduce_buckets = 0;
           return Status::Ok();
         }
         uint32_t n = 0;
         const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
         if (ec != std::errc() || end != text.data() + text.size() || n < 1 ||
             n > kMaxReduceBuckets) {
           return Status::Usage("--reduce-buckets must be auto or a whole number from 1 to " +
                                std::to_string(kMaxReduceBuckets) + ", got '" + text + "'");
         }
         c.reduce_buckets = n;
         return Status::Ok();
       },
       [](const TrainConfig& c) {
         return OptionValue(c.reduce_buckets == 0 ? std::string("auto")
                                                  : std::to_string(c.reduce_buckets));
       })
      .Metavar("N|auto")
      .OnlyWith("device", {"auto", "cuda"}, kGpuOnly)
      .Help(
          "several ranks on GPUs: reduce the gradient in at most N buckets, each as soon as the "
          "backward pass has written it, overlapping the rest (1: one reduction after it; auto: "
          "a bucket per layer, one under 64 KiB joined to the next but the last)");
  t.Field(
       "gpu", OptionType::kInteger, [](auto& c) -> auto& { return c.gpu; })
      .Range(-1, 1023)
      .For(kTrainCommand)
      .OnlyWith("device", {"auto", "cuda"}, kGpuOnly)
      .Help(
          "the GPU to train on; -1: the rank's local rank (under mpirun) modulo the GPUs "
          "visible, so one process a GPU");
  t.Field(
       "rank-timeout", OptionType::kNumber, [](auto& c) -> auto& { return c.rank_timeout; })
      .RangeReal(0, 1e7)
      .For(kTrainCommand)
      .Help(
          "under mpirun: end the job when no step has finished for this many seconds (a rank "
          "stuck in a collective); 0: never");
  t.Word("optimizer", [](auto& c) -> auto& { return c.optimizer.kind; },
         {{"sgd", OptimizerKind::kSgd}, {"adamw", OptimizerKind::kAdamW}})
      .For(kTrainCommand)
      .Help(
          "sgd (with --momentum and --weight-decay, as torch.optim.SGD) or adamw (decoupled "
          "weight decay, as torch.optim.AdamW)");
  t.Field(
       "lr", OptionType::kNumber, [](auto& c) -> auto& { return c.optimizer.lr; })
      .RangeReal(0, FLT_MAX)
      .For(kTrainCommand)
      .Help("the base learning rate (the schedule scales it each step)");
  // Momentum above 1 makes SGD's velocity grow without bound for any steady gradient (PyTorch
  // takes it; no run trains with it): [0, 1] keeps every value a run can use.
  t.Field(
       "momentum", OptionType::kNumber, [](auto& c) -> auto& { return c.optimizer.momentum; })
      .RangeReal(0, 1)
      .For(kTrainCommand)
      .OnlyWith("optimizer", {"sgd"}, "SGD only")
      .Help("SGD's momentum");
  t.Field(
       "weight-decay", OptionType::kNumber,
       [](auto& c) -> auto& { return c.optimizer.weight_decay; })
      .RangeReal(0, 1)
      .For(kTrainCommand)
      .Help(
          "SGD adds weight_decay * w to the gradient; AdamW multiplies w by 1 - lr * "
          "weight_decay each step");
  t.Field(
       "beta1", OptionType::kNumber, [](auto& c) -> auto& { return c.optimizer.beta1; })
      .RangeReal(0, 1, false, /*max_open=*/true)
      .For(kTrainCommand)
      .OnlyWith("optimizer", {"adamw"}, "AdamW only")
      .Help("AdamW: the first moment's decay");
  t.Field(
       "beta2", OptionType::kNumber, [](auto& c) -> auto& { return c.optimizer.beta2; })
      .RangeReal(0, 1, false, /*max_open=*/true)
      .For(kTrainCommand)
      .OnlyWith("optimizer", {"adamw"}, "AdamW only")
      .Help("AdamW: the second moment's decay");
  t.Field(
       "eps", OptionType::kNumber, [](auto& c) -> auto& { return c.optimizer.eps; })
      .RangeReal(0, 1, /*min_open=*/true)
      .For(kTrainCommand)
      .OnlyWith("optimizer", {"adamw"}, "AdamW only")
      .Help("AdamW: added to the denominator");
  t.Field(
       "label-smoothing", OptionType::kNumber,
       [](auto& c) -> auto& { return c.optimizer.label_smoothing; })
      .RangeReal(0, 1, false, /*max_open=*/true)
      .For(kTrainCommand)
      .Help("E: train against (1 - E) * onehot + E / classes (the test loss stays plain)");
  t.Word("lr-schedule", [](auto& c) -> auto& { return c.schedule.kind; },
         {{LrScheduleName(LrScheduleKind::kConstant), LrScheduleKind::kConstant},
          {LrScheduleName(LrScheduleKind::kStep), LrScheduleKind::kStep},
          {LrScheduleName(LrScheduleKind::kCosine), LrScheduleKind::kCosine},
          {LrScheduleName(LrScheduleKind::kOneCycle), LrScheduleKind::kOneCycle}})
      .For(kTrainCommand)
      .Help(
          "constant, step (x0.1 at 50% and 75% of training), cosine (to 0 at the end) or "
          "onecycle (see below)");
  // Bounded as --epochs is: a warmup past the run's end warms it up throughout.
  t.Field(
       "warmup-epochs", OptionType::kNumber,
       [](auto& c) -> auto& { return c.schedule.warmup_epochs; })
      .RangeReal(0, static_cast<double>(kMaxCheckpointEpoch))
      .For(kTrainCommand)
      .Help(
          "linear warmup from lr/W to lr over W epochs (fractions allowed; counted in steps, "
          "rounded up); with onecycle, the length of its rise");
  t.Custom(
       OptionSpec::Of("conv", OptionType::kText).For(kTrainCommand),
       [](TrainConfig& c, const OptionValue& v) -> Status {
         RF_ASSIGN_OR_RETURN(c.conv, ParseConvWidths(std::get<std::string>(v)));
         return Status::Ok();
       },
       [](const TrainConfig& c) { return OptionValue(ConvWidthsText(c.conv)); })
      .Metavar("C1,C2,...")
      .Help("output channels of each conv block (3x3 convolution, bias, ReLU, 2x2 max-pool)");
  t.Field(
       "hidden", OptionType::kCount, [](auto& c) -> auto& { return c.hidden; })
      .Range(1, 65536)
      .For(kTrainCommand)
      .Help("the hidden fully connected layer's width");
  t.Field(
       "batch-norm", OptionType::kSwitch, [](auto& c) -> auto& { return c.batch_norm; })
      .For(kTrainCommand)
      .Help(
          "batch normalization after each convolution, on the CPU and the GPU: the batch's "
          "statistics in training, the running ones (kept in checkpoints) in evaluation");
  t.Custom(
      AugmentOptionSpec(),
      [](TrainConfig& c, const OptionValue& v) -> Status {
        RF_ASSIGN_OR_RETURN(c.augment, ParseAugmentSpec(std::get<std::string>(v)));
        return Status::Ok();
      },
      [](const TrainConfig& c) { return OptionValue(AugmentSpecText(c.augment)); });
  t.Field(
       "checkpoint", OptionType::kText, [](auto& c) -> auto& { return c.checkpoint; })
      .Metavar("FILE")
      .For(kTrainCommand)
      .Help(
          "write a checkpoint here at the end, on SIGINT/SIGTERM and every --checkpoint-every "
          "steps (its directory must take files). An existing file is replaced only by a run "
          "that resumes from it or under --overwrite; a run that trains no step writes none");
  t.Field(
       "overwrite", OptionType::kSwitch, [](auto& c) -> auto& { return c.overwrite; })
      .For(kTrainCommand)
      .Help(
          "let --checkpoint replace an existing file this run does not resume from, and a run "
          "started afresh replace an earlier run's --metrics and --dump-order");
  t.Field(
       "checkpoint-every", OptionType::kCount, [](auto& c) -> auto& { return c.checkpoint_every; })
      .For(kTrainCommand)
      .Help("steps between checkpoints (0: only at the end)");
  t.Field(
       "resume", OptionType::kText, [](auto& c) -> auto& { return c.resume; })
      .Metavar("FILE")
      .For(kTrainCommand)
      .Help(
          "continue from this checkpoint: its seed, batch size, shuffle, optimizer settings, lr "
          "schedule, augmentation and (JPEG records) --image-size win over the flags (each flag "
          "it overrides is named); --conv, --hidden and --batch-norm must match it");
  t.Field(
       "max-steps", OptionType::kCount, [](auto& c) -> auto& { return c.max_steps; })
      .For(kTrainCommand)
      .Help("stop after this many steps in all (0: no limit)");
  t.Field(
       "metrics", OptionType::kText, [](auto& c) -> auto& { return c.metrics; })
      .Metavar("FILE")
      .For(kTrainCommand)
      .Help(
          "JSON lines, each written as it happens: one at the start, one per epoch, one at the "
          "end; a resumed run appends after a \"resume\" line, a fresh one refuses an existing "
          "file but under --overwrite");
  t.Field(
       "trace", OptionType::kText, [](auto& c) -> auto& { return c.trace; })
      .Metavar("FILE")
      .For(kTrainCommand)
      .Help(
          "a Chrome trace (chrome://tracing, ui.perfetto.dev) of the read, verify, copy and "
          "compute spans");
  t.Field(
       "dump-order", OptionType::kText, [](auto& c) -> auto& { return c.dump_order; })
      .Metavar("FILE")
      .For(kTrainCommand)
      .Help(
          "the sample indices each epoch visits, one a line after a \"# epoch N\" line, each "
          "batch's as it is trained; appended to as --metrics is");
  return t;
}

}  // namespace

const OptionTable<TrainConfig>& TrainOptionTable() {
  static const OptionTable<TrainConfig> table = MakeTable();
  return table;
}

}  // namespace rf
