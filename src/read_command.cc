// ringfeed read: drains a dataset through the disk stage alone (io_uring reader -> slot ring ->
// a consumer that releases each slot at once) and reports the rate. This is the disk-stage
// figure that training is measured against. Errors go back to main as a CommandStatus
// (src/commands.h); the read size's rule is the training command's
// (pipeline/sources/pipeline_config.h).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "io/chunk_cache.h"
#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "io/file.h"
#include "options/command_line.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/pipeline_config.h"
#include "pipeline/stage/chunk_feeder.h"
#include "pipeline/stage/slot_ring.h"
#include "src/command_checks.h"
#include "src/commands.h"
#include "src/read_options.h"

namespace rf {
namespace {

struct ReadReport {
  uint64_t bytes = 0;  // delivered: the chunks' data
  uint64_t chunks = 0;
  double seconds = 0;
  double consumer_wait_s = 0;
  FeederStats feeder;  // stored bytes, the chunk stage's threads and busy time
};

Result<ReadReport> Drain(const Dataset& d, std::vector<uint64_t> order, const FeederOptions& fo,
                         SlotRing& ring, std::string* backend) {
  const auto t0 = std::chrono::steady_clock::now();
  RF_ASSIGN_OR_RETURN(std::unique_ptr<ChunkFeeder> feeder,
                      ChunkFeeder::Start(d, ring, std::move(order), fo));
  *backend = std::string(feeder->backend()) + ", " + IoModeName(feeder->mode());
  ReadReport r;
  while (auto f = ring.AcquireReady()) {
    r.bytes += f->bytes;
    ++r.chunks;
    ring.Release(f->slot);
  }
  RF_RETURN_IF_ERROR(feeder->Join());
  RF_RETURN_IF_ERROR(ring.status());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.feeder = feeder->stats();
  return r;
}

Status Run(ReadConfig a) {
  a.pipeline.ResolveLocalRanks(LauncherLocalRanks());
  RF_RETURN_IF_ERROR(a.pipeline.CheckPartition());
  const PipelineConfig& p = a.pipeline;
  RF_RETURN_IF_ERROR(p.Validate());
  FeederOptions fo;
  fo.reader.mode = p.streaming.io;
  fo.reader.read_bytes = p.streaming.read_bytes;
  fo.reader.queue_depth = p.streaming.queue_depth;
  fo.verify = p.verify;
  fo.decode_threads = p.streaming.decode_threads;
  fo.reader.register_buffers = a.register_buffers;
  Result<PinMode> pin = ParsePinMode(a.pinned.c_str());
  if (!pin.ok()) return Status::Usage(pin.status().message());
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDataset(p, p.data));
  if (!a.json.empty()) {
    std::vector<NamedPath> shards;
    for (size_t s = 0; s < d.shard_count(); ++s) shards.push_back({"DATASET", d.shard_path(s)});
    RF_RETURN_IF_ERROR(CheckOutputPaths({{"--json", a.json}}, shards));
  }
  // The chunks in stored order, or in the order the first epoch of `ringfeed train --seed S`
  // reads them with its default window shuffle: the reader-alone rate a shuffled epoch is bound
  // by, where the disk reads scattered 4 MiB chunks more slowly than a sequential run. With
  // --world-size N, only the chunks rank --rank reads in that epoch (WindowOrder's partition).
  OrderSettings wo;
  wo.shuffle = a.order == "train" ? ShuffleMode::kWindow : ShuffleMode::kNone;
  wo.seed = p.order.seed;
  wo.rank = p.order.rank;
  wo.world_size = p.order.world_size;
  wo.node_ranks = p.order.node_ranks;
  const std::vector<uint64_t> order = WindowOrder(d.ChunkSampleCounts(), wo).EpochChunks(0);
  RF_ASSIGN_OR_RETURN(std::unique_ptr<SlotRing> ring,
                      SlotRing::Create(p.streaming.ring_slots, d.max_chunk_bytes(), *pin));

  // A remote dataset's cache knows what the passes will read: the order, --passes times.
  ChunkCache* cache = d.cache();
  if (cache != nullptr) {
    std::vector<uint64_t> schedule;
    for (uint32_t pass = 0; pass < a.passes; ++pass)
      schedule.insert(schedule.end(), order.begin(), order.end());
    RF_RETURN_IF_ERROR(cache->SetSchedule(schedule));
  }

  nlohmann::json runs = nlohmann::json::array();
  for (uint32_t pass = 0; pass < a.passes; ++pass) {
    const ChunkCacheStats cache_before = cache != nullptr ? cache->stats() : ChunkCacheStats{};
    if (pass > 0) {
      RF_ASSIGN_OR_RETURN(ring,
                          SlotRing::Create(p.streaming.ring_slots, d.max_chunk_bytes(), *pin));
    }
    std::string backend;
    RF_ASSIGN_OR_RETURN(ReadReport r, Drain(d, order, fo, *ring, &backend));
    // Delivered: the chunks' data, what a consumer gets; stored: what the disk read (less where
    // chunks are compressed).
    const double gbps = static_cast<double>(r.bytes) / r.seconds / 1e9;
    const double stored_gbps = static_cast<double>(r.feeder.stored_bytes) / r.seconds / 1e9;
    const double busy = r.feeder.stage_threads == 0 ? 0.0
                                                    : static_cast<double>(r.feeder.stage_busy_ns) /
                                                          1e9 / r.seconds / r.feeder.stage_threads;
    std::string stored;
    if (d.compressed()) {
      char s[160];
      std::snprintf(s, sizeof s, ", from %s stored: %.3f GB/s read (ratio %.2f)",
                    FormatBytes(r.feeder.stored_bytes).c_str(), stored_gbps,
                    static_cast<double>(r.bytes) / static_cast<double>(r.feeder.stored_bytes));
      stored = s;
    }
    std::printf(
        "ringfeed read: %s: %s in %llu chunks, %.3f s: %.3f GB/s (%.3f GiB/s)%s  [%s, queue "
        "depth %u, %s reads, %u slots of %s %s (%s in 2 MiB pages), checksums %s, %u decode "
        "threads %.0f%% busy]\n",
        d.path().c_str(), FormatBytes(r.bytes).c_str(), static_cast<unsigned long long>(r.chunks),
        r.seconds, gbps, gbps * 1e9 / (1u << 30), stored.c_str(), backend.c_str(),
        fo.reader.queue_depth, FormatBytes(fo.reader.read_bytes).c_str(), ring->slot_count(),
        FormatBytes(ring->slot_bytes()).c_str(), ring->pinned() ? "pinned" : "pageable",
        FormatBytes(ring->huge_page_bytes()).c_str(), fo.verify ? "verified" : "not verified",
        r.feeder.stage_threads, 100 * busy);
    nlohmann::json cache_json;
    if (cache != nullptr) {
      const ChunkCacheStats now = cache->stats();
      const uint64_t hits = now.hits - cache_before.hits;
      const uint64_t misses = now.misses - cache_before.misses;
      std::printf(
          "ringfeed read: cache %s: %llu of %llu chunks from the cache, %llu fetched; %s "
          "of %s used\n",
          cache->directory().c_str(), static_cast<unsigned long long>(hits),
          static_cast<unsigned long long>(hits + misses), static_cast<unsigned long long>(misses),
          FormatBytes(cache->used_bytes()).c_str(), FormatBytes(cache->budget_bytes()).c_str());
      cache_json = {{"hits", hits}, {"misses", misses}, {"used_bytes", cache->used_bytes()}};
    }
    std::fflush(stdout);
    runs.push_back({{"bytes", r.bytes},
                    {"cache", cache_json},
                    {"stored_bytes", r.feeder.stored_bytes},
                    {"stored_gb_per_s", stored_gbps},
                    {"decode_threads", r.feeder.stage_threads},
                    {"decode_busy_share", busy},
                    {"chunks", r.chunks},
                    {"seconds", r.seconds},
                    {"gb_per_s", gbps},
                    {"backend", backend},
                    {"consumer_wait_s", ring->consumer_wait_ns() / 1e9},
                    {"huge_page_bytes", ring->huge_page_bytes()}});
  }
  if (!a.json.empty()) {
    nlohmann::json j = {{"dataset", d.path()},
                        {"dataset_bytes", d.total_bytes()},
                        {"data_bytes", d.data_bytes()},
                        {"format_version", d.header().version},
                        {"codec", CodecText(d.header().codec)},
                        {"shards", d.shard_count()},
                        {"parts", d.part_count()},
                        {"io", IoModeName(fo.reader.mode)},
                        {"queue_depth", fo.reader.queue_depth},
                        {"read_bytes", fo.reader.read_bytes},
                        {"slots", ring->slot_count()},
                        {"slot_bytes", ring->slot_bytes()},
                        {"pinned", ring->pinned()},
                        {"verify", fo.verify},
                        {"order", a.order},
                        {"rank", p.order.rank},
                        {"world_size", p.order.world_size},
                        {"register_buffers", fo.reader.register_buffers},
                        {"runs", runs}};
    RF_RETURN_IF_ERROR(WriteFileAtomically(a.json, j.dump(2) + "\n"));
  }
  return Status::Ok();
}

}  // namespace

CommandStatus RunReadCommand(int argc, char** argv) {
  const OptionTable<ReadConfig>& table = ReadOptionTable();
  const std::vector<OptionSpec> specs = table.Specs(kReadCommand);
  Result<ParsedOptions> parsed = ParseCommandLine(specs, {argv + 1, argv + argc});
  if (!parsed.ok()) return {parsed.status(), "ringfeed read"};
  if (parsed->help) {
    std::cout << "usage: ringfeed read DATA [options]\n\n" << FormatOptionsHelp(specs);
    return {};
  }
  ReadConfig a;
  for (const auto& [name, value] : parsed->values) {
    const Status st = table.Set(&a, *table.FindByName(name), value, OptionFace::kCommandLine);
    if (!st.ok()) return {st, "ringfeed read"};
  }
  // An option that would do nothing with the others (--node-ranks without --partition node).
  if (Status st = table.RefuseIdle(a, parsed->given, OptionFace::kCommandLine); !st.ok())
    return {st, "ringfeed read"};
  if (a.pipeline.data.empty()) {
    return {Status::Usage("no DATA given: ringfeed read DATA (see --help)"), "ringfeed read"};
  }
  return {Run(a)};
}

}  // namespace rf
