// The CPU layer primitives on inputs whose values encode their own position, so a misplaced
// element shows as a wrong number rather than a slightly wrong gradient.
#include "kernels/cpu_layers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace rf::cpu {
namespace {

// in[c][img][y][x] = 1000 c + 100 img + 10 y + x + 1 (never 0, so padding zeros stand out).
std::vector<float> PositionCoded(const ConvShape& s) {
  std::vector<float> v;
  for (uint32_t c = 0; c < s.in_channels; ++c)
    for (uint32_t img = 0; img < s.n; ++img)
      for (uint32_t y = 0; y < s.height; ++y)
        for (uint32_t x = 0; x < s.width; ++x) v.push_back(1000.f * c + 100 * img + 10 * y + x + 1);
  return v;
}

TEST(CpuIm2Col, PlacesEachShiftedPixelAndZeroPadsTheBorder) {
  const ConvShape s{2, 1, 2, 3, 4, 2};
  const std::vector<float> in = PositionCoded(s);
  std::vector<float> col(s.col_rows() * s.ld(), -1.f);
  Im2Col(s, in.data(), col.data());
  for (uint32_t c = 0; c < 2; ++c)
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw)
        for (uint32_t img = 0; img < 2; ++img)
          for (int y = 0; y < 3; ++y)
            for (int x = 0; x < 4; ++x) {
              const int sy = y + kh - 1, sx = x + kw - 1;
              const bool inside = sy >= 0 && sy < 3 && sx >= 0 && sx < 4;
              const float want = inside ? 1000.f * c + 100 * img + 10 * sy + sx + 1 : 0.f;
              const size_t row = c * 9 + kh * 3 + kw, p = (img * 3 + y) * 4 + x;
              ASSERT_EQ(col[row * s.pixels() + p], want)
                  << "c " << c << " kh " << kh << " kw " << kw << " img " << img << " y " << y
                  << " x " << x;
            }
}

// A call on a chunk (images 1..2 of a 3-image batch) touches only that chunk's columns.
TEST(CpuIm2Col, WritesOnlyItsChunksColumns) {
  const ConvShape whole{1, 1, 3, 2, 2, 3};
  const std::vector<float> in = PositionCoded(whole);
  std::vector<float> col(whole.col_rows() * whole.ld(), -1.f), want(col.size(), -1.f);
  Im2Col(whole, in.data(), want.data());
  ConvShape chunk = whole;
  chunk.n = 2;
  Im2Col(chunk, in.data() + 4, col.data() + 4);  // image 1 starts 4 floats in
  for (size_t row = 0; row < 9; ++row) {
    for (size_t p = 0; p < 12; ++p) {
      ASSERT_EQ(col[row * 12 + p], p < 4 ? -1.f : want[row * 12 + p]) << row << " " << p;
    }
  }
}

// Col2Im is Im2Col's adjoint: <Im2Col(x), g> = <x, Col2Im(g)> for any x and g.
TEST(CpuCol2Im, IsTheAdjointOfIm2Col) {
  const ConvShape s{3, 1, 2, 5, 4, 2};
  const std::vector<float> x = PositionCoded(s);
  std::vector<float> g(s.col_rows() * s.ld()), col(g.size()), back(x.size(), 123.f);
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>((i * 37) % 11) - 5.f;
  Im2Col(s, x.data(), col.data());
  Col2Im(s, g.data(), back.data());  // overwrites, whatever `back` held
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < col.size(); ++i) lhs += double{col[i]} * g[i];
  for (size_t i = 0; i < x.size(); ++i) rhs += double{x[i]} * back[i];
  EXPECT_EQ(lhs, rhs);  // integers well inside double's exact range
}

TEST(CpuBiasReluMaxPool, PoolsEachWindowAddsTheBiasAndDropsTheOddRowAndColumn) {
  // Two channels of one 3x5 plane each: pooled to 1x2 from rows 0-1 and columns 0-3. Channel 1's
  // bias makes its second window negative, so ReLU clips it.
  const std::vector<float> conv = {1,  9,  2,  3,  99,  //
                                   4,  5,  8,  7,  99,  //
                                   99, 99, 99, 99, 99,  //
                                   6,  1,  -3, -2, 99,  //
                                   2,  3,  -1, -4, 99,  //
                                   99, 99, 99, 99, 99};
  const std::vector<float> bias = {0.5f, -2.f};
  std::vector<float> pooled(4);
  std::vector<uint32_t> argmax(4);
  BiasReluMaxPool(2, 1, 1, 3, 5, conv.data(), bias.data(), pooled.data(), argmax.data());
  EXPECT_EQ(pooled, (std::vector<float>{9.5f, 8.5f, 4.f, 0.f}));
  EXPECT_EQ(argmax, (std::vector<uint32_t>{1, 7, 0, 7}));

  // Backward: routed to the argmax, except through the clipped output; bias gradients summed.
  const std::vector<float> grad = {10, 20, 30, 40};
  std::vector<float> conv_grad(30, -1.f);
  std::vector<double> bias_grad(2, -1.0);
  BiasReluMaxPoolBackward(2, 1, 1, 3, 5, pooled.data(), grad.data(), argmax.data(),
                          conv_grad.data(), bias_grad.data());
  std::vector<float> want(30, 0.f);
  want[1] = 10;
  want[7] = 20;
  want[15 + 0] = 30;
  EXPECT_EQ(conv_grad, want);
  EXPECT_EQ(bias_grad, (std::vector<double>{30, 30}));
}

TEST(CpuBiasReluMaxPool, KeepsTheFirstOfEqualValues) {
  const std::vector<float> conv = {3, 3, 3, 3};
  const float bias = 0;
  float pooled = -1;
  uint32_t argmax = 9;
  BiasReluMaxPool(1, 1, 1, 2, 2, conv.data(), &bias, &pooled, &argmax);
  EXPECT_EQ(argmax, 0u);
}

TEST(CpuSoftmaxCrossEntropy, IsFiniteForHugeLogits) {
  const std::vector<float> logits = {1e30f, -1e30f, 0.f};
  const int32_t label = 1;
  std::vector<float> grad(3);
  uint64_t correct = 7;
  const double loss = SoftmaxCrossEntropy(1, 3, logits.data(), &label, 0.5f, grad.data(), &correct);
  EXPECT_EQ(loss, 2.0 * double{1e30f});  // -log softmax_1 = z_0 - z_1
  EXPECT_EQ(correct, 0u);
  EXPECT_EQ(grad, (std::vector<float>{0.5f, -0.5f, 0.f}));
}

// Label smoothing against the definition, computed here in double from the logits: the loss is
// -sum_c q_c log p_c with q = (1 - E) onehot + E / K, and the gradient (p - q) * scale.
TEST(CpuSoftmaxCrossEntropy, LabelSmoothingMatchesTheHandComputedLossAndGradient) {
  const std::vector<float> logits = {1.f, 2.f, 0.f};
  const int32_t label = 0;
  const double e = 0.3;
  const double z[3] = {1, 2, 0};
  const double norm = std::exp(1.0) + std::exp(2.0) + std::exp(0.0);
  const double q[3] = {0.7 + 0.1, 0.1, 0.1};
  double want = 0;
  for (int c = 0; c < 3; ++c) want -= q[c] * std::log(std::exp(z[c]) / norm);
  std::vector<float> grad(3);
  uint64_t correct = 7;
  const double loss =
      SoftmaxCrossEntropy(1, 3, logits.data(), &label, 0.5f, grad.data(), &correct, e);
  EXPECT_NEAR(loss, want, 1e-12);
  EXPECT_NEAR(loss, 1.4076059644443801, 1e-12);  // the same, evaluated once by hand
  EXPECT_EQ(correct, 0u);                        // the arg-max is class 1
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(grad[c], static_cast<float>((std::exp(z[c]) / norm - q[c]) * 0.5)) << c;
  }
  // Smoothing 0 is the plain cross-entropy, bit for bit.
  std::vector<float> plain(3), zero(3);
  const double l0 = SoftmaxCrossEntropy(1, 3, logits.data(), &label, 0.5f, plain.data(), &correct);
  const double l1 =
      SoftmaxCrossEntropy(1, 3, logits.data(), &label, 0.5f, zero.data(), &correct, 0.0);
  EXPECT_EQ(l0, l1);
  EXPECT_EQ(plain, zero);
  EXPECT_NEAR(l0, std::log(norm) - 1.0, 1e-12);
}

// The smoothed gradient against central differences of the smoothed loss, logit by logit.
TEST(CpuSoftmaxCrossEntropy, LabelSmoothingGradientMatchesCentralDifferences) {
  constexpr size_t kRows = 3, kClasses = 5;
  constexpr double kSmoothing = 0.15;
  std::vector<float> logits(kRows * kClasses);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = 0.37f * static_cast<float>(i % 7) - 1.1f;
  const std::vector<int32_t> labels = {4, 0, 2};
  std::vector<float> grad(logits.size()), scratch(logits.size());
  uint64_t correct = 0;
  SoftmaxCrossEntropy(kRows, kClasses, logits.data(), labels.data(), 1.f, grad.data(), &correct,
                      kSmoothing);
  for (size_t i = 0; i < logits.size(); ++i) {
    std::vector<float> up = logits, down = logits;
    up[i] += 1e-2f;
    down[i] -= 1e-2f;
    const double lu = SoftmaxCrossEntropy(kRows, kClasses, up.data(), labels.data(), 1.f,
                                          scratch.data(), &correct, kSmoothing);
    const double ld = SoftmaxCrossEntropy(kRows, kClasses, down.data(), labels.data(), 1.f,
                                          scratch.data(), &correct, kSmoothing);
    const double fd = (lu - ld) / (static_cast<double>(up[i]) - down[i]);
    // The loss is smooth in the logits: the central difference is exact to O(h^2) (~1e-5 here);
    // leaving the smoothing out of the gradient would be off by E / K = 0.03.
    EXPECT_NEAR(grad[i], fd, 1e-4) << "logit " << i;
  }
}

}  // namespace
}  // namespace rf::cpu
