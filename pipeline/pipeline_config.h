// PipelineConfig: what the data pipeline needs to deliver batches of one dataset, typed and
// validated, independent of what trains on the batches. `ringfeed train` parses its command line
// into one (inside its TrainConfig, src/train_config.h); a library's loader options are the same
// struct. Each source's options are derived from it here, in one place:
//
//   StreamingOptionsFor  the streaming mode's StreamingOptions (order, ring, reader, feeder)
//   ManagedOptionsFor    the managed mode's ManagedOptions (CUDA builds)
//
// The batch size and the epoch order's settings are one OrderSettings (core/order_settings.h),
// handed whole to every source (and the batch size is the backend's largest batch). Defaults are
// the components' own (OrderSettings, StreamingOptions, ReaderOptions, FeederOptions); the managed
// mode's are checked against ManagedOptions at compile time.
//
// Errors: Validate and the Parse* functions return Status::Usage naming the command-line flag
// (the library's names are the same with '_' for '-'), one rule and one message per value.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/order_settings.h"
#include "core/status.h"
#include "io/chunk_reader.h"
#include "pipeline/streaming_source.h"
#include "pipeline/window_order.h"

namespace rf {

// Where batches come from: read from disk as training goes (fixed memory), or gathered from one
// CUDA managed allocation holding the whole dataset (the baseline; GPU only).
enum class PipelineMode { kStreaming, kManaged };
// Where batches are computed on: the GPU where one is found (else the CPU), the GPU, the CPU.
enum class DeviceKind { kAuto, kCuda, kCpu };

Result<PipelineMode> ParsePipelineMode(const std::string& s);  // "streaming", "managed"
Result<DeviceKind> ParseDeviceKind(const std::string& s);      // "auto", "cuda", "cpu"
Result<ShuffleMode> ParseShuffleMode(const std::string& s);    // "window", "none"
const char* PipelineModeName(PipelineMode m);
const char* DeviceKindName(DeviceKind d);
const char* ShuffleModeName(ShuffleMode s);

// The largest single read, one rule for every command: a multiple of 4 KiB (O_DIRECT's
// alignment), from 4 KiB to 1 GiB. Usage: "--read-size must be a multiple of 4 KiB up to 1 GiB,
// got <text>".
Status CheckReadSize(uint64_t bytes);
// A byte size as written on a command line ("4MiB", "65536"), then CheckReadSize.
Result<uint32_t> ParseReadSize(const std::string& text);
// A read size as a command line writes it: "4MiB", "64KiB", or plain bytes.
std::string ReadSizeText(uint32_t bytes);

// A rank of a world, one rule for every command: world_size >= 1, rank < world_size. Usage:
// "--world-size must be >= 1, got 0", "--rank must be < --world-size (4), got 4".
Status CheckRank(uint32_t rank, uint32_t world_size);

// Host-to-device copy streams of the CUDA staging (which takes the count as an argument).
inline constexpr uint32_t kDefaultCopyStreams = 2;

// The streaming mode's reader, ring and copies.
struct StreamingConfig {
  IoMode io = ReaderOptions{}.mode;
  uint32_t queue_depth = ReaderOptions{}.queue_depth;   // reads in flight
  uint32_t read_bytes = ReaderOptions{}.read_bytes;     // largest single read (CheckReadSize)
  uint32_t ring_slots = StreamingOptions{}.ring_slots;  // host ring slots, one chunk each; >= 2
  uint32_t copy_streams = kDefaultCopyStreams;          // GPU only
};

// The managed mode's paging (see pipeline/managed_source.h).
struct ManagedConfig {
  uint32_t prefetch_batches = 0;  // prefetch the chunks of the batch this many ahead
  bool advise = false;            // read-mostly, preferred on the GPU
  bool oversubscribe = false;     // allow a dataset larger than the GPU's free memory
};

struct PipelineConfig {
  std::string data;  // the dataset: a single file, any shard, or the shards' base name
  PipelineMode mode = PipelineMode::kStreaming;
  DeviceKind device = DeviceKind::kAuto;
  // The batch size, drop_last, the shuffle and its window, the seed, this rank's part of every
  // epoch (the streaming mode reads only the rank's chunks) and a resumed epoch (a checkpoint's
  // stretches: each stretch's world_size >= 1, and its position at most its stretch's samples per
  // rank, which ValidateFor checks: that needs the dataset).
  OrderSettings order;
  bool verify = FeederOptions{}.verify;  // check every chunk's XXH3
  StreamingConfig streaming;             // streaming mode only
  ManagedConfig managed;                 // managed mode only

  // Usage errors: no dataset, a count below its minimum, a read size off the rule, a rank off
  // CheckRank's rule, managed mode on the CPU, a stretch of world size 0.
  Status Validate() const;
  // Validate, and what needs the dataset's chunk layout (chunk_samples, Dataset::
  // ChunkSampleCounts): a stretch's position past its stretch's samples per rank (Usage, naming
  // the stretch; CheckStretches in pipeline/epoch_remainder.h). Loader::Open and Create call it.
  Status ValidateFor(const std::vector<uint32_t>& chunk_samples) const;
};

// The streaming source's options; `epochs`: how many epochs its read plan covers.
StreamingOptions StreamingOptionsFor(const PipelineConfig& c, uint64_t epochs);
#if RINGFEED_HAVE_CUDA
struct ManagedOptions;  // pipeline/managed_source.h (CUDA headers)
ManagedOptions ManagedOptionsFor(const PipelineConfig& c);
#endif

}  // namespace rf
