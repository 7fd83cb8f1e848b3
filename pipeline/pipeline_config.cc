#include "pipeline/pipeline_config.h"

#include <algorithm>

#include "io/file.h"
#include "pipeline/batch_source.h"
#include "pipeline/epoch_remainder.h"
#include "pipeline/pipeline_options.h"
#if RINGFEED_HAVE_CUDA
#include "pipeline/managed_source.h"
#endif

namespace rf {

#if RINGFEED_HAVE_CUDA
// ManagedConfig's defaults are ManagedOptions's (whose header needs CUDA, so they are repeated).
static_assert(ManagedOptions{}.prefetch_batches == ManagedConfig{}.prefetch_batches &&
              ManagedOptions{}.advise == ManagedConfig{}.advise &&
              ManagedOptions{}.oversubscribe == ManagedConfig{}.oversubscribe);
#endif

namespace {

Status AtLeast(const char* flag, uint64_t min, uint64_t got) {
  return Status::Usage(std::string(flag) + " must be >= " + std::to_string(min) + ", got " +
                       std::to_string(got));
}

}  // namespace

const char* PipelineModeName(PipelineMode m) {
  return m == PipelineMode::kManaged ? "managed" : "streaming";
}

const char* DeviceKindName(DeviceKind d) {
  switch (d) {
    case DeviceKind::kCuda:
      return "cuda";
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kAuto:
      break;
  }
  return "auto";
}

const char* ShuffleModeName(ShuffleMode s) { return s == ShuffleMode::kNone ? "none" : "window"; }

Status CheckRank(uint32_t rank, uint32_t world_size, OptionFace face) {
  const bool python = face == OptionFace::kPython;
  const std::string r = python ? "rank" : "--rank", w = python ? "world_size" : "--world-size";
  if (world_size < 1) return AtLeast(w.c_str(), 1, world_size);
  if (rank >= world_size) {
    return Status::Usage(r + " must be < " + w + " (" + std::to_string(world_size) + "), got " +
                         std::to_string(rank));
  }
  return Status::Ok();
}

Status PipelineConfig::Validate(OptionFace face) const {
  if (data.empty()) {
    return Status::Usage("no dataset given: name it as DATA or --data DATA (see --help)");
  }
  RF_RETURN_IF_ERROR(
      PipelineOptionTable().Check(*this, kTrainCommand | kReadCommand | kLoaderApi, face));
  RF_RETURN_IF_ERROR(CheckRank(order.rank, order.world_size, face));
  if (mode == PipelineMode::kManaged && device == DeviceKind::kCpu) {
    return Status::Usage(
        "--mode managed needs a GPU (CUDA managed memory); without one, use --mode streaming");
  }
  const std::vector<EpochStretch>& stretches = order.resumed.stretches;
  for (size_t k = 0; k < stretches.size(); ++k) {
    const uint32_t w = stretches[k].world_size;
    if (w < 1 || w > kMaxWorldSize) {
      return Status::Usage("stretch " + std::to_string(k + 1) + " of epoch " +
                           std::to_string(order.resumed.epoch + 1) +
                           ": world size must be from 1 to " + std::to_string(kMaxWorldSize) +
                           ", got " + std::to_string(w));
    }
  }
  return Status::Ok();
}

Status PipelineConfig::ValidateFor(const std::vector<uint32_t>& chunk_samples) const {
  RF_RETURN_IF_ERROR(Validate());
  return CheckStretches(chunk_samples, order);
}

Result<uint64_t> PipelineConfig::EpochSamplesFor(const std::vector<uint32_t>& chunk_samples,
                                                 uint64_t epoch) const {
  RF_RETURN_IF_ERROR(ValidateFor(chunk_samples));
  return EpochSamples(WindowOrder(chunk_samples, order).EpochSampleCount(epoch), order.batch_size,
                      order.drop_last);
}

Result<std::vector<std::string>> PipelineConfig::DataPaths(OptionFace face) const {
  const bool python = face == OptionFace::kPython;
  const std::string data_flag = python ? "data" : "--data",
                    weights_flag = python ? "weights" : "--weights";
  std::vector<std::string> paths;
  for (size_t start = 0; start <= data.size();) {
    const size_t comma = std::min(data.find(',', start), data.size());
    paths.push_back(data.substr(start, comma - start));
    start = comma + 1;
  }
  if (weights.empty()) {
    if (paths.size() == 1 || FileExists(data)) return std::vector<std::string>{data};
    return Status::Usage(data_flag + " names " + std::to_string(paths.size()) + " datasets (" +
                         data + "): a mixture of them needs " + weights_flag +
                         ", one weight a dataset");
  }
  if (paths.size() == 1) {
    return Status::Usage(weights_flag + " mixes several datasets, and " + data_flag +
                         " names one (" + data + "): give " + data_flag +
                         " a comma list of datasets, one a weight");
  }
  if (paths.size() != weights.size()) {
    return Status::Usage(data_flag + " names " + std::to_string(paths.size()) + " datasets and " +
                         weights_flag + " gives " + std::to_string(weights.size()) +
                         " weights: one weight a dataset");
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i].empty()) {
      return Status::Usage(data_flag + " " + data + ": dataset " + std::to_string(i + 1) +
                           " of the list is empty");
    }
  }
  return paths;
}

StreamingOptions StreamingOptionsFor(const PipelineConfig& c, uint64_t epochs) {
  StreamingOptions o;
  o.order = c.order;
  o.ring_slots = c.streaming.ring_slots;
  o.epochs = epochs;
  o.feeder.verify = c.verify;
  o.feeder.reader.mode = c.streaming.io;
  o.feeder.reader.queue_depth = c.streaming.queue_depth;
  o.feeder.reader.read_bytes = c.streaming.read_bytes;
  o.feeder.decode_threads = c.streaming.decode_threads;
  return o;
}

#if RINGFEED_HAVE_CUDA
ManagedOptions ManagedOptionsFor(const PipelineConfig& c) {
  ManagedOptions o;
  o.order = c.order;
  o.prefetch_batches = c.managed.prefetch_batches;
  o.advise = c.managed.advise;
  o.oversubscribe = c.managed.oversubscribe;
  o.verify = c.verify;
  return o;
}
#endif

}  // namespace rf
