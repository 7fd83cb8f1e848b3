// ringfeed read: drains a dataset through the disk stage alone (io_uring reader -> slot ring ->
// a consumer that releases each slot at once) and reports the rate. This is the disk-stage
// figure that training is measured against. Errors go back to main as a CommandStatus
// (src/commands.h); the read size's rule is the training command's (pipeline/pipeline_config.h).
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "io/file.h"
#include "options/unsigned_flags.h"
#include "pipeline/chunk_feeder.h"
#include "pipeline/pipeline_config.h"
#include "pipeline/slot_ring.h"
#include "pipeline/window_order.h"
#include "src/command_checks.h"
#include "src/commands.h"

namespace po = boost::program_options;

namespace rf {
namespace {

struct ReadArgs {
  std::string dataset;
  std::string io = IoModeName(ReaderOptions{}.mode);
  uint32_t queue_depth = ReaderOptions{}.queue_depth;
  std::string read_size = ReadSizeText(ReaderOptions{}.read_bytes);
  uint32_t slots = StreamingOptions{}.ring_slots;
  bool no_verify = false;
  std::string register_buffers = "on";
  std::string pinned = "auto";
  uint32_t passes = 1;
  std::string order = "stored";
  uint64_t seed = 1;
  uint32_t rank = OrderSettings{}.rank;
  uint32_t world_size = OrderSettings{}.world_size;
  std::string json;
};

struct ReadReport {
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  double seconds = 0;
  double consumer_wait_s = 0;
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
  return r;
}

Status Run(const ReadArgs& a) {
  FeederOptions fo;
  Result<IoMode> io = ParseIoMode(a.io);
  if (!io.ok()) return Status::Usage("--io: " + io.status().message());
  fo.reader.mode = *io;
  RF_ASSIGN_OR_RETURN(fo.reader.read_bytes, ParseReadSize(a.read_size));
  fo.reader.queue_depth = a.queue_depth;
  fo.verify = !a.no_verify;
  if (a.register_buffers != "on" && a.register_buffers != "off")
    return Status::Usage("--register-buffers must be on or off");
  fo.reader.register_buffers = a.register_buffers == "on";
  Result<PinMode> pin = ParsePinMode(a.pinned.c_str());
  if (!pin.ok()) return Status::Usage(pin.status().message());
  if (a.order != "train" && a.order != "stored") {
    return Status::Usage("--order must be stored or train, not \"" + a.order + "\"");
  }
  RF_RETURN_IF_ERROR(CheckRank(a.rank, a.world_size));
  RF_ASSIGN_OR_RETURN(Dataset d, Dataset::Open(a.dataset));
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
  wo.seed = a.seed;
  wo.rank = a.rank;
  wo.world_size = a.world_size;
  const std::vector<uint64_t> order = WindowOrder(d.ChunkSampleCounts(), wo).EpochChunks(0);
  RF_ASSIGN_OR_RETURN(std::unique_ptr<SlotRing> ring,
                      SlotRing::Create(a.slots, d.max_chunk_bytes(), *pin));

  nlohmann::json runs = nlohmann::json::array();
  for (uint32_t pass = 0; pass < a.passes; ++pass) {
    if (pass > 0) {
      RF_ASSIGN_OR_RETURN(ring, SlotRing::Create(a.slots, d.max_chunk_bytes(), *pin));
    }
    std::string backend;
    RF_ASSIGN_OR_RETURN(ReadReport r, Drain(d, order, fo, *ring, &backend));
    const double gbps = static_cast<double>(r.bytes) / r.seconds / 1e9;
    std::printf(
        "ringfeed read: %s: %s in %llu chunks, %.3f s: %.3f GB/s (%.3f GiB/s)  [%s, queue depth "
        "%u, %s reads, %u slots of %s %s (%s in 2 MiB pages), checksums %s]\n",
        a.dataset.c_str(), FormatBytes(r.bytes).c_str(), static_cast<unsigned long long>(r.chunks),
        r.seconds, gbps, gbps * 1e9 / (1u << 30), backend.c_str(), fo.reader.queue_depth,
        FormatBytes(fo.reader.read_bytes).c_str(), ring->slot_count(),
        FormatBytes(ring->slot_bytes()).c_str(), ring->pinned() ? "pinned" : "pageable",
        FormatBytes(ring->huge_page_bytes()).c_str(), fo.verify ? "verified" : "not verified");
    std::fflush(stdout);
    runs.push_back({{"bytes", r.bytes},
                    {"chunks", r.chunks},
                    {"seconds", r.seconds},
                    {"gb_per_s", gbps},
                    {"backend", backend},
                    {"consumer_wait_s", ring->consumer_wait_ns() / 1e9},
                    {"huge_page_bytes", ring->huge_page_bytes()}});
  }
  if (!a.json.empty()) {
    nlohmann::json j = {{"dataset", a.dataset},
                        {"dataset_bytes", d.total_bytes()},
                        {"shards", d.shard_count()},
                        {"io", a.io},
                        {"queue_depth", fo.reader.queue_depth},
                        {"read_bytes", fo.reader.read_bytes},
                        {"slots", ring->slot_count()},
                        {"slot_bytes", ring->slot_bytes()},
                        {"pinned", ring->pinned()},
                        {"verify", fo.verify},
                        {"order", a.order},
                        {"rank", a.rank},
                        {"world_size", a.world_size},
                        {"register_buffers", fo.reader.register_buffers},
                        {"runs", runs}};
    RF_RETURN_IF_ERROR(WriteFileAtomically(a.json, j.dump(2) + "\n"));
  }
  return Status::Ok();
}

}  // namespace

CommandStatus RunReadCommand(int argc, char** argv) {
  ReadArgs a;
  po::options_description opts("ringfeed read DATASET [options]");
  opts.add_options()("help,h", "show this help")(
      "io", po::value(&a.io)->default_value(a.io),
      "direct (io_uring, O_DIRECT), buffered (io_uring, page cache) or pread")(
      "queue-depth", po::value(&a.queue_depth)->default_value(a.queue_depth), "reads in flight")(
      "read-size", po::value(&a.read_size)->default_value(a.read_size),
      "largest single read (a multiple of 4 KiB up to 1 GiB)")(
      "slots", po::value(&a.slots)->default_value(a.slots), "ring slots (one chunk each)")(
      "no-verify", po::bool_switch(&a.no_verify), "skip the per-chunk checksum")(
      "register-buffers", po::value(&a.register_buffers)->default_value(a.register_buffers),
      "register the ring's slots with io_uring once (on) or not (off)")(
      "pinned", po::value(&a.pinned)->default_value(a.pinned),
      "ring memory: auto (pinned if a GPU is present), on, off")(
      "passes", po::value(&a.passes)->default_value(a.passes), "read the dataset this many times")(
      "order", po::value(&a.order)->default_value(a.order),
      "stored (sequential) or train (the chunk order of a training epoch, default shuffle)")(
      "seed", po::value(&a.seed)->default_value(a.seed), "the training seed, for --order train")(
      "rank", po::value(&a.rank)->default_value(a.rank),
      "read only the chunks this rank reads in the epoch (with --world-size)")(
      "world-size", po::value(&a.world_size)->default_value(a.world_size),
      "ranks the epoch is partitioned over")(
      "json", po::value(&a.json),
      "also write the figures to this JSON file (not one of the dataset's files)");
  po::options_description hidden;
  hidden.add_options()("dataset", po::value(&a.dataset));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("dataset", 1);
  po::variables_map vm;
  try {
    const po::parsed_options given =
        po::command_line_parser(argc, argv).options(all).positional(pos).run();
    if (auto negative = NegativeUnsignedFlag(given, all)) {
      return {Status::Usage(*negative), "ringfeed read"};
    }
    po::store(given, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return {Status::Usage(std::string(e.what()) + " (see --help)"), "ringfeed read"};
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return {};
  }
  if (a.dataset.empty()) return {Status::Usage("no DATASET given (see --help)"), "ringfeed read"};
  if (a.passes == 0 || a.slots < 2 || a.queue_depth == 0) {
    return {Status::Usage("--passes and --queue-depth must be >= 1, --slots >= 2"),
            "ringfeed read"};
  }
  return {Run(a)};
}

}  // namespace rf
