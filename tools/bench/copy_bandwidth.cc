// ringfeed-bench-h2d: host-to-device copy bandwidth, the PCIe ceiling the streaming pipeline's
// copies are measured against. One host buffer of --bytes is copied into one device buffer of
// the same size in --chunk pieces (4 MiB: ringfeed's chunk size) with cudaMemcpyAsync, the
// pieces dealt round-robin over --streams non-blocking streams. One untimed pass, then --repeat
// timed passes, each from an idle device to all streams synchronized (steady_clock), so launch
// costs count as they do in the pipeline.
//
// The host buffer is pinned (cudaMallocHost: the GPU's DMA engines read it directly) or pageable
// (a std::vector, written first so its pages exist; the driver stages it through its own pinned
// buffers, and cudaMemcpyAsync from it does not overlap with the host).
//
// Reports per kind of memory: the median and best pass in GB/s (1e9 bytes per second).
//
//   ringfeed-bench-h2d [--bytes SIZE] [--chunk SIZE] [--streams K] [--repeat N]
//                      [--memory pinned|pageable|both] [--json FILE]
// Defaults: 1GiB, 4MiB, 2, 5, both. Exit status: 0 done, 1 no GPU or a CUDA failure, 2 usage.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/units.h"
#include "cuda/check.h"
#include "cuda/handles.h"
#include "tools/bench/bench_common.h"

namespace rf {
namespace {

struct Flags {
  uint64_t bytes = uint64_t{1} << 30, chunk = uint64_t{4} << 20;
  uint32_t streams = 2, repeat = 5;
  bool pinned = true, pageable = true;
  std::string json;
};

struct Measurement {
  std::string memory;
  std::vector<double> gb_per_s;  // one per timed pass, in order
  double median = 0, best = 0;
};

// One pass: every chunk of `host` to the same place in `device`, chunk i on stream i % K.
Result<double> TimedPass(const uint8_t* host, const cuda::DeviceBuffer& device,
                         const std::vector<cuda::CudaStream>& streams, uint64_t chunk) {
  const uint64_t bytes = device.bytes();
  RF_CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  size_t i = 0;
  for (uint64_t at = 0; at < bytes; at += chunk, ++i) {
    RF_CUDA_CHECK(cudaMemcpyAsync(device.as<uint8_t>() + at, host + at, std::min(chunk, bytes - at),
                                  cudaMemcpyHostToDevice, streams[i % streams.size()].get()));
  }
  for (const cuda::CudaStream& s : streams) RF_CUDA_CHECK(cudaStreamSynchronize(s.get()));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(bytes) / s / 1e9;
}

Result<Measurement> Measure(const std::string& memory, const uint8_t* host,
                            const cuda::DeviceBuffer& device,
                            const std::vector<cuda::CudaStream>& streams, const Flags& f) {
  RF_ASSIGN_OR_RETURN(double warm, TimedPass(host, device, streams, f.chunk));
  (void)warm;  // the first pass pays for lazy set-up (page tables, staging buffers)
  Measurement m;
  m.memory = memory;
  for (uint32_t r = 0; r < f.repeat; ++r) {
    RF_ASSIGN_OR_RETURN(double gbs, TimedPass(host, device, streams, f.chunk));
    m.gb_per_s.push_back(gbs);
  }
  std::vector<double> sorted = m.gb_per_s;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  m.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  m.best = sorted.back();
  return m;
}

// "4 MiB" for whole MiB (the usual chunk sizes), FormatBytes' "1.50 KiB" otherwise.
std::string SizeName(uint64_t bytes) {
  const uint64_t mib = uint64_t{1} << 20;
  if (bytes % mib == 0) return std::to_string(bytes / mib) + " MiB";
  return FormatBytes(bytes);
}

Result<std::vector<Measurement>> Run(const Flags& f) {
  RF_CUDA_CHECK(cudaSetDevice(0));
  RF_ASSIGN_OR_RETURN(auto device, cuda::DeviceBuffer::Allocate(f.bytes, "copy target"));
  std::vector<cuda::CudaStream> streams;
  for (uint32_t i = 0; i < f.streams; ++i) {
    RF_ASSIGN_OR_RETURN(auto s, cuda::CreateStream());
    streams.push_back(std::move(s));
  }
  std::vector<Measurement> out;
  if (f.pinned) {
    RF_ASSIGN_OR_RETURN(auto pinned, cuda::PinnedBuffer::Allocate(f.bytes, "pinned source"));
    std::memset(pinned.as<uint8_t>(), 1, f.bytes);
    RF_ASSIGN_OR_RETURN(Measurement m, Measure("pinned", pinned.as<uint8_t>(), device, streams, f));
    out.push_back(std::move(m));
  }
  if (f.pageable) {
    const std::vector<uint8_t> pageable(f.bytes, 1);  // value-initialized: every page written
    RF_ASSIGN_OR_RETURN(Measurement m, Measure("pageable", pageable.data(), device, streams, f));
    out.push_back(std::move(m));
  }
  return out;
}

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "ringfeed-bench-h2d: %s\nusage: ringfeed-bench-h2d [--bytes SIZE] [--chunk SIZE] "
               "[--streams K] [--repeat N] [--memory pinned|pageable|both] [--json FILE]\n",
               why.c_str());
  std::exit(2);
}

uint32_t Number(const char* flag, const char* v, unsigned long max) {
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n == 0 || n > max) {
    Usage(std::string(flag) + " takes a number from 1 to " + std::to_string(max) + ", not '" + v +
          "'");
  }
  return static_cast<uint32_t>(n);
}

uint64_t Size(const char* flag, const char* v) {
  Result<uint64_t> n = ParseByteSize(v);
  if (!n.ok()) Usage(std::string(flag) + ": " + n.status().message());
  if (*n == 0) Usage(std::string(flag) + " must be more than 0 bytes");
  return *n;
}

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") Usage("host-to-device copy bandwidth");
    if (i + 1 >= argc) Usage(flag + " needs a value");
    const char* v = argv[++i];
    if (flag == "--bytes") {
      f.bytes = Size("--bytes", v);
    } else if (flag == "--chunk") {
      f.chunk = Size("--chunk", v);
    } else if (flag == "--streams") {
      f.streams = Number("--streams", v, 64);
    } else if (flag == "--repeat") {
      f.repeat = Number("--repeat", v, 1000);
    } else if (flag == "--memory") {
      const std::string m = v;
      if (m != "pinned" && m != "pageable" && m != "both") {
        Usage("--memory takes pinned, pageable or both, not '" + m + "'");
      }
      f.pinned = m != "pageable";
      f.pageable = m != "pinned";
    } else if (flag == "--json") {
      f.json = v;
    } else {
      Usage("unknown flag " + flag);
    }
  }
  if (f.chunk > f.bytes) Usage("--chunk is larger than --bytes");
  return f;
}

int Main(int argc, char** argv) {
  const Flags f = Parse(argc, argv);
  if (!HaveCudaDevice("ringfeed-bench-h2d")) return 1;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) prop.name[0] = '\0';
  Result<std::vector<Measurement>> results = Run(f);
  if (!results.ok()) {
    std::fprintf(stderr, "ringfeed-bench-h2d: %s\n", results.status().ToString().c_str());
    return 1;
  }
  nlohmann::json json_results = nlohmann::json::array();
  for (const Measurement& m : *results) {
    std::printf("%-8s %s x %u streams: %.1f GB/s median, %.1f best\n", m.memory.c_str(),
                SizeName(f.chunk).c_str(), f.streams, m.median, m.best);
    json_results.push_back({{"memory", m.memory},
                            {"gb_per_s_median", m.median},
                            {"gb_per_s_best", m.best},
                            {"runs", m.gb_per_s}});
  }
  std::fflush(stdout);
  if (!f.json.empty()) {
    const nlohmann::json doc = {{"tool", "ringfeed-bench-h2d"},
                                {"device", prop.name},
                                {"bytes", f.bytes},
                                {"chunk", f.chunk},
                                {"streams", f.streams},
                                {"repeat", f.repeat},
                                {"results", json_results}};
    if (!WriteBenchJson(f.json, doc, "ringfeed-bench-h2d")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace rf

int main(int argc, char** argv) { return rf::Main(argc, argv); }
