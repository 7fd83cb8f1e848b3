#include "pipeline/sources/pipeline_config.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdlib>

#include "io/file.h"
#include "pipeline/order/epoch_remainder.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/stage/chunk_feeder.h"
#if RINGFEED_HAVE_CUDA
#include "pipeline/sources/managed_source.h"
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

uint32_t LauncherLocalRanks() {
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (*end == '\0' && n >= 1 && n <= kMaxWorldSize) return static_cast<uint32_t>(n);
  }
  return 1;
}

void PipelineConfig::ResolveLocalRanks(uint32_t local_ranks) {
  if (partition == Partition::kNode && order.node_ranks == 0)
    order.node_ranks = std::max<uint32_t>(1, local_ranks);
  remote.machine_ranks =
      std::max<uint32_t>(1, order.node_ranks != 0 ? order.node_ranks : local_ranks);
}

Status PipelineConfig::CheckPartition(OptionFace face) const {
  if (partition == Partition::kGlobal) return Status::Ok();
  if (order.node_ranks == 0 || order.world_size % order.node_ranks != 0) {
    const bool python = face == OptionFace::kPython;
    return Status::Usage(std::string(python ? "node_ranks " : "--node-ranks ") +
                         std::to_string(order.node_ranks) + " does not divide " +
                         (python ? "world_size " : "--world-size ") +
                         std::to_string(order.world_size) +
                         ": machines run the same number of ranks under the node partition");
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
  if (partition == Partition::kNode && order.node_ranks == 0) {
    return Status::Usage(std::string(face == OptionFace::kPython ? "node_ranks" : "--node-ranks") +
                         ": the node partition needs the ranks a machine runs "
                         "(PipelineConfig::ResolveLocalRanks)");
  }
  if (mode == PipelineMode::kManaged && device == DeviceKind::kCpu) {
    return Status::Usage(
        "--mode managed needs a GPU (CUDA managed memory); without one, use --mode streaming");
  }
  if (remote.cache_dir.empty() != (remote.cache_bytes == 0)) {
    const bool python = face == OptionFace::kPython;
    return Status::Usage(
        remote.cache_dir.empty()
            ? std::string(python ? "cache_size needs cache_dir" : "--cache-size needs --cache-dir")
            : std::string(python ? "cache_dir needs cache_size (a byte budget)"
                                 : "--cache-dir needs --cache-size (a byte "
                                   "budget, \"200GiB\")"));
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

HttpFetchOptions RemoteOptionsFor(const PipelineConfig& c) {
  HttpFetchOptions o;
  o.ca_bundle = c.remote.ca_bundle;
  o.deadline = std::chrono::seconds(c.remote.deadline_seconds);
  o.max_in_flight = c.remote.in_flight;
  return o;
}

const char* CachePolicyName(CachePolicy p) { return p == CachePolicy::kLru ? "lru" : "belady"; }

Result<Dataset> OpenDataset(const PipelineConfig& c, const std::string& path, uint32_t datasets) {
  RF_ASSIGN_OR_RETURN(Dataset d, Dataset::Open(path, RemoteOptionsFor(c)));
  if (!d.remote() || c.remote.cache_dir.empty()) return d;
  ChunkCacheOptions o;
  o.dir = c.remote.cache_dir;
  o.budget_bytes = std::max<uint64_t>(1, c.remote.cache_bytes / std::max<uint32_t>(1, datasets));
  o.policy = c.remote.cache_policy;
  // Another process's fetch of a chunk takes at most its deadline.
  o.claim_wait = std::chrono::seconds(c.remote.deadline_seconds);
  RF_RETURN_IF_ERROR(AttachChunkCache(&d, o));
  return d;
}

StreamingOptions StreamingOptionsFor(const PipelineConfig& c, uint64_t epochs) {
  StreamingOptions o;
  o.order = c.order;
  o.ring_slots = c.streaming.ring_slots;
  o.epochs = epochs;
  o.machine_ranks = c.remote.machine_ranks;
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

// --- The option table ---------------------------------------------------------------------
namespace {

constexpr uint32_t kTrain = kTrainCommand, kRead = kReadCommand, kLoader = kLoaderApi;
constexpr char kStreamingOnly[] = "it sets the streaming reader and ring";

OptionTable<PipelineConfig> MakeTable() {
  OptionTable<PipelineConfig> t;
  t.Field(
       "data", OptionType::kText, [](auto& c) -> auto& { return c.data; })
      .Metavar("DATA")
      .Positional()
      .For(kTrain | kRead)
      .Help("the dataset: a .rfd file, any one of its shards, or the shards' base name");
  t.Field(
       "weights", OptionType::kNumbers, [](auto& c) -> auto& { return c.weights; })
      .RangeReal(0, DBL_MAX)
      .Metavar("W1,W2,...")
      .For(kTrain | kLoader)
      .Unset("one dataset, no mixture")
      .Help(
          "a weighted mixture of datasets: one weight a dataset (--data then a comma list of "
          "them; in Python a list), each >= 0, not all 0; the dataset of each sample (or packed "
          "row) is a pure function of the weights, the seed and its number, each dataset keeping "
          "its own epochs");
  t.Word("device", [](auto& c) -> auto& { return c.device; },
         {{DeviceKindName(DeviceKind::kAuto), DeviceKind::kAuto},
          {DeviceKindName(DeviceKind::kCuda), DeviceKind::kCuda},
          {DeviceKindName(DeviceKind::kCpu), DeviceKind::kCpu}})
      .For(kTrain | kLoader)
      .Unset("'cuda' where the build has CUDA and a GPU is found, else 'cpu'; 'cuda:N' names GPU N")
      .Help(
          "where batches are computed: auto (the GPU where one is found, else the CPU), cuda or "
          "cpu");
  t.Word("mode", [](auto& c) -> auto& { return c.mode; },
         {{PipelineModeName(PipelineMode::kStreaming), PipelineMode::kStreaming},
          {PipelineModeName(PipelineMode::kManaged), PipelineMode::kManaged}})
      .For(kTrain | kLoader)
      .Help(
          "streaming: read chunks from disk as training goes, in fixed memory; managed: the "
          "whole dataset in one CUDA managed allocation first (the baseline; GPU only)");
  t.Field(
       "batch-size", OptionType::kCount, [](auto& c) -> auto& { return c.order.batch_size; })
      .Range(1, kMaxBatchSize)
      .For(kTrain | kLoader)
      .Help("samples a step (a batch) on each rank; the epoch's last batch may be smaller");
  t.Field(
       "drop-last", OptionType::kSwitch, [](auto& c) -> auto& { return c.order.drop_last; })
      .For(kTrain | kLoader)
      .Help("skip each epoch's partial last batch");
  t.Word("shuffle", [](auto& c) -> auto& { return c.order.shuffle; },
         {{ShuffleModeName(ShuffleMode::kWindow), ShuffleMode::kWindow},
          {ShuffleModeName(ShuffleMode::kNone), ShuffleMode::kNone}})
      .BoolWords(ShuffleModeName(ShuffleMode::kWindow), ShuffleModeName(ShuffleMode::kNone))
      .For(kTrain | kLoader)
      .Help(
          "window: chunks in a seeded permutation, the samples of --shuffle-window chunks "
          "shuffled together; none: stored order");
  t.Field(
       "shuffle-window", OptionType::kCount,
       [](auto& c) -> auto& { return c.order.shuffle_window; })
      .Range(1, kMaxShuffleWindow)
      .For(kTrain | kLoader)
      .Help(
          "chunks resident together whose samples are shuffled together (the staging holds "
          "three windows)");
  t.Field(
       "seed", OptionType::kCount, [](auto& c) -> auto& { return c.order.seed; })
      .For(kTrain | kRead | kLoader)
      .Help(
          "seeds each epoch's order and the augmentation's draws (and, training, the initial "
          "weights)");
  t.Field(
       "rank", OptionType::kCount, [](auto& c) -> auto& { return c.order.rank; })
      .Range(0, kMaxWorldSize - 1)
      .For(kRead | kLoader)
      .Unset(
          "torch.distributed's rank where it is initialized, else the RANK environment "
          "variable, else 0")
      .Help("this rank's part of every epoch (below --world-size)");
  t.Field(
       "world-size", OptionType::kCount, [](auto& c) -> auto& { return c.order.world_size; })
      .Range(1, kMaxWorldSize)
      .For(kRead | kLoader)
      .Unset(
          "torch.distributed's world size where it is initialized, else the WORLD_SIZE "
          "environment variable, else 1")
      .Help("ranks every epoch is partitioned over");
  t.Word("partition", [](auto& c) -> auto& { return c.partition; },
         {{"global", Partition::kGlobal}, {"node", Partition::kNode}})
      .For(kTrain | kRead | kLoader)
      .Help(
          "global: each epoch deals all the chunks to all the ranks; node: each machine's ranks "
          "(--node-ranks consecutive ones) draw from the same part of the dataset every epoch, "
          "shuffled within it, so a node-local cache of that part fetches nothing after the "
          "first epoch (docs/remote.md)");
  t.Field(
       "node-ranks", OptionType::kCount, [](auto& c) -> auto& { return c.order.node_ranks; })
      .Range(0, kMaxWorldSize)
      .For(kTrain | kRead | kLoader)
      .OnlyWith("partition", {"node"}, "the node partition only")
      .Unset(
          "the launcher's ranks on this machine (LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE), "
          "else 1")
      .Help(
          "--partition node: the ranks a machine runs, consecutive ones (machine k: ranks kN to "
          "kN + N - 1); it divides --world-size");
  t.Field(
       "verify", OptionType::kSwitch, [](auto& c) -> auto& { return c.verify; })
      .For(kTrain | kRead | kLoader)
      .Help(
          "check every chunk's XXH3 checksum as it is read (on by default). Off, a chunk is "
          "taken as read: a damaged raw chunk, or a damaged frame that still decompresses to "
          "exactly its data size, reaches the model; its record table and labels are still "
          "checked");
  t.Word("io", [](auto& c) -> auto& { return c.streaming.io; },
         {{IoModeName(IoMode::kDirect), IoMode::kDirect},
          {IoModeName(IoMode::kBuffered), IoMode::kBuffered},
          {IoModeName(IoMode::kPread), IoMode::kPread}})
      .For(kTrain | kRead | kLoader)
      .OnlyWith("mode", {"streaming"}, kStreamingOnly)
      .Help("direct: io_uring with O_DIRECT; buffered: io_uring through the page cache; pread");
  t.Field(
       "queue-depth", OptionType::kCount, [](auto& c) -> auto& { return c.streaming.queue_depth; })
      .Range(1, kMaxQueueDepth)
      .For(kTrain | kRead | kLoader)
      .OnlyWith("mode", {"streaming"}, kStreamingOnly)
      .Help("reads in flight (io_uring takes at most 32768)");
  t.Field(
       "read-size", OptionType::kByteSize, [](auto& c) -> auto& { return c.streaming.read_bytes; })
      .Range(kReadSizeAlign, kMaxReadSize)
      .MultipleOf(kReadSizeAlign)
      .For(kTrain | kRead | kLoader)
      .OnlyWith("mode", {"streaming"}, kStreamingOnly)
      .Help("largest single read; a larger chunk is read in pieces of this size");
  t.Field(
       "ring-slots", OptionType::kCount, [](auto& c) -> auto& { return c.streaming.ring_slots; })
      .Range(2, kMaxRingSlots)
      .Alias("slots")  // ringfeed read's name before the options were one schema
      .For(kTrain | kRead | kLoader)
      .OnlyWith("mode", {"streaming"}, kStreamingOnly)
      .Help("host ring slots (one chunk each) the reader fills ahead");
  t.Field(
       "decode-threads", OptionType::kCount,
       [](auto& c) -> auto& { return c.streaming.decode_threads; })
      .Range(0, kMaxDecodeThreads)
      .For(kTrain | kRead | kLoader)
      .OnlyWith("mode", {"streaming"}, kStreamingOnly)
      .Help(
          "threads that verify and decompress read chunks; 0: half the cores shared by the "
          "ranks on the machine, 2 to 8");
  t.Field(
       "copy-streams", OptionType::kCount,
       [](auto& c) -> auto& { return c.streaming.copy_streams; })
      .Range(1, kMaxCopyStreams)
      .For(kTrain | kLoader)
      .OnlyWith("mode", {"streaming"}, kStreamingOnly)
      .OnlyWith("device", {"auto", "cuda"}, "GPU only")
      .Help("host-to-device copy streams");
  t.Field(
       "ca-bundle", OptionType::kText, [](auto& c) -> auto& { return c.remote.ca_bundle; })
      .For(kTrain | kRead | kLoader)
      .Help(
          "remote datasets: a PEM file of the certificates to trust for https:// (default: the "
          "system's); certificates and host names are always verified");
  t.Field(
       "remote-deadline", OptionType::kCount,
       [](auto& c) -> auto& { return c.remote.deadline_seconds; })
      .Range(1, kMaxRemoteDeadline)
      .For(kTrain | kRead | kLoader)
      .Help(
          "remote datasets: seconds one range request may take, its retries (5xx, 429, resets, "
          "timeouts, with backoff and jitter) included, before the run stops naming it");
  t.Field(
       "remote-in-flight", OptionType::kCount, [](auto& c) -> auto& { return c.remote.in_flight; })
      .Range(1, kMaxRemoteInFlight)
      .For(kTrain | kRead | kLoader)
      .Help(
          "remote datasets: range requests in flight at once (at most --queue-depth of the "
          "streaming reader's)");
  t.Field(
       "cache-dir", OptionType::kText, [](auto& c) -> auto& { return c.remote.cache_dir; })
      .For(kTrain | kRead | kLoader)
      .Help(
          "remote datasets: keep fetched chunks in this directory on a local disk (with "
          "--cache-size), shared by every process of the machine that names it, each chunk "
          "fetched once a machine");
  t.Field(
       "cache-size", OptionType::kByteSize, [](auto& c) -> auto& { return c.remote.cache_bytes; })
      .Range(0, kMaxCacheBytes)
      .For(kTrain | kRead | kLoader)
      .Help(
          "remote datasets: the cache's budget (\"200GiB\"), shared by the run's remote "
          "datasets; needs --cache-dir");
  t.Word("cache-policy", [](auto& c) -> auto& { return c.remote.cache_policy; },
         {{CachePolicyName(CachePolicy::kBelady), CachePolicy::kBelady},
          {CachePolicyName(CachePolicy::kLru), CachePolicy::kLru}})
      .For(kTrain | kRead | kLoader)
      .Help(
          "remote datasets: which cached chunk a full cache drops: belady (the one the known "
          "order needs last) or lru (the least recently used)");
  t.Field(
       "managed-prefetch", OptionType::kCount,
       [](auto& c) -> auto& { return c.managed.prefetch_batches; })
      .Range(0, kMaxManagedPrefetch)
      .For(kTrain | kLoader)
      .OnlyWith("mode", {"managed"}, "managed mode only")
      .Help("prefetch to the GPU the chunks of the batch this many ahead");
  t.Field(
       "managed-advise", OptionType::kSwitch, [](auto& c) -> auto& { return c.managed.advise; })
      .For(kTrain | kLoader)
      .OnlyWith("mode", {"managed"}, "managed mode only")
      .Help("advise the managed allocation read-mostly, preferred on the GPU");
  t.Field(
       "managed-oversubscribe", OptionType::kSwitch,
       [](auto& c) -> auto& { return c.managed.oversubscribe; })
      .For(kTrain | kLoader)
      .OnlyWith("mode", {"managed"}, "managed mode only")
      .Help("allow a dataset larger than the GPU's free memory (paged through it)");
  return t;
}

}  // namespace

const OptionTable<PipelineConfig>& PipelineOptionTable() {
  static const OptionTable<PipelineConfig> table = MakeTable();
  return table;
}

}  // namespace rf
