#include "src/train_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "io/file.h"
#include "pipeline/images/image_options.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/mixture.h"
#include "src/command_checks.h"
#include "src/train_options.h"

namespace rf {

Status TrainConfig::Validate() const {
  RF_RETURN_IF_ERROR(pipeline.Validate());
  // Every option's declared bounds (src/train_options.h), for a config made or resumed in C++ too.
  RF_RETURN_IF_ERROR(TrainOptionTable().Check(*this, kTrainCommand, OptionFace::kCommandLine));
  // A mixture's flags agree with each other (--data a,b --weights 0.7,0.3).
  RF_RETURN_IF_ERROR(pipeline.DataPaths().status());
  if (!pipeline.weights.empty()) {
    const Result<std::vector<double>> w =
        NormalizeWeights(pipeline.weights, pipeline.weights.size());
    if (!w.ok()) return Status::Usage("--" + w.status().message());  // "--weights: ..."
  }
  if (conv.empty()) return Status::Usage("--conv is empty");
  for (uint32_t w : conv) {
    if (w == 0) return Status::Usage("--conv wants positive channel counts, got 0");
  }
  return Status::Ok();
}

Result<std::vector<uint32_t>> ParseConvWidths(const std::string& s) {
  std::vector<uint32_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0 || v > 65536) {
      return Status::Usage("--conv wants comma-separated channel counts, got \"" + s + "\"");
    }
    out.push_back(static_cast<uint32_t>(v));
  }
  if (out.empty()) return Status::Usage("--conv is empty");
  return out;
}

std::string ConvWidthsText(const std::vector<uint32_t>& widths) {
  std::string s;
  for (uint32_t w : widths) {
    if (!s.empty()) s += ',';
    s += std::to_string(w);
  }
  return s;
}

Status ApplyCheckpoint(const Checkpoint& c, TrainConfig* config, uint64_t* position,
                       bool decoded_images) {
  if (c.order.batch_size == 0) {
    return Status::Corruption(config->resume, "checkpoint has batch size 0");
  }
  // A model of another input than decoded images' (3 x S x S) keeps the flag's: the model check
  // refuses it.
  const ModelConfig& m = c.config;
  if (decoded_images && m.channels == 3 && m.height == m.width && m.height >= 1 &&
      m.height <= kMaxImageSize) {
    config->image.size = m.height;
  }
  config->optimizer = c.optimizer;
  config->schedule = c.schedule;
  config->schedule_span = c.schedule_span;
  if (c.augment) config->augment = *c.augment;  // files before version 3 keep --augment's
  // What the checkpoint records of its order; drop_last and this run's ranks stay the config's.
  OrderSettings& order = config->pipeline.order;
  order.seed = c.order.seed;
  order.batch_size = c.order.batch_size;
  if (c.shuffle_recorded) {
    order.shuffle = c.order.shuffle;
    order.shuffle_window = c.order.shuffle_window;
  }
  // The checkpoint's ranks and machines against this run's (its own, as the world is).
  const RankLayout saved{c.order.world_size, c.order.node_ranks},
      now{order.world_size, order.node_ranks};
  ResumePoint at = ResumeAt(c.epoch, c.order.resumed.stretches, saved, c.next_sample, now);
  // A mixture's datasets continue their own epochs by the same rule (pipeline/sources/mixture.h).
  config->pipeline.mixture =
      c.datasets.empty() ? MixtureState{} : ContinueMixture(c.mixture, saved, now);
  order.resumed = std::move(at.resumed);
  *position = at.position;
  return Status::Ok();
}

LrScheduleSpan ScheduleSpanFor(const TrainConfig& c, uint64_t epoch_samples) {
  if (c.schedule_span.steps_per_epoch != 0 && c.schedule_span.epochs != 0) return c.schedule_span;
  const OrderSettings& order = c.pipeline.order;
  const uint64_t batch = std::max<uint32_t>(order.batch_size, 1);
  const uint64_t samples = EpochSamples(epoch_samples, order.batch_size, order.drop_last);
  return LrScheduleSpan{std::max<uint64_t>((samples + batch - 1) / batch, 1), c.epochs};
}

LoaderOptions TrainLoaderOptions(const TrainConfig& c) {
  LoaderOptions o;
  o.pipeline = c.pipeline;
  o.epochs = c.epochs;
  o.output_buffers = 0;  // the backends decode the stored samples themselves
  return o;
}

LoaderOptions TestLoaderOptions(const TrainConfig& c) {
  LoaderOptions o;
  o.pipeline = c.pipeline;
  PipelineConfig& p = o.pipeline;
  p.data = c.test;
  p.weights = {};  // one dataset, whatever the training split mixes
  p.mixture = {};
  // Streamed in any training mode (managed mode is the training baseline, not a way to read a
  // test split). Rank 0 alone evaluates, so one rank and every sample: a fresh order of the
  // training split's batch size, in stored order. Stored order needs no shuffle window; the window
  // sets the staging (three windows of chunks, pipeline/sources/streaming_source.h): 64 chunks of 4
  // MiB took 776 MiB more GPU memory on an H200, 4 take about 50 MiB, and stored order reads on
  // from chunk to chunk either way.
  p.mode = PipelineMode::kStreaming;
  p.order = OrderSettings{};
  p.order.batch_size = c.pipeline.order.batch_size;
  p.order.seed = c.pipeline.order.seed;
  p.order.shuffle = ShuffleMode::kNone;
  p.order.shuffle_window = std::min(c.pipeline.order.shuffle_window, 4u);
  p.managed = PipelineConfig{}.managed;
  // One pass per evaluation, one evaluation per epoch trained: at most c.epochs in a run (a
  // resumed one makes fewer). The plan ends there, so the reader does not read the test split
  // ahead past the last evaluation (a remote dataset's bytes fetched for nothing).
  o.epochs = c.epochs;
  o.output_buffers = 0;
  return o;
}

LoaderOptions DecodedImageOptions(LoaderOptions o, const TrainConfig& c, ImageCrop crop) {
  o.image = c.image;
  o.image.crop = crop;
  o.output.dtype = DType::kUInt8;  // the pixels: the backend's decode normalizes them
  o.output.normalize = false;
  o.output.layout = SampleLayout::kNCHW;
  o.output_buffers = 4;
  return o;
}

Normalization DecodedImageStatistics() {
  const ImageDecodeSpec spec;
  Normalization n;
  n.mean.assign(spec.mean.begin(), spec.mean.begin() + spec.channels);
  n.stddev.assign(spec.stddev.begin(), spec.stddev.begin() + spec.channels);
  return n;
}

Status CheckTrainOutputs(const TrainConfig& c, const std::vector<std::string>& data_shards,
                         const std::vector<std::string>& test_shards) {
  std::vector<NamedPath> outputs, others;  // others: all but --checkpoint
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string*>{"--checkpoint", &c.checkpoint},
        {"--metrics", &c.metrics},
        {"--dump-order", &c.dump_order},
        {"--trace", &c.trace}}) {
    if (path->empty()) continue;
    outputs.push_back({flag, *path});
    if (path != &c.checkpoint) others.push_back({flag, *path});
  }
  std::vector<NamedPath> inputs;
  for (const std::string& s : data_shards) inputs.push_back({"--data", s});
  for (const std::string& s : test_shards) inputs.push_back({"--test", s});
  RF_RETURN_IF_ERROR(CheckOutputPaths(outputs, inputs));
  if (c.resume.empty()) return Status::Ok();
  return CheckOutputPaths(others, {{"--resume", c.resume}});
}

Status CheckCheckpointTarget(const TrainConfig& c) {
  if (c.checkpoint.empty() || c.overwrite || !FileExists(c.checkpoint)) return Status::Ok();
  if (!c.resume.empty() && IsSameFile(c.checkpoint, c.resume)) return Status::Ok();
  const Result<Checkpoint> old = ReadCheckpoint(c.checkpoint);
  const std::string what = old.ok()
                               ? "holds a checkpoint of " + std::to_string(old->step) + " steps"
                               : "exists and is not a checkpoint ringfeed can read";
  return Status::Usage("--checkpoint " + c.checkpoint + " " + what +
                       " that this run does not resume from; refusing to replace it: --resume " +
                       c.checkpoint + " continues it, --overwrite replaces it");
}

Status CheckRunLogTargets(const TrainConfig& c, bool metrics) {
  if (!c.resume.empty() || c.overwrite) return Status::Ok();
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string*>{"--metrics", metrics ? &c.metrics : nullptr},
        {"--dump-order", &c.dump_order}}) {
    struct stat st;
    if (path == nullptr || path->empty() || ::stat(path->c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode) || st.st_size == 0) {
      continue;
    }
    const uint64_t bytes = static_cast<uint64_t>(st.st_size);
    return Status::Usage(std::string(flag) + " " + *path + " exists (" + std::to_string(bytes) +
                         " bytes) and this run starts afresh; refusing to replace it: a run "
                         "given --resume appends to it, --overwrite replaces it, or name another "
                         "file");
  }
  return Status::Ok();
}

}  // namespace rf
