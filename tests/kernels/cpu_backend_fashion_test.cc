// CpuBackend learns real data: a few hundred SGD steps on Fashion-MNIST (Debian's
// dataset-fashion-mnist) with the default model must clearly lower the loss. Skips where the
// dataset is not installed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "kernels/cpu_backend.h"
#include "tests/kernels/fashion_mnist.h"

namespace rf {
namespace {

constexpr uint32_t kSamples = 12800, kBatch = 64, kSteps = 300, kWindow = 50;

TEST(CpuBackendFashionMnist, ThreeHundredStepsCutTheLossAndLearnTheClasses) {
  auto data = testing::LoadFashionMnist(testing::FashionMnistDir(), "train", kSamples);
  if (!data.ok() && data.status().IsNotFound()) {
    GTEST_SKIP() << "no Fashion-MNIST: " << data.status().ToString();
  }
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  ASSERT_EQ(data->count, kSamples);

  ModelConfig c;  // the default model (conv 32/64/128, hidden 256) on 1x28x28, 10 classes
  c.channels = 1;
  c.height = data->rows;
  c.width = data->cols;
  c.classes = 10;
  double sum = 0, sum2 = 0;
  for (uint8_t v : data->pixels) {
    sum += v;
    sum2 += static_cast<double>(v) * v;
  }
  const double mean = sum / data->pixels.size();
  const Normalization norm{
      {static_cast<float>(mean)},
      {static_cast<float>(std::sqrt(sum2 / data->pixels.size() - mean * mean))}};
  auto be = CpuBackend::Create(c, norm, kBatch, InitialParameters(c, 1));
  ASSERT_TRUE(be.ok()) << be.status().ToString();

  const OptimizerConfig sgd{0.01f, 0.9f, 5e-4f};
  const size_t sample_bytes = size_t{c.height} * c.width;
  StepStats first, last;
  for (uint32_t step = 0; step < kSteps; ++step) {
    const size_t at = size_t{step} * kBatch % kSamples;
    const Batch batch{data->pixels.data() + at * sample_bytes, DType::kUInt8,
                      data->labels.data() + at, DType::kUInt8, kBatch};
    ASSERT_TRUE((*be)->TrainStep(batch, sgd).ok());
    const StepStats s = (*be)->TakeTrainStats();
    StepStats* window = step < kWindow ? &first : step >= kSteps - kWindow ? &last : nullptr;
    if (window == nullptr) continue;
    window->loss_sum += s.loss_sum;
    window->correct += s.correct;
    window->samples += s.samples;
  }
  EXPECT_LT(last.mean_loss(), 0.6 * first.mean_loss())
      << "first " << first.mean_loss() << " last " << last.mean_loss();
  EXPECT_GT(last.accuracy(), 0.7) << "accuracy over the last " << kWindow << " steps";
  std::printf("loss %.3f -> %.3f, accuracy %.3f -> %.3f\n", first.mean_loss(), last.mean_loss(),
              first.accuracy(), last.accuracy());
}

}  // namespace
}  // namespace rf
