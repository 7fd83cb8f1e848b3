// Training throughput of CpuBackend on Fashion-MNIST: one pass over the 60000 training images
// with the default model, reported in samples/s. Not a test; run by hand:
//   build/tests/kernels_cpu_backend_bench [batch] [samples (0: all)] [dataset dir]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "kernels/cpu_backend.h"
#include "tests/kernels/fashion_mnist.h"

int main(int argc, char** argv) {
  const uint32_t batch = argc > 1 ? static_cast<uint32_t>(std::atoi(argv[1])) : 128;
  const uint32_t limit = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 0;
  const std::string dir = argc > 3 ? argv[3] : rf::testing::FashionMnistDir();
  auto data = rf::testing::LoadFashionMnist(dir, "train", limit);
  if (!data.ok()) {
    std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
    return 1;
  }
  rf::ModelConfig c;
  c.channels = 1;
  c.height = data->rows;
  c.width = data->cols;
  c.classes = 10;
  // The training set's statistics, rounded: the bench measures speed, not accuracy.
  const rf::Normalization norm{{72.9f}, {90.0f}};
  auto be = rf::CpuBackend::Create(c, norm, batch, rf::InitialParameters(c, 1));
  if (!be.ok()) {
    std::fprintf(stderr, "%s\n", be.status().ToString().c_str());
    return 1;
  }
  const size_t sample_bytes = size_t{c.height} * c.width;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t at = 0; at < data->count; at += batch) {
    const uint32_t n = std::min(batch, data->count - at);
    const rf::Batch b{data->pixels.data() + at * sample_bytes, rf::DType::kUInt8,
                      data->labels.data() + at, rf::DType::kUInt8, n};
    const rf::Status st = (*be)->TrainStep(b, rf::OptimizerConfig{});
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const rf::StepStats stats = (*be)->TakeTrainStats();
  std::printf("%u samples, batch %u: %.1f s, %.0f samples/s; loss %.4f, accuracy %.4f\n",
              data->count, batch, s, data->count / s, stats.mean_loss(), stats.accuracy());
  return 0;
}
