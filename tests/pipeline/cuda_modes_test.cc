// The two modes against each other on the GPU: for the same seed, streaming (device staging) and
// managed (one managed allocation) hand the backend the same samples in the same batches, so a
// deterministic backend's loss curve is the same, step for step, to the bit; for one rank of
// several too. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/augment_spec.h"
#include "kernels/cuda_backend.h"
#include "pipeline/sources/managed_source.h"
#include "pipeline/sources/streaming_source.h"
#include "pipeline/stage/cuda_chunk_staging.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

struct Curve {
  std::vector<double> losses;
  std::vector<std::vector<uint64_t>> batches;
};

Curve Train(TrainingSource& source, CudaBackend& backend, uint64_t epochs) {
  Curve c;
  for (uint64_t e = 0; e < epochs; ++e) {
    EXPECT_TRUE(source.StartEpoch(e, 0).ok());
    for (;;) {
      auto b = source.Next();
      EXPECT_TRUE(b.ok()) << b.status().ToString();
      if (!b.ok() || b->n == 0) break;
      // The source's batch as it is: its sample indices and epoch key any augmentation.
      EXPECT_TRUE(backend.TrainStep(*b, {}).ok());
      c.losses.push_back(backend.TakeTrainStats().mean_loss());
      c.batches.push_back(source.batch_samples());
    }
  }
  return c;
}

// The suite's dataset: 2500 positional samples (1x8x8) in 4 KiB chunks of 63.
Result<Dataset> OpenPositional(TempDir& t) {
  return Dataset::Open(
      testing::WritePositionalDataset(t.File("f.rfd"), 2500, {.chunk_bytes = 4096}));
}

// Curves of the two modes for rank `rank` of `world_size`, trained with `augment`; returns the
// streaming mode's.
Curve ExpectSameCurves(const Dataset& d, uint32_t rank, uint32_t world_size, size_t batches,
                       const AugmentParams& augment = AugmentParams{}) {
  ModelConfig c;
  c.channels = 1;
  c.height = c.width = 8;
  c.classes = 10;
  c.conv = {8, 16};
  c.hidden = 32;
  const Normalization norm{{3.f}, {50.f}};
  OrderSettings order;
  order.batch_size = 64;
  order.shuffle_window = 5;
  order.first_window_chunks = 2;
  order.seed = 11;
  order.rank = rank;
  order.world_size = world_size;

  Curve curves[2];
  for (int mode = 0; mode < 2; ++mode) {
    auto backend = CudaBackend::Create(c, norm, 64, InitialParameters(c, 2));
    EXPECT_TRUE(backend.ok()) << backend.status().ToString();
    if (!backend.ok()) return Curve{};
    (*backend)->SetAugmentation(augment, order.seed);
    const cudaStream_t stream = (*backend)->stream();
    std::unique_ptr<TrainingSource> source;
    if (mode == 0) {
      StreamingOptions o;
      o.order = order;
      o.epochs = 2;
      o.ring_slots = 4;
      o.feeder.reader.mode = IoMode::kBuffered;
      auto s = StreamingSource::Create(
          d, o, [stream](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
            RF_ASSIGN_OR_RETURN(auto st, CudaChunkStaging::Create(l, stream, 2));
            return std::unique_ptr<ChunkStaging>(std::move(st));
          });
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (!s.ok()) return Curve{};
      source = std::move(s).value();
    } else {
      ManagedOptions o;
      o.order = order;
      o.prefetch_batches = 2;
      o.advise = true;
      auto s = ManagedSource::Create(d, o, stream);
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (!s.ok()) return Curve{};
      source = std::move(s).value();
    }
    curves[mode] = Train(*source, **backend, 2);
  }
  EXPECT_EQ(curves[0].batches.size(), batches);
  EXPECT_EQ(curves[0].batches, curves[1].batches);
  EXPECT_EQ(curves[0].losses, curves[1].losses);
  for (double l : curves[0].losses) EXPECT_TRUE(std::isfinite(l));
  return curves[0];
}

TEST(CudaModes, StreamingAndManagedGiveTheSameBatchesAndTheSameLossCurve) {
  RF_REQUIRE_GPU();
  TempDir t;
  auto d = OpenPositional(t);
  ASSERT_TRUE(d.ok());
  ExpectSameCurves(*d, 0, 1, 2u * 40);  // 2500 / 64: 39 full batches and one of 4
}

TEST(CudaModes, StreamingAndManagedGiveARankTheSameBatches) {
  RF_REQUIRE_GPU();
  TempDir t;
  auto d = OpenPositional(t);
  ASSERT_TRUE(d.ok());
  // 39 chunks of 63 and one of 43 over 3 ranks: 13 chunks each and 15 of the 43 shared
  // samples, 834 a rank: 13 full batches and one of 2.
  ExpectSameCurves(*d, 1, 3, 2u * 14);
}

// Augmented training: the backend's decode kernel (float32 here; the bf16 one is checked against
// the CPU in tests/kernels/cuda_augment_decode_test.cc) draws each sample's transform from the
// indices the gather copied to the device, in either mode alike, so the curves stay identical;
// and they differ from the unaugmented curve.
TEST(CudaModes, AugmentedTrainingGivesTheSameLossCurveInBothModes) {
  RF_REQUIRE_GPU();
  TempDir t;
  auto d = OpenPositional(t);
  ASSERT_TRUE(d.ok());
  Result<AugmentParams> augment = ParseAugmentSpec("crop:2,flip,erase:0.5");
  ASSERT_TRUE(augment.ok());
  const Curve plain = ExpectSameCurves(*d, 0, 1, 2u * 40);
  const Curve augmented = ExpectSameCurves(*d, 0, 1, 2u * 40, *augment);
  EXPECT_EQ(plain.batches, augmented.batches);
  EXPECT_NE(plain.losses, augmented.losses);
}

}  // namespace
}  // namespace rf
