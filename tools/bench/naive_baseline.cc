// ringfeed-bench-naive: the loader people write first, the baseline ringfeed's pipeline is
// measured against. One thread, nothing overlapped: for each batch in stored order, pread its
// samples and labels (buffered, through the page cache, into pageable std::vectors; a batch that
// straddles chunks is read piece by piece; checksums are not verified), copy them synchronously
// to the GPU, run one TrainStep of ringfeed's CUDA backend and wait for it, then read the next.
//
// The backend is built as `ringfeed train` builds it (src/train_engine.cc, train_command.cc): the
// header's shape, classes and statistics, the default model and SGD, parameters seeded with 1,
// bf16 with TF32, CUDA graphs on. Its creation is not timed.
//
// Reports samples/s, GB/s read (sample and label bytes over the loop's wall time), seconds, the
// time to the first batch on the GPU (from the loop's start, as the trainer counts it), the mean
// train loss over the run (TakeTrainStats), and the wall time split into read / copy / step
// (steady_clock around each; step includes waiting for it).
//
//   ringfeed-bench-naive --data FILE.rfd [--batch-size N] [--max-samples N] [--seconds S]
//                        [--json FILE]
// Default: one epoch, batches of 256. Exit status: 0 done, 1 no GPU, a bad dataset or a CUDA
// failure, 2 usage.
#include <cuda_runtime_api.h>
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "io/dataset.h"
#include "io/file.h"
#include "kernels/cuda_backend.h"
#include "tools/bench/bench_common.h"

namespace rf {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string data, json;
  uint32_t batch_size = 256;
  uint64_t max_samples = 0;  // 0: the whole epoch
  double seconds = 0;        // 0: no limit
};

struct Report {
  uint64_t samples = 0, steps = 0, bytes_read = 0;
  double seconds = 0, read_s = 0, copy_s = 0, step_s = 0, first_batch_ms = -1;
  StepStats train;
};

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Result<Report> Run(const Flags& f) {
  RF_ASSIGN_OR_RETURN(Dataset data, Dataset::Open(f.data));
  const format::Header& h = data.header();
  std::vector<File> shards;
  for (size_t s = 0; s < data.shard_count(); ++s) {
    RF_ASSIGN_OR_RETURN(File file, File::Open(data.shard_path(s), O_RDONLY));
    shards.push_back(std::move(file));
  }
  ModelConfig config;  // the default model, as `ringfeed train` without --conv/--hidden
  config.channels = h.channels;
  config.height = h.height;
  config.width = h.width;
  config.classes = h.num_classes;
  RF_RETURN_IF_ERROR(config.Validate());
  Normalization norm;
  norm.mean.assign(h.mean.begin(), h.mean.begin() + h.channels);
  norm.stddev.assign(h.stddev.begin(), h.stddev.begin() + h.channels);
  CudaBackendOptions options;  // `ringfeed train`'s defaults: --precision bf16, CUDA graphs on
  options.tf32 = true;
  options.bf16 = true;
  options.cuda_graph = true;
  RF_CUDA_CHECK(cudaSetDevice(0));
  RF_ASSIGN_OR_RETURN(auto backend, CudaBackend::Create(config, norm, f.batch_size,
                                                        InitialParameters(config, 1), options));
  const cudaStream_t stream = backend->stream();

  const size_t sample_bytes = h.SampleBytes(), label_bytes = h.LabelBytes();
  std::vector<uint8_t> samples(size_t{f.batch_size} * sample_bytes);
  std::vector<uint8_t> labels(size_t{f.batch_size} * label_bytes);
  RF_ASSIGN_OR_RETURN(auto dev_samples, cuda::DeviceBuffer::Allocate(samples.size(), "samples"));
  RF_ASSIGN_OR_RETURN(auto dev_labels, cuda::DeviceBuffer::Allocate(labels.size(), "labels"));
  const Batch ref{dev_samples.data(), h.sample_dtype, dev_labels.data(), h.label_dtype, 0};
  const OptimizerConfig sgd;

  uint64_t end = data.sample_count();
  if (f.max_samples != 0) end = std::min(end, f.max_samples);
  Report r;
  size_t chunk = 0;  // the chunk holding sample `next`: batches go in stored order
  const Clock::time_point t0 = Clock::now();
  for (uint64_t next = 0; next < end;) {
    if (f.seconds > 0 && Since(t0) >= f.seconds) break;
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(f.batch_size, end - next));

    Clock::time_point t = Clock::now();
    for (uint32_t done = 0; done < n;) {
      const ChunkLocation& c = data.chunk(chunk);
      const uint64_t in_chunk = next + done - c.first_sample;  // global (a directory's too)
      const uint32_t take =
          static_cast<uint32_t>(std::min<uint64_t>(n - done, c.entry.sample_count - in_chunk));
      const File& file = shards[c.shard];
      RF_RETURN_IF_ERROR(file.ReadAt(samples.data() + done * sample_bytes, take * sample_bytes,
                                     c.entry.offset + in_chunk * sample_bytes));
      RF_RETURN_IF_ERROR(
          file.ReadAt(labels.data() + done * label_bytes, take * label_bytes,
                      c.entry.offset + data.LabelsOffset(chunk) + in_chunk * label_bytes));
      done += take;
      if (in_chunk + take == c.entry.sample_count) ++chunk;
    }
    r.read_s += Since(t);
    r.bytes_read += n * (sample_bytes + label_bytes);

    // Synchronous copies, queued on the backend's stream: cudaMemcpy on the legacy default
    // stream would not be ordered before the step (the backend's stream is non-blocking), and
    // from pageable memory it may return before the DMA has finished.
    t = Clock::now();
    RF_CUDA_CHECK(cudaMemcpyAsync(dev_samples.data(), samples.data(), n * sample_bytes,
                                  cudaMemcpyHostToDevice, stream));
    RF_CUDA_CHECK(cudaMemcpyAsync(dev_labels.data(), labels.data(), n * label_bytes,
                                  cudaMemcpyHostToDevice, stream));
    RF_CUDA_CHECK(cudaStreamSynchronize(stream));
    r.copy_s += Since(t);
    if (r.first_batch_ms < 0) r.first_batch_ms = 1000 * Since(t0);

    t = Clock::now();
    Batch batch = ref;
    batch.n = n;
    RF_RETURN_IF_ERROR(backend->TrainStep(batch, sgd));
    RF_CUDA_CHECK(cudaStreamSynchronize(stream));
    r.step_s += Since(t);
    next += n;
    r.samples += n;
    ++r.steps;
  }
  r.seconds = Since(t0);
  r.train = backend->TakeTrainStats();
  return r;
}

// 1234567 -> "1,234,567".
std::string Grouped(double v) {
  std::string digits = std::to_string(static_cast<unsigned long long>(v + 0.5)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "ringfeed-bench-naive: %s\nusage: ringfeed-bench-naive --data FILE.rfd "
               "[--batch-size N] [--max-samples N] [--seconds S] [--json FILE]\n",
               why.c_str());
  std::exit(2);
}

uint64_t Number(const char* flag, const char* v, uint64_t max) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*v == '\0' || *v == '-' || *end != '\0' || n == 0 || n > max) {
    Usage(std::string(flag) + " takes a number from 1 to " + std::to_string(max) + ", not '" + v +
          "'");
  }
  return n;
}

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") Usage("a synchronous read, copy, step loop");
    if (i + 1 >= argc) Usage(flag + " needs a value");
    const char* v = argv[++i];
    if (flag == "--data") {
      f.data = v;
    } else if (flag == "--batch-size") {
      f.batch_size = static_cast<uint32_t>(Number("--batch-size", v, 1u << 20));
    } else if (flag == "--max-samples") {
      f.max_samples = Number("--max-samples", v, uint64_t{1} << 62);
    } else if (flag == "--seconds") {
      char* end = nullptr;
      f.seconds = std::strtod(v, &end);
      if (*v == '\0' || *end != '\0' || !(f.seconds > 0 && f.seconds < 1e9)) {
        Usage(std::string("--seconds takes a positive number, not '") + v + "'");
      }
    } else if (flag == "--json") {
      f.json = v;
    } else {
      Usage("unknown flag " + flag);
    }
  }
  if (f.data.empty()) Usage("--data is required");
  return f;
}

int Main(int argc, char** argv) {
  const Flags f = Parse(argc, argv);
  if (!HaveCudaDevice("ringfeed-bench-naive")) return 1;
  Result<Report> r = Run(f);
  if (!r.ok()) {
    std::fprintf(stderr, "ringfeed-bench-naive: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const double secs = std::max(r->seconds, 1e-9), samples_per_s = r->samples / secs;
  const double gb_per_s = r->bytes_read / secs / 1e9;
  std::printf("naive: %s samples/s, %.2f GB/s, %.1f s (read %.0f%%, copy %.0f%%, step %.0f%%)\n",
              Grouped(samples_per_s).c_str(), gb_per_s, r->seconds, 100 * r->read_s / secs,
              100 * r->copy_s / secs, 100 * r->step_s / secs);
  std::printf("naive: %llu samples in %llu steps, first batch after %.1f ms, train loss %.4f\n",
              static_cast<unsigned long long>(r->samples),
              static_cast<unsigned long long>(r->steps), r->first_batch_ms, r->train.mean_loss());
  std::fflush(stdout);
  if (!f.json.empty()) {
    const nlohmann::json doc = {{"tool", "ringfeed-bench-naive"},
                                {"data", f.data},
                                {"batch_size", f.batch_size},
                                {"samples", r->samples},
                                {"steps", r->steps},
                                {"seconds", r->seconds},
                                {"samples_per_s", samples_per_s},
                                {"bytes_read", r->bytes_read},
                                {"gb_per_s", gb_per_s},
                                {"first_batch_ms", r->first_batch_ms},
                                {"train_loss", r->train.mean_loss()},
                                {"train_accuracy", r->train.accuracy()},
                                {"read_s", r->read_s},
                                {"copy_s", r->copy_s},
                                {"step_s", r->step_s}};
    if (!WriteBenchJson(f.json, doc, "ringfeed-bench-naive")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace rf

int main(int argc, char** argv) { return rf::Main(argc, argv); }
