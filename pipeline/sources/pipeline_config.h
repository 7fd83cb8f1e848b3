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
// The options that set it are declared once, here (PipelineOptionTable, below: names, defaults,
// bounds, help, the programs that take each, where it does something: the streaming reader's
// options are refused in managed mode, the copy streams on the CPU); every program reads its
// flags, --config files and Python keywords through the table, and Validate holds a config built
// in C++ to the same bounds. The bounds are the pipeline's: a count a user gives sizes memory
// (the ring, the staging, the reader's queue), so each has an upper end, checked before anything
// is allocated. The table is built on first use (a function-local static) and only read after.
//
// Errors: Validate returns Status::Usage naming the command-line flag (the library's names are the
// same with '_' for '-'), one rule and one message per value.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/order_settings.h"
#include "core/status.h"
#include "io/chunk_cache.h"
#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "io/remote/retry_policy.h"
#include "options/option_spec.h"
#include "options/option_table.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/streaming_source.h"

namespace rf {

// Where batches come from: read from disk as training goes (fixed memory), or gathered from one
// CUDA managed allocation holding the whole dataset (the baseline; GPU only).
enum class PipelineMode { kStreaming, kManaged };
// Where batches are computed on: the GPU where one is found (else the CPU), the GPU, the CPU.
enum class DeviceKind { kAuto, kCuda, kCpu };
// How each epoch's chunks are dealt to the ranks: all of them to all the ranks, or each
// machine's ranks the same part every epoch (OrderSettings::node_ranks, the ranks a machine runs).
enum class Partition { kGlobal, kNode };

// The words the options take (PipelineOptionTable, below, reads and writes them).
const char* PipelineModeName(PipelineMode m);  // "streaming", "managed"
const char* DeviceKindName(DeviceKind d);      // "auto", "cuda", "cpu"
const char* ShuffleModeName(ShuffleMode s);    // "window", "none"

// A rank of a world, one rule for every command: world_size >= 1, rank < world_size. Usage named
// as `face` names the options: "--rank must be < --world-size (4), got 4" (Python: "rank must be
// < world_size (4), got 4").
Status CheckRank(uint32_t rank, uint32_t world_size, OptionFace face = OptionFace::kCommandLine);

// Host-to-device copy streams of the CUDA staging (which takes the count as an argument).
inline constexpr uint32_t kDefaultCopyStreams = 2;

// The streaming mode's reader, ring and copies.
struct StreamingConfig {
  IoMode io = ReaderOptions{}.mode;
  uint32_t queue_depth = ReaderOptions{}.queue_depth;   // reads in flight
  uint32_t read_bytes = ReaderOptions{}.read_bytes;     // largest single read
  uint32_t ring_slots = StreamingOptions{}.ring_slots;  // host ring slots, one chunk each; >= 2
  uint32_t decode_threads = 0;  // the chunk stage's threads; 0: DefaultDecodeThreads()
  uint32_t copy_streams = kDefaultCopyStreams;  // GPU only
};

// The managed mode's paging (see pipeline/sources/managed_source.h).
struct ManagedConfig {
  uint32_t prefetch_batches = 0;  // prefetch the chunks of the batch this many ahead
  bool advise = false;            // read-mostly, preferred on the GPU
  bool oversubscribe = false;     // allow a dataset larger than the GPU's free memory
};

// Remote datasets (a URL as `data`: io/remote/remote_object.h): how their objects are fetched.
// With cache_dir, each remote dataset's chunks are kept in a node-local cache there
// (io/chunk_cache.h), shared by every process of the machine that names the same directory.
struct RemoteConfig {
  std::string ca_bundle;            // PEM certificates to trust for https://; empty: the system's
  uint32_t deadline_seconds = 120;  // one request, every retry included
  uint32_t in_flight = HttpFetchOptions{}.max_in_flight;  // range requests at once, a reader
  std::string cache_dir;     // the cache's directory (on a local disk); empty: no cache
  uint64_t cache_bytes = 0;  // its budget, shared by the run's remote datasets; > 0 with a dir
  CachePolicy cache_policy = CachePolicy::kBelady;  // which cached chunk a full cache drops
  // The ranks of this machine, consecutive, this one among them, that share the cache (the
  // launcher's: ResolveLocalRanks; under the node partition, node_ranks): Belady's rule weighs
  // their reads too. 1: this rank's own.
  uint32_t machine_ranks = 1;
};

struct PipelineConfig {
  std::string data;  // the dataset: a single file, any shard, or the shards' base name
  PipelineMode mode = PipelineMode::kStreaming;
  DeviceKind device = DeviceKind::kAuto;
  // The batch size, drop_last, the shuffle and its window, the seed, this rank's part of every
  // epoch (the streaming mode reads only the rank's chunks) and a resumed epoch (a checkpoint's
  // stretches: each stretch's world_size from 1 to kMaxWorldSize, and its position at most its
  // stretch's samples per rank, which ValidateFor checks: that needs the dataset). The seed is the
  // epoch order's (and, for training, the initial weights' and the augmentation's draws); one
  // default for every program, 1: `ringfeed train --seed`'s since its first checkpoints and
  // measured accuracies (the Python loader's 0 changed to it; a state dict records its seed).
  OrderSettings order;
  // The node partition sets order.node_ranks (the --node-ranks given, else the launcher's ranks
  // on the machine: ResolveLocalRanks); the global one leaves it 0.
  Partition partition = Partition::kGlobal;
  // A weighted mixture of datasets (pipeline/sources/mixture.h): one weight a dataset, `data`
  // naming them as a comma list on the command line (DataPaths; the library's loaders take the
  // datasets themselves); empty: one dataset.
  std::vector<float> weights;
  // Where a sample mixture's stream starts (a checkpoint's or a state dict's, continued at this
  // world size by ContinueMixture): the steps, the draws, and each dataset's epoch and place;
  // no sources: the mixture's start.
  MixtureState mixture;
  bool verify = FeederOptions{}.verify;  // check every chunk's XXH3
  StreamingConfig streaming;             // streaming mode only
  RemoteConfig remote;                   // remote datasets only
  ManagedConfig managed;                 // managed mode only

  // Usage errors: no dataset, an option outside its declared bounds (PipelineOptionTable),
  // a rank off CheckRank's rule, managed mode on the CPU, a stretch of world size 0 or more than
  // kMaxWorldSize.
  // `face`: how the messages name the options (the command line's --names, or Python's).
  Status Validate(OptionFace face = OptionFace::kCommandLine) const;
  // `local_ranks`: the launcher's ranks on this machine (LauncherLocalRanks; 1 without a
  // launcher). Under the node partition with no node_ranks given, order.node_ranks = local_ranks.
  // remote.machine_ranks = order.node_ranks where set, else local_ranks.
  void ResolveLocalRanks(uint32_t local_ranks);
  // Once the world is known: Usage where the node partition's node_ranks does not divide it.
  Status CheckPartition(OptionFace face = OptionFace::kCommandLine) const;
  // Validate, and what needs the dataset's chunk layout (chunk_samples, Dataset::
  // ChunkSampleCounts): a stretch's position past its stretch's samples per rank (Usage, naming
  // the stretch; CheckStretches in pipeline/order/epoch_remainder.h). Loader::Open and Create call
  // it.
  Status ValidateFor(const std::vector<uint32_t>& chunk_samples) const;
  // ValidateFor, then the samples each rank trains on in epoch `epoch` (a resumed epoch's own
  // count, order.resumed), less a partial last batch with drop_last: what a loader of this config
  // reports as its epoch_samples() once StartEpoch began `epoch`, known without opening one (a
  // checkpoint's or a state dict's position is checked against it before anything is built).
  // O(chunks) time and memory.
  Result<uint64_t> EpochSamplesFor(const std::vector<uint32_t>& chunk_samples,
                                   uint64_t epoch) const;
  // The datasets `data` names: itself, or, with weights, the comma list it is (`ringfeed train
  // --data a.rfd,b.rfd --weights 0.7,0.3`). Usage for weights with one dataset, a count of
  // datasets other than of weights (naming both), or a comma list of datasets without weights
  // (where no file is named so whole).
  Result<std::vector<std::string>> DataPaths(OptionFace face = OptionFace::kCommandLine) const;
};

// The ranks a launcher runs on this machine: LOCAL_WORLD_SIZE (torchrun), else
// OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI's mpirun), else 1 (a value that is no count: 1).
uint32_t LauncherLocalRanks();

// The fetch options every reader of a remote dataset of this config uses (Dataset::Open's).
HttpFetchOptions RemoteOptionsFor(const PipelineConfig& c);
// The dataset `path` (one of DataPaths) opened: a remote one fetched with RemoteOptionsFor(c),
// and with c.remote.cache_dir given its cache attached (Dataset::AttachCache), of
// cache_bytes / `datasets` (the run's remote datasets share the budget; a local dataset needs no
// cache and gets none).
Result<Dataset> OpenDataset(const PipelineConfig& c, const std::string& path,
                            uint32_t datasets = 1);
// "belady", "lru"
const char* CachePolicyName(CachePolicy p);

// The streaming source's options; `epochs`: how many epochs its read plan covers.
StreamingOptions StreamingOptionsFor(const PipelineConfig& c, uint64_t epochs);
#if RINGFEED_HAVE_CUDA
struct ManagedOptions;  // pipeline/sources/managed_source.h (CUDA headers)
ManagedOptions ManagedOptionsFor(const PipelineConfig& c);
#endif

// The pipeline's bounds.
inline constexpr uint32_t kMaxBatchSize = 1u << 20;        // samples a batch
inline constexpr uint32_t kMaxShuffleWindow = 4096;        // chunks staged together (3 windows)
inline constexpr uint32_t kMaxRingSlots = 1024;            // host ring slots, one chunk each
inline constexpr uint32_t kMaxCopyStreams = 16;            // host-to-device copy streams
inline constexpr uint32_t kMaxManagedPrefetch = 1u << 16;  // batches ahead
inline constexpr uint32_t kMaxWorldSize = 1u << 16;        // ranks of one run
inline constexpr uint32_t kMaxRemoteInFlight = 1024;       // range requests at once
inline constexpr uint32_t kMaxRemoteDeadline = kMaxFetchDeadlineSeconds;  // seconds
// kMaxCacheBytes, a cache's budget: io/chunk_cache.h.
// kMaxEpoch, the most an epoch counter holds: pipeline/sources/batch_source.h.

const OptionTable<PipelineConfig>& PipelineOptionTable();

}  // namespace rf
