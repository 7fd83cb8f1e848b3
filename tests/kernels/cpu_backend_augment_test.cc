// The CPU backend's augmentation (Backend::SetAugmentation): TrainStep and ComputeGradients see
// each sample through the transform core/augment.h draws for (seed, epoch, global index), fused
// into the decode; Evaluate never does. The expected input is built here pixel by pixel from the
// transform's draws (dy, dx, flip, erased rectangle), not through SourcePixel.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/augment.h"
#include "core/augment_spec.h"
#include "kernels/cpu_backend.h"
#include "tests/kernels/random_batch.h"
#include "tests/testing/bit_identical.h"

namespace rf {
namespace {

using testing::BitIdentical;
using testing::HostBatch;
using testing::TinyConfig;

std::unique_ptr<CpuBackend> MakeBackend(const Normalization& norm) {
  const ModelConfig c = TinyConfig();
  auto be = CpuBackend::Create(c, norm, 8, InitialParameters(c, 3));
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  return be.ok() ? std::move(*be) : nullptr;
}

AugmentParams Spec(const char* text) {
  Result<AugmentParams> p = ParseAugmentSpec(text);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : AugmentParams{};
}

// The normalized input of sample `img` under transform t, element by element: output (y, x)
// reads (y + dy, W-1-x + dx or x + dx), 0 outside the image and inside the erased rectangle.
void Expected(const ModelConfig& c, const Normalization& norm, const std::vector<float>& raw,
              size_t img, const SampleTransform& t, std::vector<float>* out) {
  const int h = static_cast<int>(c.height), w = static_cast<int>(c.width);
  for (size_t ch = 0; ch < c.channels; ++ch) {
    const float divisor = norm.stddev[ch] == 0.f ? 1.f : norm.stddev[ch];
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const int sy = y + t.dy, sx = (t.flip ? w - 1 - x : x) + t.dx;
        const bool erased =
            y >= static_cast<int>(t.erase_y) && y < static_cast<int>(t.erase_y + t.erase_h) &&
            x >= static_cast<int>(t.erase_x) && x < static_cast<int>(t.erase_x + t.erase_w);
        float v = 0.f;
        if (!erased && sy >= 0 && sy < h && sx >= 0 && sx < w) {
          v = (raw[((img * c.channels + ch) * h + sy) * w + sx] - norm.mean[ch]) / divisor;
        }
        (*out)[((img * c.channels + ch) * h + y) * w + x] = v;
      }
    }
  }
}

TEST(CpuBackendAugment, TrainsOnEachSampleThroughItsOwnTransform) {
  const ModelConfig c = TinyConfig();
  const Normalization norm{{100.f, 30.f}, {50.f, 0.f}};
  const Normalization identity{{0.f, 0.f}, {1.f, 1.f}};
  const uint32_t n = 6;
  const testing::RandomData d = testing::DrawData(c, n, 17);
  const std::vector<uint64_t> indices = {5, 900, 17, 3, (uint64_t{1} << 32) + 1, 44};
  const uint64_t seed = 11, epoch = 2;
  for (const char* spec : {"crop:2", "flip", "erase:1", "crop:3,flip,erase:0.5"}) {
    const AugmentParams p = Spec(spec);
    HostBatch raw = testing::MakeBatch(d.values, DType::kUInt8, d.labels, DType::kUInt8);
    Batch b = raw.ref();
    b.sample_indices = indices.data();
    b.epoch = epoch;
    std::vector<float> pre(d.values.size());
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      const SampleTransform t = DrawTransform(p, seed, epoch, indices[i], c.height, c.width);
      changed = changed || t.dy != 0 || t.dx != 0 || t.flip || t.erase_h != 0;
      Expected(c, norm, d.values, i, t, &pre);
    }
    ASSERT_TRUE(changed) << spec << ": the test needs a sample that is transformed";
    const HostBatch expected = testing::MakeBatch(pre, DType::kFloat32, d.labels, DType::kUInt8);

    auto augmented = MakeBackend(norm), reference = MakeBackend(identity);
    augmented->SetAugmentation(p, seed);
    Tensors g1, g2;
    double l1 = 0, l2 = 0;
    ASSERT_TRUE(augmented->ComputeGradients(b, &l1, &g1).ok());
    ASSERT_TRUE(reference->ComputeGradients(expected.ref(), &l2, &g2).ok());
    EXPECT_EQ(l1, l2) << spec;
    EXPECT_TRUE(BitIdentical(g1, g2)) << spec;

    // Another epoch draws other transforms: other gradients.
    b.epoch = epoch + 1;
    Tensors g3;
    double l3 = 0;
    ASSERT_TRUE(augmented->ComputeGradients(b, &l3, &g3).ok());
    EXPECT_FALSE(BitIdentical(g1, g3)) << spec;
  }
}

TEST(CpuBackendAugment, EvaluateIsNeverAugmented) {
  const ModelConfig c = TinyConfig();
  const Normalization norm{{100.f, 30.f}, {50.f, 10.f}};
  const HostBatch raw = testing::RandomBatch(c, 8, 5);
  const std::vector<uint64_t> indices = {0, 1, 2, 3, 4, 5, 6, 7};
  Batch b = raw.ref();
  b.sample_indices = indices.data();
  auto augmented = MakeBackend(norm), plain = MakeBackend(norm);
  augmented->SetAugmentation(Spec("crop:4,flip,erase:1"), 1);
  ASSERT_TRUE(augmented->Evaluate(b).ok());
  ASSERT_TRUE(plain->Evaluate(b).ok());
  const StepStats a = augmented->TakeEvalStats(), p = plain->TakeEvalStats();
  EXPECT_EQ(a.loss_sum, p.loss_sum);
  EXPECT_EQ(a.correct, p.correct);
  // ... while training on the same batch is.
  double la = 0, lp = 0;
  ASSERT_TRUE(augmented->ComputeGradients(b, &la, nullptr).ok());
  ASSERT_TRUE(plain->ComputeGradients(b, &lp, nullptr).ok());
  EXPECT_NE(la, lp);
}

TEST(CpuBackendAugment, ABatchWithoutSampleIndicesIsRefusedAndChangesNothing) {
  const ModelConfig c = TinyConfig();
  auto be = MakeBackend(testing::TinyNormalization(c));
  be->SetAugmentation(Spec("flip"), 1);
  Tensors before, after;
  ASSERT_TRUE(be->GetState(&before, nullptr).ok());
  const HostBatch raw = testing::RandomBatch(c, 4, 5);
  const Status st = be->TrainStep(raw.ref(), OptimizerConfig{});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("global index"), std::string::npos) << st.ToString();
  ASSERT_TRUE(be->GetState(&after, nullptr).ok());
  EXPECT_TRUE(BitIdentical(before, after));
  // Augmentation off again: the same batch trains.
  be->SetAugmentation(AugmentParams{}, 1);
  EXPECT_TRUE(be->TrainStep(raw.ref(), OptimizerConfig{}).ok());
}

}  // namespace
}  // namespace rf
