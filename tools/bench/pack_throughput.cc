// ringfeed-bench-pack: packed token sequences (pipeline/sequences/sequence_loader.h) from a corpus
// in the page cache, as fast as the consumer takes them: the tokens/s the loader hands out, and
// where the CPU time goes. The consumer does nothing with a batch but take it, so what is measured
// is the loader: its reader, decompression, record walk, packing and copy.
//
//   --make PATH   writes a tokens corpus first (uint16 ids, documents of 1 to 2 x --doc-tokens
//                 ids made of "words" of 1 to 6 ids drawn with a skew, so that lz4 compresses
//                 it as it does tokenized text), --tokens ids, --compress none|lz4|zstd
//   --data PATH   the corpus (after --make: the one it wrote)
//
// It reads the corpus once (into the page cache), opens one loader (buffered reads), takes batches
// for --warmup seconds (its memory faulted in: the host staging area, three shuffle windows of
// chunks, is first written as the chunks come, which in a short run on a corpus smaller than it
// would be every chunk), then runs --rounds rounds of --seconds each, and prints one line a round
// and a JSON summary:
// tokens/s (rows x (L + 1) a batch, as tools/bench/tokens_bench.py counts them), the share of
// the time the consumer waited, the process's CPU seconds per second, the packing thread's (the
// thread named rf-pack; in a build that names none, the busiest) and the busiest threads' CPU
// (from /proc/self/task, by name: rf-read, rf-chunk-stage, rf-copy, rf-pack, rf-pack-help,
// rf-put), each with the tokens it handled per second of its CPU time: a rate per thread that
// a machine's other load does not falsify as it does the wall-clock rate.
//
// --pack-threads N sets the loader's pack_threads option where this build has one (a build
// before it ignores it and says so), so one source file measures a build before and after.
//
// --first-batch N: first N times the first batch, cold (the page cache dropped where this runs as
// root): the loader's construction to its first batch ready; with --trace PREFIX each one's
// timeline (pipeline/stage/trace.h: reads, checksums, decompression, copies, the wait) as
// PREFIX-K.json (--warm: with the corpus in the page cache, the start's own work alone). With
// --rounds 0 nothing else.
//
// Usage: ringfeed-bench-pack [--make PATH --tokens N --compress lz4] --data PATH
//        [--seq 2048] [--batch 16] [--dtype int64|int32] [--device cpu|cuda] [--seconds 4]
//        [--warmup 4]
//        [--rounds 3] [--pack-threads N] [--decode-threads N] [--narrow] [--json OUT]
//
// --narrow (a build that has it): on the host too, the GPU's way of packing (SequenceOptions::
// pack_narrow: the ids packed in their own width, then widened, padded and given position_ids in
// a second pass that a GPU's kernel does); the second pass's time alone is printed, so that the
// packing thread's share of the GPU's way shows on a machine without a GPU.
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "io/codec.h"
#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "io/file.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sequences/sequence_loader.h"
#include "pipeline/stage/trace.h"
// A build with the GPU's way of packing (the ids packed narrow, widened on the device) has these.
#if __has_include("pipeline/output/cuda_sequence_pack.cuh")
#define RF_BENCH_PACK_NARROW 1
#include "pipeline/output/loader_device.h"
#endif

namespace rf {
namespace {

constexpr const char* kTool = "ringfeed-bench-pack";

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double ProcessCpu() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct ThreadTime {
  long tid;
  std::string name;
  double cpu;
};

// Each thread of this process: its name and CPU seconds (user + system).
std::vector<ThreadTime> ThreadCpu() {
  std::vector<ThreadTime> out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    std::vector<std::string> fields;
    while (rest >> field) fields.push_back(field);
    if (fields.size() < 13) continue;
    // After the name: state(0) ... utime(11) stime(12).
    out.push_back({std::stol(e->d_name), text.substr(open + 1, close - open - 1),
                   (std::stod(fields[11]) + std::stod(fields[12])) / tick});
  }
  closedir(d);
  return out;
}

struct Args {
  std::string make, data, compress = "lz4", dtype = "int64", device = "cpu", json;
  uint64_t tokens = 200'000'000;
  uint32_t doc_tokens = 1000, seq = 2048, batch = 16, rounds = 3;
  double seconds = 4, warmup = 4;
  int64_t pack_threads = -1, decode_threads = -1;
  bool narrow = false;
  uint32_t first_batch = 0;  // cold trials of the first batch (0: none)
  bool warm = false;         // the first batch's trials with the corpus in the page cache
  std::string trace;         // their timelines: TRACE-K.json
};

// The page cache dropped (root only); false where it could not be.
bool DropCaches() {
  sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "3\n";
  return static_cast<bool>(f);
}

#if RF_BENCH_PACK_NARROW
// Seconds a batch of WidenSequencesOnHost takes (what the GPU's kernel does; the host does it in
// --narrow runs): rows of seq + 1 uint16 ids, a document about every doc_tokens.
double WidenSeconds(const Args& a) {
  const uint64_t rows = a.batch, row = a.seq + 1, inputs = rows * a.seq;
  std::vector<uint8_t> area(rows * row * 2 + rows * 8 + (inputs + 1) * 4 + 256);
  const size_t lengths_at = (rows * row * 2 + 63) / 64 * 64, cu_at = lengths_at + rows * 8;
  auto* lengths = reinterpret_cast<int64_t*>(area.data() + lengths_at);
  auto* cu = reinterpret_cast<int32_t*>(area.data() + cu_at);
  uint64_t segments = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    lengths[r] = static_cast<int64_t>(row);
    for (uint64_t t = 0; t < a.seq; t += a.doc_tokens)
      cu[segments++] = static_cast<int32_t>(r * a.seq + t);
  }
  cu[segments] = static_cast<int32_t>(inputs);
  std::vector<int64_t> tokens(rows * row), out_lengths(rows), positions(inputs);
  std::vector<int32_t> out_cu(segments + 1);
  LoaderDevice::SequencePut p;
  p.host = area.data();
  p.lengths_at = lengths_at;
  p.cu_at = cu_at;
  p.rows = rows;
  p.row = row;
  p.segments = segments;
  p.tokens = tokens.data();
  p.lengths = out_lengths.data();
  p.cu = out_cu.data();
  p.positions = positions.data();
  const double t0 = Now();
  uint64_t n = 0;
  while (Now() - t0 < 0.5) {
    WidenSequencesOnHost(p);
    ++n;
  }
  return (Now() - t0) / static_cast<double>(n);
}
#endif

Status Make(const Args& a) {
  RF_ASSIGN_OR_RETURN(const CodecSpec codec, ParseCodec(a.compress));
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kTokens;
  spec.sample_dtype = DType::kUInt16;
  spec.has_labels = false;
  WriterOptions o;
  o.codec = codec;
  RF_ASSIGN_OR_RETURN(auto w, DatasetWriter::Create(a.make, spec, o));
  std::mt19937_64 rng(1);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  // Text-like ids: documents made of "words" (runs of 1 to 6 ids) drawn from 20,000 with a skew
  // (the frequent ones dominate), so that lz4 finds repeats as it does in tokenized text.
  std::vector<std::vector<uint16_t>> words(20000);
  for (auto& word : words) {
    word.resize(1 + rng() % 6);
    for (auto& t : word) t = static_cast<uint16_t>(3 + rng() % 31997);
  }
  std::vector<uint16_t> doc;
  uint64_t written = 0;
  while (written < a.tokens) {
    const uint64_t n = std::min<uint64_t>(a.tokens - written, 1 + rng() % (2 * a.doc_tokens));
    doc.clear();
    while (doc.size() < n) {
      const double u = uniform();
      const auto& word = words[static_cast<size_t>(words.size() * u * u * u)];
      doc.insert(doc.end(), word.begin(), word.end());
    }
    doc.resize(n);
    const uint64_t offsets[2] = {0, n};
    RF_RETURN_IF_ERROR(w->AppendRecords(doc.data(), offsets, nullptr, 1));
    written += n;
  }
  return w->Finish();
}

Status SetOption(LoaderOptions* o, const std::string& name, const OptionValue& v) {
  const auto* e = LoaderOptionTable().FindByName(name);
  if (e == nullptr) return Status::NotFound(name, "no such option");
  return LoaderOptionTable().Set(o, *e, v, OptionFace::kPython);
}

int Run(const Args& a) {
  if (!a.make.empty()) {
    const double t0 = Now();
    const Status st = Make(a);
    if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", kTool, st.ToString().c_str());
      return 1;
    }
    std::printf("wrote %s: %llu tokens, %s, in %.1f s\n", a.make.c_str(),
                static_cast<unsigned long long>(a.tokens), a.compress.c_str(), Now() - t0);
  }
  if (a.rounds == 0 && a.first_batch == 0) return 0;  // --make only
  auto d = Dataset::Open(a.data);
  if (!d.ok()) {
    std::fprintf(stderr, "%s: %s\n", kTool, d.status().ToString().c_str());
    return 1;
  }
  // Into the page cache (for the rounds; the first batch's trials drop it).
  for (size_t s = 0; a.rounds > 0 && s < d->shard_count(); ++s) {
    std::ifstream f(d->shard_path(s), std::ios::binary);
    std::vector<char> buf(16 << 20);
    while (f.read(buf.data(), buf.size()) || f.gcount() > 0) {
    }
  }
  const double ratio = static_cast<double>(d->data_bytes()) /
                       static_cast<double>(std::max<uint64_t>(1, d->total_bytes()));
  std::printf("corpus %s: %llu data bytes, %llu stored (ratio %.2f); seq %u, batch %u, %s, %s\n",
              a.data.c_str(), static_cast<unsigned long long>(d->data_bytes()),
              static_cast<unsigned long long>(d->total_bytes()), ratio, a.seq, a.batch,
              a.dtype.c_str(), a.device.c_str());

  LoaderOptions o;
  o.pipeline.data = a.data;
  o.pipeline.device = a.device == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu;
  o.pipeline.order.batch_size = a.batch;
  o.pipeline.order.seed = 1;
  o.pipeline.streaming.io = IoMode::kBuffered;
  if (a.decode_threads >= 0)
    o.pipeline.streaming.decode_threads = static_cast<uint32_t>(a.decode_threads);
  o.output.dtype = a.dtype == "int32" ? DType::kInt32 : DType::kInt64;
  o.sequence.length = a.seq;
  o.sequence.eod_token = 2;
  bool has_pack_threads = true;
  if (a.pack_threads >= 0) {
    const Status st = SetOption(&o, "pack_threads", OptionValue(uint64_t(a.pack_threads)));
    if (st.IsNotFound()) {
      has_pack_threads = false;
      std::printf("(this build has no pack_threads option: --pack-threads ignored)\n");
    } else if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", kTool, st.ToString().c_str());
      return 1;
    }
  }
  if (a.narrow) {
#if RF_BENCH_PACK_NARROW
    o.sequence.pack_narrow = true;
    const double widen = WidenSeconds(a);
    std::printf(
        "--narrow: packed as on a GPU (narrow ids, then widened on the host as the GPU's kernel "
        "does); the widening alone takes %.1f us a batch (%.0fM tokens/s), to take off the "
        "packing thread's time for the host's share of the GPU's way\n",
        widen * 1e6, a.batch * (a.seq + 1.0) / widen / 1e6);
#else
    std::printf("(this build packs one way: --narrow ignored)\n");
#endif
  }
  if (a.first_batch > 0) {
    // The first batch, cold: the loader's construction to its first batch's tokens in hand.
    std::vector<double> times;
    for (uint32_t k = 0; k < a.first_batch; ++k) {
      const bool cold = !a.warm && DropCaches();
      Trace trace;
      if (!a.trace.empty()) Trace::Activate(&trace);
      const double t0 = Now(), cpu0 = ProcessCpu();
      auto l = SequenceLoader::Create({&*d}, SequenceSpecFor(o));
      if (!l.ok()) {
        std::fprintf(stderr, "%s: %s\n", kTool, l.status().ToString().c_str());
        return 1;
      }
      auto b = (*l)->Next();
      if (!b.ok() || !*b) {
        std::fprintf(stderr, "%s: no first batch\n", kTool);
        return 1;
      }
      if (Status st = (*b)->Synchronize(); !st.ok()) return 1;
      times.push_back(Now() - t0);
      const double cpu = ProcessCpu() - cpu0;
      Trace::Activate(nullptr);
      std::printf("first batch %u: %.4f s%s, %.4f CPU seconds\n", k, times.back(),
                  cold ? " (cold)" : " (warm)", cpu);
      if (!a.trace.empty()) {
        b->reset();
        l->reset();
        (void)trace.Write(a.trace + "-" + std::to_string(k) + ".json");
      }
    }
    std::sort(times.begin(), times.end());
    std::printf("first batch: median %.4f s\n", times[times.size() / 2]);
    if (a.rounds == 0 || a.seconds <= 0) return 0;
  }
  nlohmann::json rounds = nlohmann::json::array();
  std::vector<double> rates, packing_rates;
  auto l = SequenceLoader::Create({&*d}, SequenceSpecFor(o));
  if (!l.ok()) {
    std::fprintf(stderr, "%s: %s\n", kTool, l.status().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", (*l)->Describe().c_str());
  // Batches for `seconds`: tokens and batches handed out, or false on an error.
  auto take = [&](double seconds, uint64_t* tokens, uint64_t* batches) {
    const double t0 = Now();
    double t = t0;
    while (t - t0 < seconds) {
      auto b = (*l)->Next();
      if (!b.ok()) {
        std::fprintf(stderr, "%s: %s\n", kTool, b.status().ToString().c_str());
        return false;
      }
      if (!*b) continue;  // an epoch's end
      const auto& v = (*b)->views();
      *tokens += static_cast<uint64_t>(v[0].shape[0] * v[0].shape[1]);
      ++*batches;
      if ((*batches & 15) == 0) t = Now();
    }
    return true;
  };
  // The warm-up: the loader's memory faulted in (the staging area is first written as chunks
  // come; with a corpus smaller than it, that would be every chunk of a short run).
  {
    uint64_t tokens = 0, batches = 0;
    if (!take(a.warmup, &tokens, &batches)) return 1;
  }
  for (uint32_t r = 0; r < a.rounds; ++r) {
    const LoaderStats s0 = (*l)->stats();
    const auto threads0 = ThreadCpu();
    const double cpu0 = ProcessCpu(), t0 = Now();
    uint64_t tokens = 0, batches = 0;
    if (!take(a.seconds, &tokens, &batches)) return 1;
    const double cpu = ProcessCpu() - cpu0, wall = Now() - t0;
    const LoaderStats s1 = (*l)->stats();
    auto threads1 = ThreadCpu();
    std::vector<ThreadTime> busy;
    for (const ThreadTime& t1 : threads1) {
      double before = 0;
      for (const ThreadTime& t0 : threads0)
        if (t0.tid == t1.tid) before = t0.cpu;
      busy.push_back({t1.tid, t1.name, t1.cpu - before});
    }
    std::sort(busy.begin(), busy.end(),
              [](const ThreadTime& x, const ThreadTime& y) { return x.cpu > y.cpu; });
    // The packing thread: the one named so, or in a build that names none the busiest (the
    // worker that gathered, packed and copied every batch).
    ThreadTime packing = busy.empty() ? ThreadTime{0, "", 0} : busy[0];
    for (const ThreadTime& t : busy)
      if (t.name == "rf-pack") packing = t;
    busy.resize(std::min<size_t>(busy.size(), 5));
    const double rate = tokens / wall;
    const double wait = (s1.wait_seconds - s0.wait_seconds) / wall;
    const double decode = s1.decode_busy_seconds - s0.decode_busy_seconds;
    rates.push_back(rate);
    const double per_packing = tokens / std::max(packing.cpu, 1e-9);
    packing_rates.push_back(per_packing);
    std::printf(
        "round %u: %.1fM tokens/s (%llu batches, %.0f/s), consumer waited %.2f, CPU %.2f cores "
        "(%.1fM tokens per CPU-second), chunk stage %.2f cores; the packing thread %.2f cores, "
        "%.0fM tokens per busy second; the busiest threads:",
        r, rate / 1e6, static_cast<unsigned long long>(batches), batches / wall, wait, cpu / wall,
        tokens / std::max(cpu, 1e-9) / 1e6, decode / wall, packing.cpu / wall, per_packing / 1e6);
    nlohmann::json threads = nlohmann::json::array();
    for (const ThreadTime& b : busy) {
      std::printf("\n    %-16s %.2f cores, %.0fM tokens per busy second", b.name.c_str(),
                  b.cpu / wall, tokens / std::max(b.cpu, 1e-9) / 1e6);
      threads.push_back({{"name", b.name}, {"cores", b.cpu / wall}});
    }
    std::printf("\n");
    std::fflush(stdout);
    rounds.push_back({{"tokens_per_s", rate},
                      {"batches", batches},
                      {"wait_share", wait},
                      {"cpu_cores", cpu / wall},
                      {"chunk_stage_cores", decode / wall},
                      {"packing_thread_cores", packing.cpu / wall},
                      {"packing_tokens_per_busy_s", per_packing},
                      {"busiest_threads", threads}});
  }
  std::sort(rates.begin(), rates.end());
  std::sort(packing_rates.begin(), packing_rates.end());
  const double median = rates[rates.size() / 2];
  const double packing_median = packing_rates[packing_rates.size() / 2];
  std::printf("median %.1fM tokens/s; the packing thread %.0fM tokens per busy second\n",
              median / 1e6, packing_median / 1e6);
  if (!a.json.empty()) {
    nlohmann::json doc = {{"data", a.data},
                          {"seq", a.seq},
                          {"batch", a.batch},
                          {"dtype", a.dtype},
                          {"device", a.device},
                          {"pack_threads", has_pack_threads ? a.pack_threads : -2},
                          {"narrow", a.narrow},
                          {"codec_ratio", ratio},
                          {"median_tokens_per_s", median},
                          {"median_packing_tokens_per_busy_s", packing_median},
                          {"rounds", rounds}};
    const Status st = WriteFileAtomically(a.json, doc.dump(2) + "\n");
    if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", kTool, st.ToString().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace rf

int main(int argc, char** argv) {
  rf::Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", rf::kTool, k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--make")
      a.make = next();
    else if (k == "--data")
      a.data = next();
    else if (k == "--tokens")
      a.tokens = std::stoull(next());
    else if (k == "--doc-tokens")
      a.doc_tokens = static_cast<uint32_t>(std::stoul(next()));
    else if (k == "--compress")
      a.compress = next();
    else if (k == "--seq")
      a.seq = static_cast<uint32_t>(std::stoul(next()));
    else if (k == "--batch")
      a.batch = static_cast<uint32_t>(std::stoul(next()));
    else if (k == "--dtype")
      a.dtype = next();
    else if (k == "--device")
      a.device = next();
    else if (k == "--seconds")
      a.seconds = std::stod(next());
    else if (k == "--warmup")
      a.warmup = std::stod(next());
    else if (k == "--rounds")
      a.rounds = static_cast<uint32_t>(std::stoul(next()));
    else if (k == "--pack-threads")
      a.pack_threads = std::stoll(next());
    else if (k == "--decode-threads")
      a.decode_threads = std::stoll(next());
    else if (k == "--json")
      a.json = next();
    else if (k == "--narrow")
      a.narrow = true;
    else if (k == "--first-batch")
      a.first_batch = static_cast<uint32_t>(std::stoul(next()));
    else if (k == "--trace")
      a.trace = next();
    else if (k == "--warm")
      a.warm = true;
    else {
      std::fprintf(stderr, "%s: unknown argument %s (see the file's head)\n", rf::kTool, k.c_str());
      return 2;
    }
  }
  if (a.data.empty()) a.data = a.make;
  if (a.data.empty()) {
    std::fprintf(stderr, "%s: --data or --make PATH\n", rf::kTool);
    return 2;
  }
  return rf::Run(a);
}
