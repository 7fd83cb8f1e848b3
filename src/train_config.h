// TrainConfig: everything one `ringfeed train` run is asked to do, typed and validated. The
// command line (and --config file) is read into one once (src/train_flags.h); a resumed
// checkpoint adjusts it in one place (ApplyCheckpoint); the run's set-up (src/train_command.cc),
// its engine (src/train_engine.h) and its loop (src/trainer.h) read it, so the batch size, the
// order and the I/O settings each exist once.
//
// The pipeline-facing part (dataset, mode, I/O, device, and the order: batch size, shuffle, seed,
// drop_last, ranks, a resumed epoch) is a PipelineConfig (pipeline/sources/pipeline_config.h),
// which a library's loader shares without src/; the rest (test split, model, optimizer, epochs,
// checkpoints, output files) is the trainer's.
//
// Errors are Status::Usage (exit 2) for what the command line asks, naming the flag.
//
// Thread safety: plain values and functions of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/augment.h"
#include "core/status.h"
#include "model/checkpoint.h"
#include "model/lr_schedule.h"
#include "model/model.h"
#include "pipeline/loader.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/pipeline_config.h"

namespace rf {

// GPU math. kBf16: the conv blocks' activations and filters in bfloat16 on the tensor cores,
// float32 elsewhere (kernels/cuda_backend.h); kTf32: float32 with TF32 tensor-core products;
// kFp32: full float32.
enum class Precision { kBf16, kTf32, kFp32 };

// "bf16", "tf32", "fp32"; anything else is a Usage error naming --precision.
inline Result<Precision> ParsePrecision(const std::string& s) {
  if (s == "bf16") return Precision::kBf16;
  if (s == "tf32") return Precision::kTf32;
  if (s == "fp32") return Precision::kFp32;
  return Status::Usage("--precision must be bf16, tf32 or fp32, got \"" + s + "\"");
}
inline const char* PrecisionName(Precision p) {
  return p == Precision::kFp32 ? "fp32" : p == Precision::kTf32 ? "tf32" : "bf16";
}

struct TrainConfig {
  PipelineConfig pipeline;
  std::string test;  // the test split, evaluated after every epoch; empty: none
  // The model: the input shape and classes come from the dataset.
  std::vector<uint32_t> conv = ModelConfig{}.conv;  // output channels of each conv block
  uint32_t hidden = ModelConfig{}.hidden;
  bool batch_norm = false;    // --batch-norm: after each convolution (model/model.h)
  OptimizerConfig optimizer;  // lr: the base learning rate the schedule scales
  LrScheduleConfig schedule;
  // The steps the schedule spans: from a resumed checkpoint, else {0, 0} until the run's set-up
  // computes it from the training data (ScheduleSpanFor).
  LrScheduleSpan schedule_span;
  uint64_t epochs = 1;                     // >= 1
  Precision precision = Precision::kBf16;  // CUDA only
  bool cuda_graph = true;  // CUDA: replay each full batch's forward + backward as a CUDA graph
  // CUDA, several ranks: the gradient's reduce buckets (CudaBackendOptions::reduce_buckets:
  // 1 one reduction after the backward pass, N at most N overlapping it, 0 auto).
  uint32_t reduce_buckets = 0;
  // Data augmentation of the training split (--augment; core/augment_spec.h), keyed by the seed:
  // never the test split's. Recorded in checkpoints (from version 3), whose augmentation a resumed
  // run takes.
  AugmentParams augment;
  // Datasets of image records: decoded to images of image.size (--image-size, default 224:
  // the CNN trains at that size), the training split with random resized crops and flips, the
  // test split with centre crops (pipeline/images/image_stage.h).
  ImageOptions image;
  // Files. Inputs: resume. Outputs: the others (none of them may be an input: CheckTrainOutputs).
  std::string checkpoint, resume, metrics, dump_order, trace;
  uint64_t checkpoint_every = 0;  // steps; 0: at the end only
  // --checkpoint may replace an existing file the run does not resume from (CheckCheckpointTarget).
  bool overwrite = false;
  uint64_t max_steps = 0;  // 0: no limit
  // Data-parallel (the ranks come from mpirun: parallel/world.h; pipeline.order.rank and
  // world_size are set from the World, not from flags).
  int gpu = -1;               // this rank's GPU; -1: its local rank modulo the GPUs visible
  double rank_timeout = 600;  // seconds without a finished step before the job ends; 0: never

  // Usage errors: PipelineConfig::Validate's, an option outside its declared bounds
  // (src/train_options.h: epochs, widths, optimizer settings, each naming its flag), no conv block.
  Status Validate() const;
};

// "32,64,128" <-> {32, 64, 128}. Usage naming --conv for anything but positive counts.
Result<std::vector<uint32_t>> ParseConvWidths(const std::string& s);
std::string ConvWidthsText(const std::vector<uint32_t>& widths);

// A resumed run continues its checkpoint's order and optimizer exactly: the checkpoint's seed,
// batch size (per rank), optimizer (kind, lr, momentum, weight decay, betas, eps, label
// smoothing), lr schedule with its warmup and span, augmentation (files before version 3: SGD,
// constant, span not recorded, the config's augmentation) and shuffle (mode and window; files from
// before the window was recorded keep the config's) replace the config's; drop_last and the ranks
// stay the config's. Corruption naming config->resume for a checkpoint whose batch size is 0.
//
// Decoded images (`decoded_images`: the training data holds image records): the checkpoint's
// model input, 3 x S x S, is the --image-size S its run decoded at (src/train_command.cc's model
// is 3 x --image-size x --image-size for such data; the file has no field of its own for it), and
// S replaces the config's, so a resumed run decodes the same crops at the same size. The other
// image settings are not recorded and stay the config's: the crops themselves (training: random
// resized crop and flip; --test: the centre crop) are no flags, and what the flags change does
// not change a decoded sample's crop: --skip-bad-records and --max-image-side decide what becomes
// of a record that does not decode (given after a run stopped on one, they are how it goes on),
// --image-decoder and --image-cpu-share only the decoder's rounding of the same crop (nvJPEG's
// pixels within a few levels of libjpeg-turbo's), --image-threads nothing.
//
// Where the run has config->pipeline.order.world_size ranks:
//   the checkpoint's world size   the interrupted epoch continues at the checkpoint's position
//                                 (*position = c.next_sample): the same samples in the same
//                                 order as the uninterrupted run;
//   another world size            the samples the checkpoint's ranks had not trained in that
//                                 epoch are shared by this run's ranks, each exactly once
//                                 (pipeline/order/window_order.h's stretches); *position = 0.
// A mixture's checkpoint (--weights) continues the mixture's epoch so, and each dataset's own
// epoch by the same rule (config->pipeline.mixture: pipeline/sources/mixture.h's ContinueMixture);
// the datasets and weights are the caller's to compare with the run's.
Status ApplyCheckpoint(const Checkpoint& c, TrainConfig* config, uint64_t* position,
                       bool decoded_images = false);

// The loaders the engine opens (src/train_engine.h), from the config. The training split's: the
// config's pipeline at the raw level (output_buffers 0: the backends decode the stored samples
// themselves), its read plan covering c.epochs epochs. Its batch size is the backend's largest
// batch.
LoaderOptions TrainLoaderOptions(const TrainConfig& c);
// The test split's (c.test): stored order, every sample, one rank, streamed whatever the training
// mode, the training split's reader settings and batch size, one pass per evaluation.
LoaderOptions TestLoaderOptions(const TrainConfig& c);
// Either split's loader options for a dataset of image records: decoded to c.image.size in
// uint8 NCHW (the backends normalize, DecodedImageStatistics), with `crop` (the training split's
// random resized crops, the test split's centre crops) and 4 batches decoded ahead of training.
LoaderOptions DecodedImageOptions(LoaderOptions o, const TrainConfig& c, ImageCrop crop);
// The statistics the model normalizes decoded images with: ImageNet's, in pixel units
// (decode/jpeg_image.h's ImageDecodeSpec defaults).
Normalization DecodedImageStatistics();

// The steps the schedule spans for a run of `c` on a dataset whose ordinary epoch gives each rank
// `epoch_samples` samples: c.schedule_span where recorded, else {ceil(EpochSamples(...) /
// batch size), c.epochs}.
LrScheduleSpan ScheduleSpanFor(const TrainConfig& c, uint64_t epoch_samples);

// The run's outputs (--checkpoint, --metrics, --dump-order, --trace) against each other and its
// inputs (io/file.h's CheckOutputPaths, by any name): Usage naming both when two outputs are one
// file, when an output may not go where it points (a directory), or when an output is a shard
// of --data (`data_shards`) or --test (`test_shards`), or, for all but --checkpoint, --resume (a
// checkpoint replacing the one it resumed from is how runs continue).
Status CheckTrainOutputs(const TrainConfig& c, const std::vector<std::string>& data_shards,
                         const std::vector<std::string>& test_shards);

// --checkpoint against what is there already: a run replaces an existing checkpoint (or any other
// regular file) only when it resumes from that file (--resume, by any name) or under --overwrite,
// so a run started afresh never replaces a better checkpoint unasked. Usage naming the file, and
// the steps it holds where it is a checkpoint. A device or FIFO (written in place), or no file,
// passes.
Status CheckCheckpointTarget(const TrainConfig& c);

// --metrics and --dump-order against what is there already. They are written in place as the run
// goes (io/line_output.h): a resumed run (--resume) appends to an existing file after a line
// saying where it resumed, so an earlier run's lines stay; a run started afresh truncates, which
// only --overwrite allows for a file that holds anything (an empty one, as mktemp makes, holds
// nothing to lose). Usage naming the flag, the file and its size, and the ways on. A device, a
// FIFO or no file passes. `metrics`: whether this rank writes --metrics (rank 0 alone does).
Status CheckRunLogTargets(const TrainConfig& c, bool metrics);

}  // namespace rf
