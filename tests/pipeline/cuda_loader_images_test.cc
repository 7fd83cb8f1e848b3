// Decoded images (image/jpeg records) through a loader on a GPU against the host loader: the CPU
// decoder's batches copied to the GPU hold the same pixels and labels, in every output dtype and
// layout, and a held batch stays valid through later batches. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "cuda/handles.h"
#include "pipeline/loader.h"
#include "tests/testing/jpeg_testing.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

LoaderOptions Options(const std::string& path, DeviceKind device, DType dtype, bool nhwc) {
  LoaderOptions o;
  o.pipeline.data = path;
  o.pipeline.device = device;
  o.pipeline.order.batch_size = 12;
  o.pipeline.order.shuffle_window = 3;
  o.pipeline.order.seed = 5;
  o.pipeline.streaming.ring_slots = 4;
  o.pipeline.streaming.io = IoMode::kBuffered;
  o.output.dtype = dtype;
  o.output.normalize = dtype != DType::kUInt8;
  o.output.layout = nhwc ? SampleLayout::kNHWC : SampleLayout::kNCHW;
  o.image.size = 40;
  o.image.threads = 3;
  o.output_buffers = 4;
  o.epochs = 2;
  return o;
}

struct Copy {
  std::vector<uint8_t> samples;
  std::vector<int64_t> labels;
  std::vector<uint64_t> indices;
};

// Two epochs' batches, copied to the host (on `stream`, after it waits for each batch). The
// first batch is held to the end and checked unchanged.
std::vector<Copy> Epochs(const LoaderOptions& o, cudaStream_t stream) {
  std::vector<Copy> out;
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return out;
  EXPECT_TRUE((*l)->images());
  const size_t bytes = 3 * 40 * 40 * DTypeSize(o.output.dtype);
  auto fetch = [&](LoadedBatch& b) {
    Copy c;
    c.samples.resize(b.size() * bytes);
    c.labels.resize(b.size());
    c.indices = b.indices();
    EXPECT_TRUE(b.WaitOn(stream).ok());
    const cudaMemcpyKind kind = b.on_gpu() ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost;
    EXPECT_EQ(cudaMemcpyAsync(c.samples.data(), b.samples(), c.samples.size(), kind, stream),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(c.labels.data(), b.labels(), c.labels.size() * 8, kind, stream),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    return c;
  };
  std::shared_ptr<LoadedBatch> held;
  for (uint64_t e = 0; e < 2; ++e) {
    EXPECT_TRUE((*l)->StartEpoch(e, 0).ok());
    for (;;) {
      Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
      EXPECT_TRUE(b.ok()) << b.status().ToString();
      if (!b.ok() || *b == nullptr) break;
      EXPECT_EQ((*b)->on_gpu(), o.pipeline.device == DeviceKind::kCuda);
      out.push_back(fetch(**b));
      if (!held) held = *b;
    }
  }
  if (held) {
    const Copy again = fetch(*held);
    EXPECT_EQ(again.samples, out[0].samples);
    EXPECT_EQ(again.labels, out[0].labels);
  }
  return out;
}

TEST(CudaLoaderImages, BatchesEqualTheHostLoadersInEveryDtypeAndLayout) {
  RF_REQUIRE_GPU();
  testing::TempDir t;
  ASSERT_TRUE(testing::WriteJpegDataset(t.File("jpegs.rfd"), testing::MakeJpegs(50)).ok());
  Result<cuda::CudaStream> stream = cuda::CreateStream();
  ASSERT_TRUE(stream.ok());
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kUInt8}) {
    for (bool nhwc : {false, true}) {
      const std::vector<Copy> host =
          Epochs(Options(t.File("jpegs.rfd"), DeviceKind::kCpu, dtype, nhwc), stream->get());
      const std::vector<Copy> gpu =
          Epochs(Options(t.File("jpegs.rfd"), DeviceKind::kCuda, dtype, nhwc), stream->get());
      ASSERT_EQ(host.size(), gpu.size());
      ASSERT_EQ(host.size(), 10u);  // 2 epochs of 50 in batches of 12
      for (size_t b = 0; b < host.size(); ++b) {
        EXPECT_EQ(host[b].indices, gpu[b].indices) << b;
        EXPECT_EQ(host[b].labels, gpu[b].labels) << b;
        EXPECT_EQ(host[b].samples, gpu[b].samples) << "batch " << b << ", dtype "
                                                    << DTypeName(dtype) << (nhwc ? ", NHWC" : "");
      }
    }
  }
}

}  // namespace
}  // namespace rf
