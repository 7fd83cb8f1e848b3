// ringfeed-bench-compute: how fast the CUDA backend trains when data costs nothing. Random uint8
// batches of CIFAR shape (3x32x32, 10 classes) are made once and kept on the GPU, several distinct
// ones rotated so no cache holds the next step's input; the default model (conv 32/64/128,
// hidden 256) takes warm-up steps, then N timed steps between two CUDA events.
//
// Reports per batch size: samples/s, ms/step, the GPU memory the backend and its batches hold
// (cudaMemGetInfo's free bytes before creation minus after the timed steps) and whether TF32 is
// on. The ceiling the streaming pipeline is measured against.
//
//   ringfeed-bench-compute [--batch N]... [--steps N] [--warmup N] [--tf32 on|off]
//                          [--bf16 on|off] [--graph on|off] [--json FILE]
// Without --batch: 128, 256 and 1024. Exit status: 0 done, 1 no GPU or a CUDA failure, 2 usage.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "kernels/cuda_backend.h"
#include "tools/bench/bench_common.h"

namespace rf {
namespace {

struct Flags {
  std::vector<uint32_t> batches;
  uint32_t steps = 200, warmup = 20;
  bool tf32 = true, graph = false, bf16 = false;
  std::string json;
};

constexpr int kDistinctBatches = 4;

struct Measurement {
  uint32_t batch = 0, steps = 0;
  double ms_per_step = 0, samples_per_s = 0, mean_loss = 0;
  size_t gpu_bytes = 0;
  std::string describe;
};

Result<Measurement> Measure(uint32_t batch, const Flags& f) {
  ModelConfig c;  // the default model on CIFAR-shaped input
  const size_t sample_bytes = size_t{c.channels} * c.height * c.width;
  size_t free_before = 0, free_after = 0, total = 0;
  RF_CUDA_CHECK(cudaDeviceSynchronize());
  RF_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));

  CudaBackendOptions o;
  o.tf32 = f.tf32;
  o.cuda_graph = f.graph;
  o.bf16 = f.bf16;
  const Normalization norm{{125.f, 123.f, 114.f}, {63.f, 62.f, 66.f}};
  RF_ASSIGN_OR_RETURN(auto backend,
                      CudaBackend::Create(c, norm, batch, InitialParameters(c, 1), o));

  // Distinct random batches, made on the host once and copied to the GPU.
  std::mt19937_64 rng(batch);
  std::vector<uint8_t> samples(batch * sample_bytes), labels(batch);
  std::vector<cuda::DeviceBuffer> dev_samples, dev_labels;
  std::vector<Batch> refs;
  for (int i = 0; i < kDistinctBatches; ++i) {
    for (uint8_t& v : samples) v = static_cast<uint8_t>(rng());
    for (uint8_t& l : labels) l = static_cast<uint8_t>(rng() % c.classes);
    RF_ASSIGN_OR_RETURN(auto s, cuda::DeviceBuffer::Allocate(samples.size(), "bench samples"));
    RF_ASSIGN_OR_RETURN(auto l, cuda::DeviceBuffer::Allocate(labels.size(), "bench labels"));
    RF_CUDA_CHECK(cudaMemcpy(s.data(), samples.data(), samples.size(), cudaMemcpyHostToDevice));
    RF_CUDA_CHECK(cudaMemcpy(l.data(), labels.data(), labels.size(), cudaMemcpyHostToDevice));
    refs.push_back({s.data(), DType::kUInt8, l.data(), DType::kUInt8, batch});
    dev_samples.push_back(std::move(s));
    dev_labels.push_back(std::move(l));
  }

  const OptimizerConfig sgd;
  for (uint32_t i = 0; i < f.warmup; ++i) {
    RF_RETURN_IF_ERROR(backend->TrainStep(refs[i % kDistinctBatches], sgd));
  }
  (void)backend->TakeTrainStats();  // waits for the warm-up
  RF_ASSIGN_OR_RETURN(auto start, cuda::CreateEvent(/*timing=*/true));
  RF_ASSIGN_OR_RETURN(auto stop, cuda::CreateEvent(/*timing=*/true));
  // The timed steps alone are what a profiler started with --profile-from-start off sees
  // (tools/bench/ncu_kernels.py).
  RF_CUDA_CHECK(cudaProfilerStart());
  RF_CUDA_CHECK(cudaEventRecord(start.get(), backend->stream()));
  for (uint32_t i = 0; i < f.steps; ++i) {
    RF_RETURN_IF_ERROR(backend->TrainStep(refs[i % kDistinctBatches], sgd));
  }
  RF_CUDA_CHECK(cudaEventRecord(stop.get(), backend->stream()));
  RF_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  RF_CUDA_CHECK(cudaProfilerStop());
  float ms = 0;
  RF_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  const StepStats stats = backend->TakeTrainStats();
  RF_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));

  Measurement m;
  m.batch = batch;
  m.steps = f.steps;
  m.ms_per_step = ms / f.steps;
  m.samples_per_s = 1000.0 * f.steps * batch / ms;
  m.mean_loss = stats.mean_loss();
  m.gpu_bytes = free_before > free_after ? free_before - free_after : 0;
  m.describe = backend->Describe();
  return m;
}

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "ringfeed-bench-compute: %s\nusage: ringfeed-bench-compute [--batch N]... "
               "[--steps N] [--warmup N] [--tf32 on|off] [--bf16 on|off] [--graph on|off] "
               "[--json FILE]\n",
               why.c_str());
  std::exit(2);
}

uint32_t PositiveNumber(const char* flag, const char* v) {
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n == 0 || n > 1u << 20) {
    Usage(std::string(flag) + " takes a number from 1 to 1048576, not '" + v + "'");
  }
  return static_cast<uint32_t>(n);
}

bool OnOff(const char* flag, const std::string& v) {
  if (v == "on") return true;
  if (v == "off") return false;
  Usage(std::string(flag) + " takes on or off, not '" + v + "'");
}

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") Usage("the CUDA backend's training throughput");
    if (i + 1 >= argc) Usage(flag + " needs a value");
    const char* v = argv[++i];
    if (flag == "--batch") {
      f.batches.push_back(PositiveNumber("--batch", v));
    } else if (flag == "--steps") {
      f.steps = PositiveNumber("--steps", v);
    } else if (flag == "--warmup") {
      f.warmup = PositiveNumber("--warmup", v);
    } else if (flag == "--tf32") {
      f.tf32 = OnOff("--tf32", v);
    } else if (flag == "--bf16") {
      f.bf16 = OnOff("--bf16", v);
    } else if (flag == "--graph") {
      f.graph = OnOff("--graph", v);
    } else if (flag == "--json") {
      f.json = v;
    } else {
      Usage("unknown flag " + flag);
    }
  }
  if (f.batches.empty()) f.batches = {128, 256, 1024};
  return f;
}

int Main(int argc, char** argv) {
  const Flags f = Parse(argc, argv);
  if (!HaveCudaDevice("ringfeed-bench-compute")) return 1;
  nlohmann::json results = nlohmann::json::array();
  std::string describe;
  for (uint32_t batch : f.batches) {
    Result<Measurement> m = Measure(batch, f);
    if (!m.ok()) {
      std::fprintf(stderr, "ringfeed-bench-compute: batch %u: %s\n", batch,
                   m.status().ToString().c_str());
      return 1;
    }
    if (describe.empty()) {
      describe = m->describe;
      std::printf("%s\n", describe.c_str());
    }
    std::printf(
        "batch %5u: %10.0f samples/s  %8.3f ms/step  GPU memory %8.1f MiB  tf32 %s  bf16 %s  "
        "graph %s  "
        "(%u steps, mean loss %.4f)\n",
        batch, m->samples_per_s, m->ms_per_step, static_cast<double>(m->gpu_bytes) / (1 << 20),
        f.tf32 ? "on" : "off", f.bf16 ? "on" : "off", f.graph ? "on" : "off", m->steps,
        m->mean_loss);
    std::fflush(stdout);
    results.push_back({{"batch", batch},
                       {"steps", m->steps},
                       {"samples_per_s", m->samples_per_s},
                       {"ms_per_step", m->ms_per_step},
                       {"gpu_memory_bytes", m->gpu_bytes},
                       {"mean_loss", m->mean_loss}});
  }
  if (!f.json.empty()) {
    const nlohmann::json doc = {{"tool", "ringfeed-bench-compute"},
                                {"tf32", f.tf32},
                                {"bf16", f.bf16},
                                {"cuda_graph", f.graph},
                                {"warmup", f.warmup},
                                {"backend", describe},
                                {"results", results}};
    if (!WriteBenchJson(f.json, doc, "ringfeed-bench-compute")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace rf

int main(int argc, char** argv) { return rf::Main(argc, argv); }
