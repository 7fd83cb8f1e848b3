// StreamingSource with device staging (the GPU's streaming mode): batches gathered on the GPU
// hold exactly the window order's samples and labels, epoch after epoch, and the device memory
// the source takes is the same for a dataset ten times larger. Skips where no GPU is found.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "cuda/handles.h"
#include "pipeline/sources/streaming_source.h"
#include "pipeline/stage/cuda_chunk_staging.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

StreamingOptions Options(uint64_t epochs) {
  StreamingOptions o;
  o.order.batch_size = 50;
  o.order.shuffle_window = 4;
  o.order.seed = 3;
  o.epochs = epochs;
  o.ring_slots = 4;
  o.feeder.reader.mode = IoMode::kBuffered;  // temp directories may be on tmpfs (no O_DIRECT)
  return o;
}

StagingFactory DeviceStaging(cudaStream_t stream) {
  return [stream](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
    RF_ASSIGN_OR_RETURN(auto s, CudaChunkStaging::Create(l, stream, 2));
    return std::unique_ptr<ChunkStaging>(std::move(s));
  };
}

TEST(CudaStreamingSource, DeviceBatchesHoldTheWindowOrderEpochAfterEpoch) {
  RF_REQUIRE_GPU();
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 3001, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  auto stream = cuda::CreateStream();
  ASSERT_TRUE(stream.ok());
  auto s = StreamingSource::Create(*d, Options(3), DeviceStaging(stream->get()));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<uint8_t> samples(50 * 64), labels(50);
  for (uint64_t e = 0; e < 3; ++e) {
    ASSERT_TRUE((*s)->StartEpoch(e, 0).ok());
    std::vector<uint64_t> seen;
    for (;;) {
      auto b = (*s)->Next();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (b->n == 0) break;
      ASSERT_EQ(cudaMemcpyAsync(samples.data(), b->samples, b->n * 64, cudaMemcpyDeviceToHost,
                                stream->get()),
                cudaSuccess);
      ASSERT_EQ(
          cudaMemcpyAsync(labels.data(), b->labels, b->n, cudaMemcpyDeviceToHost, stream->get()),
          cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
      for (uint32_t i = 0; i < b->n; ++i) {
        const uint64_t index = testing::SampleIndex(samples.data() + i * 64);
        ASSERT_EQ(labels[i], index % 10);
        ASSERT_EQ((*s)->batch_samples()[i], index);
        seen.push_back(index);
      }
    }
    EXPECT_EQ(seen, (*s)->order().EpochSamples(e)) << "epoch " << e;
  }
}

// Device memory taken by a source over `samples` samples after one epoch (free before - after).
size_t DeviceBytesFor(const TempDir& t, uint64_t samples, const char* name) {
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File(name), samples, {.chunk_bytes = 4096}));
  EXPECT_TRUE(d.ok());
  auto stream = cuda::CreateStream();
  EXPECT_TRUE(stream.ok());
  size_t before = 0, after = 0, total = 0;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemGetInfo(&before, &total), cudaSuccess);
  auto s = StreamingSource::Create(*d, Options(1), DeviceStaging(stream->get()));
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE((*s)->StartEpoch(0, 0).ok());
  uint64_t n = 0;
  for (auto b = (*s)->Next(); b.ok() && b->n > 0; b = (*s)->Next()) n += b->n;
  EXPECT_EQ(n, samples);
  EXPECT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  EXPECT_EQ(cudaMemGetInfo(&after, &total), cudaSuccess);
  return before - after;
}

TEST(CudaStreamingSource, DeviceMemoryIsTheSameForADatasetTenTimesLarger) {
  RF_REQUIRE_GPU();
  RF_SKIP_UNDER_CUDA_TOOL("the free device memory it measures");
  TempDir t;
  const size_t small = DeviceBytesFor(t, 3000, "small.rfd");
  const size_t large = DeviceBytesFor(t, 30000, "large.rfd");
  std::printf("device memory: %zu bytes for 3000 samples, %zu for 30000\n", small, large);
  EXPECT_GT(small, 0u);
  EXPECT_EQ(small, large);
}

}  // namespace
}  // namespace rf
