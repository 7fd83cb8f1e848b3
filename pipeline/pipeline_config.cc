#include "pipeline/pipeline_config.h"

#include "core/units.h"
#include "pipeline/epoch_remainder.h"
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

constexpr uint64_t kReadAlign = 4096;
constexpr uint64_t kMaxReadBytes = uint64_t{1} << 30;

Status NotOneOf(const char* flag, const char* choices, const std::string& got) {
  return Status::Usage(std::string(flag) + " must be " + choices + ", got \"" + got + "\"");
}

Status AtLeast(const char* flag, uint64_t min, uint64_t got) {
  return Status::Usage(std::string(flag) + " must be >= " + std::to_string(min) + ", got " +
                       std::to_string(got));
}

}  // namespace

Result<PipelineMode> ParsePipelineMode(const std::string& s) {
  if (s == "streaming") return PipelineMode::kStreaming;
  if (s == "managed") return PipelineMode::kManaged;
  return NotOneOf("--mode", "streaming or managed", s);
}

Result<DeviceKind> ParseDeviceKind(const std::string& s) {
  if (s == "auto") return DeviceKind::kAuto;
  if (s == "cuda") return DeviceKind::kCuda;
  if (s == "cpu") return DeviceKind::kCpu;
  return NotOneOf("--device", "auto, cuda or cpu", s);
}

Result<ShuffleMode> ParseShuffleMode(const std::string& s) {
  if (s == "window") return ShuffleMode::kWindow;
  if (s == "none") return ShuffleMode::kNone;
  return NotOneOf("--shuffle", "window or none", s);
}

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

Status CheckReadSize(uint64_t bytes) {
  if (bytes != 0 && bytes % kReadAlign == 0 && bytes <= kMaxReadBytes) return Status::Ok();
  return Status::Usage("--read-size must be a multiple of 4 KiB up to 1 GiB, got " +
                       std::to_string(bytes));
}

Result<uint32_t> ParseReadSize(const std::string& text) {
  Result<uint64_t> bytes = ParseByteSize(text);
  if (!bytes.ok()) return Status::Usage("--read-size: " + bytes.status().message());
  RF_RETURN_IF_ERROR(CheckReadSize(*bytes));
  return static_cast<uint32_t>(*bytes);
}

std::string ReadSizeText(uint32_t bytes) {
  for (const auto& [unit, size] :
       {std::pair{"GiB", 1u << 30}, {"MiB", 1u << 20}, {"KiB", 1u << 10}}) {
    if (bytes != 0 && bytes % size == 0) return std::to_string(bytes / size) + unit;
  }
  return std::to_string(bytes);
}

Status CheckRank(uint32_t rank, uint32_t world_size) {
  if (world_size < 1) return AtLeast("--world-size", 1, world_size);
  if (rank >= world_size) {
    return Status::Usage("--rank must be < --world-size (" + std::to_string(world_size) +
                         "), got " + std::to_string(rank));
  }
  return Status::Ok();
}

Status PipelineConfig::Validate() const {
  if (data.empty()) return Status::Usage("no --data given (see --help)");
  if (order.batch_size < 1) return AtLeast("--batch-size", 1, order.batch_size);
  if (order.shuffle_window < 1) return AtLeast("--shuffle-window", 1, order.shuffle_window);
  if (streaming.queue_depth < 1) return AtLeast("--queue-depth", 1, streaming.queue_depth);
  if (streaming.ring_slots < 2) return AtLeast("--ring-slots", 2, streaming.ring_slots);
  if (streaming.copy_streams < 1) return AtLeast("--copy-streams", 1, streaming.copy_streams);
  RF_RETURN_IF_ERROR(CheckReadSize(streaming.read_bytes));
  RF_RETURN_IF_ERROR(CheckRank(order.rank, order.world_size));
  if (mode == PipelineMode::kManaged && device == DeviceKind::kCpu) {
    return Status::Usage(
        "--mode managed needs a GPU (CUDA managed memory); without one, use --mode streaming");
  }
  const std::vector<EpochStretch>& stretches = order.resumed.stretches;
  for (size_t k = 0; k < stretches.size(); ++k) {
    if (stretches[k].world_size < 1) {
      return Status::Usage("stretch " + std::to_string(k + 1) + " of epoch " +
                           std::to_string(order.resumed.epoch + 1) +
                           ": world size must be >= 1, got 0");
    }
  }
  return Status::Ok();
}

Status PipelineConfig::ValidateFor(const std::vector<uint32_t>& chunk_samples) const {
  RF_RETURN_IF_ERROR(Validate());
  return CheckStretches(chunk_samples, order);
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
