// SequenceLoader (pipeline/sequences/sequence_loader.h) on a GPU against the host, its reference:
// the ids packed narrow on the host, copied over and widened by the kernel (pipeline/
// cuda_sequence_pack.cuh), with the pad and the position_ids it builds from cu_seqlens, give the
// host's batches bit for bit in every view, for every case of tests/pipeline/sequence_testing.h
// (eod within and beyond the ids' width, no eod, packing pad, int32 and int64, int32 ids, a
// mixture, large batches over several packing threads), read by a consumer on its own stream.
// Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda/handles.h"
#include "tests/pipeline/sequence_testing.h"
#include "tests/testing/require_gpu.h"

namespace rf {
namespace {

using testing::FirstDifference;
using testing::TakeBatches;

TEST(CudaSequenceLoader, GivesTheHostsBatchesBitForBitInEveryView) {
  RF_REQUIRE_GPU();
  auto stream = cuda::CreateStream();
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  const cudaStream_t s = stream->get();
  const testing::BatchCopier from_gpu = [s](LoadedBatch& b, void* dst, const void* src,
                                            size_t bytes) {
    ASSERT_TRUE(b.on_gpu());
    ASSERT_TRUE(b.WaitOn(s).ok());
    ASSERT_EQ(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  };
  testing::PackCorpora corpora;
  const auto host = corpora.Cases(DeviceKind::kCpu);
  const auto gpu = corpora.Cases(DeviceKind::kCuda);
  ASSERT_EQ(host.size(), gpu.size());
  for (size_t i = 0; i < host.size(); ++i) {
    SCOPED_TRACE(host[i].name);
    const auto want = TakeBatches(host[i].data, host[i].options, host[i].batches);
    ASSERT_GE(want.size(), 2u);
    EXPECT_EQ(
        FirstDifference(want, TakeBatches(gpu[i].data, gpu[i].options, gpu[i].batches, from_gpu)),
        "");
    LoaderOptions one = gpu[i].options;
    one.sequence.pack_threads = 1;
    EXPECT_EQ(FirstDifference(want, TakeBatches(gpu[i].data, one, gpu[i].batches, from_gpu)), "");
  }
  // A state at its epoch's end: an empty batch (no rows, cu_seqlens {0}), then the epoch's end.
  const SequenceState end = corpora.AtEpochEnd(host[0].options);
  const auto want = TakeBatches(host[0].data, host[0].options, 3, testing::HostCopier, &end);
  ASSERT_EQ(want.size(), 3u);
  EXPECT_EQ(FirstDifference(want, TakeBatches(gpu[0].data, gpu[0].options, 3, from_gpu, &end)), "");
}

}  // namespace
}  // namespace rf
