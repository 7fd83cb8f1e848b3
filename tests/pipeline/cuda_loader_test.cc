// Loader on a GPU against the host loader, which is its reference: for the same options the
// batches hold the same samples and labels, decoded to the same bits, in streaming and managed
// mode, augmented or not; a consumer on its own stream reads a batch only after it is written
// (LoadedBatch::WaitOn, no host wait); a held batch stays valid and unchanged through later batches
// and the loader's end. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "cuda/handles.h"
#include "pipeline/loader.h"
#include "tests/testing/batch_copy.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

using testing::TempDir;

LoaderOptions Options(const std::string& path, DeviceKind device) {
  LoaderOptions o;
  o.pipeline.data = path;
  o.pipeline.device = device;
  o.pipeline.order.batch_size = 40;
  o.pipeline.order.shuffle_window = 4;
  o.pipeline.order.seed = 3;
  o.pipeline.streaming.ring_slots = 4;
  o.pipeline.streaming.io = IoMode::kBuffered;
  o.output_buffers = 3;
  o.epochs = 2;
  return o;
}

using HostCopy = testing::HostBatch;

std::vector<HostCopy> Epochs(const LoaderOptions& o, cudaStream_t stream) {
  std::vector<HostCopy> out;
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return out;
  const size_t bytes = (*l)->dataset().header().SampleElems() * DTypeSize(o.output.dtype);
  for (uint64_t e = 0; e < 2; ++e) {
    EXPECT_TRUE((*l)->StartEpoch(e, 0).ok());
    for (;;) {
      Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
      EXPECT_TRUE(b.ok()) << b.status().ToString();
      if (!b.ok() || *b == nullptr) break;
      EXPECT_EQ((*b)->on_gpu(), o.pipeline.device == DeviceKind::kCuda);
      out.push_back(testing::CopyToHost(**b, bytes, stream));
    }
  }
  return out;
}

void ExpectSame(const std::vector<HostCopy>& want, const std::vector<HostCopy>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(want[k].indices, got[k].indices) << "batch " << k;
    ASSERT_EQ(want[k].labels, got[k].labels) << "batch " << k;
    ASSERT_TRUE(want[k].samples == got[k].samples) << "batch " << k << ": decoded bytes differ";
  }
}

class CudaLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    RF_REQUIRE_GPU();
    testing::PositionalDatasetOptions po;
    po.channels = 3;
    po.height = 6;
    po.width = 5;
    po.chunk_bytes = 4096;
    path_ = testing::WritePositionalDataset(dir_.File("d.rfd"), 1500, po);
    Result<cuda::CudaStream> s = cuda::CreateStream();
    ASSERT_TRUE(s.ok());
    stream_ = std::move(*s);
  }
  TempDir dir_;
  std::string path_;
  cuda::CudaStream stream_;
};

TEST_F(CudaLoader, EqualsTheHostLoaderBitForBitInEveryOutput) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (SampleLayout layout : {SampleLayout::kNCHW, SampleLayout::kNHWC}) {
      LoaderOptions host = Options(path_, DeviceKind::kCpu),
                    gpu = Options(path_, DeviceKind::kCuda);
      host.output.dtype = gpu.output.dtype = dtype;
      host.output.layout = gpu.output.layout = layout;
      SCOPED_TRACE(std::string(DTypeName(dtype)) +
                   (layout == SampleLayout::kNHWC ? " NHWC" : " NCHW"));
      ExpectSame(Epochs(host, stream_.get()), Epochs(gpu, stream_.get()));
    }
  }
  LoaderOptions host = Options(path_, DeviceKind::kCpu), gpu = Options(path_, DeviceKind::kCuda);
  host.output.dtype = gpu.output.dtype = DType::kUInt8;
  host.output.normalize = gpu.output.normalize = false;
  ExpectSame(Epochs(host, stream_.get()), Epochs(gpu, stream_.get()));
}

// A mixture of two datasets (pipeline/sources/mixed_source.h): its batch gathered on the GPU from
// both datasets' staging areas in one kernel, decoded (with the mixture's statistics) and augmented
// (keyed by each sample's dataset epoch and index), gives the host loader's bits.
TEST_F(CudaLoader, AMixtureEqualsTheHostLoaderBitForBit) {
  testing::PositionalDatasetOptions po;
  po.channels = 3;
  po.height = 6;
  po.width = 5;
  po.chunk_bytes = 4096;
  po.first_sample = 1500;
  const std::string other = testing::WritePositionalDataset(dir_.File("e.rfd"), 700, po);
  for (const char* augment : {"none", "crop:2,flip,erase:0.5"}) {
    SCOPED_TRACE(augment);
    LoaderOptions host = Options(path_ + "," + other, DeviceKind::kCpu),
                  gpu = Options(path_ + "," + other, DeviceKind::kCuda);
    host.pipeline.weights = gpu.pipeline.weights = {0.6f, 0.4f};
    host.output.augment = gpu.output.augment = augment;
    const std::vector<HostCopy> want = Epochs(host, stream_.get());
    ASSERT_EQ(want.size(), 2u * (1500 + 700) / 40);  // two mixture epochs of 2200 samples
    ExpectSame(want, Epochs(gpu, stream_.get()));
  }
}

TEST_F(CudaLoader, ManagedModeGivesTheStreamingBatches) {
  LoaderOptions streaming = Options(path_, DeviceKind::kCuda), managed = streaming;
  managed.pipeline.mode = PipelineMode::kManaged;
  ExpectSame(Epochs(streaming, stream_.get()), Epochs(managed, stream_.get()));
}

// The loader's worker (LoaderOptions::worker) makes the batches on a thread of its own, bound to
// the loader's GPU, with the gather and decode queued from there: the same bits, streaming and
// managed.
TEST_F(CudaLoader, TheWorkersBatchesAreTheCallersThreads) {
  for (PipelineMode mode : {PipelineMode::kStreaming, PipelineMode::kManaged}) {
    LoaderOptions caller = Options(path_, DeviceKind::kCuda);
    caller.output.dtype = DType::kBFloat16;
    caller.output.layout = SampleLayout::kNHWC;
    caller.pipeline.mode = mode;
    LoaderOptions worker = caller;
    worker.worker = true;
    SCOPED_TRACE(mode == PipelineMode::kManaged ? "managed" : "streaming");
    ExpectSame(Epochs(caller, stream_.get()), Epochs(worker, stream_.get()));
  }
}

// Augmentation (OutputOptions::augment) is fused into the GPU decode kernel and keyed by each
// sample's global index, which the gather copies to the device with the batch: every spec, every
// output kind, in streaming and managed mode, gives the host loader's bits.
TEST_F(CudaLoader, AugmentedBatchesEqualTheHostLoadersInEveryOutputAndMode) {
  struct Output {
    DType dtype;
    SampleLayout layout;
    bool normalize;
  };
  for (const char* spec : {"crop:2", "flip", "erase:0.7", "crop:3,flip,erase:0.5"}) {
    for (const Output& k : {Output{DType::kFloat32, SampleLayout::kNCHW, true},
                            Output{DType::kFloat32, SampleLayout::kNHWC, false},
                            Output{DType::kBFloat16, SampleLayout::kNHWC, true},
                            Output{DType::kUInt8, SampleLayout::kNCHW, false},
                            Output{DType::kUInt8, SampleLayout::kNHWC, false}}) {
      for (PipelineMode mode : {PipelineMode::kStreaming, PipelineMode::kManaged}) {
        SCOPED_TRACE(std::string(spec) + " " + std::string(DTypeName(k.dtype)) +
                     (k.layout == SampleLayout::kNHWC ? " NHWC" : " NCHW") +
                     (mode == PipelineMode::kManaged ? " managed" : " streaming"));
        LoaderOptions host = Options(path_, DeviceKind::kCpu),
                      gpu = Options(path_, DeviceKind::kCuda);
        host.output.augment = gpu.output.augment = spec;
        host.output.dtype = gpu.output.dtype = k.dtype;
        host.output.layout = gpu.output.layout = k.layout;
        host.output.normalize = gpu.output.normalize = k.normalize;
        gpu.pipeline.mode = mode;
        const std::vector<HostCopy> want = Epochs(host, stream_.get());
        ExpectSame(want, Epochs(gpu, stream_.get()));
        // ... and the augmentation did something.
        LoaderOptions plain = host;
        plain.output.augment = "";
        const std::vector<HostCopy> unaugmented = Epochs(plain, stream_.get());
        ASSERT_EQ(unaugmented.size(), want.size());
        bool differs = false;
        for (size_t b = 0; b < want.size(); ++b)
          differs |= want[b].samples != unaugmented[b].samples;
        EXPECT_TRUE(differs);
      }
    }
  }
}

TEST_F(CudaLoader, AHeldBatchOutlivesLaterBatchesAndTheLoader) {
  LoaderOptions o = Options(path_, DeviceKind::kCuda);
  o.output_buffers = 1;
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const size_t bytes = (*l)->dataset().header().SampleElems() * sizeof(float);
  ASSERT_TRUE((*l)->StartEpoch(0, 0).ok());
  Result<std::shared_ptr<LoadedBatch>> first = (*l)->Next();
  ASSERT_TRUE(first.ok() && *first != nullptr);
  std::shared_ptr<LoadedBatch> held = *first;
  const HostCopy before = testing::CopyToHost(*held, bytes, stream_.get());
  for (int k = 0; k < 20; ++k) {  // the pool of one grows by one: the held buffer is never reused
    Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
    ASSERT_TRUE(b.ok() && *b != nullptr);
    ASSERT_NE((*b)->samples(), held->samples());
  }
  l->reset();
  const HostCopy after = testing::CopyToHost(*held, bytes, stream_.get());
  EXPECT_TRUE(before.samples == after.samples);
  EXPECT_EQ(before.labels, after.labels);
}

// Regression: a loader destroyed while copies it queued were still in flight freed the copier's
// release arguments before their host callbacks ran, and a callback then crashed the process
// (seen from Python: a loader dropped right after its first batch). An open-ended plan keeps the
// copier busy at the moment of destruction; hundreds of rounds catch the race.
TEST_F(CudaLoader, DestroyedRightAfterItsFirstBatchLeavesNoCopyCallbackBehind) {
  LoaderOptions o = Options(path_, DeviceKind::kCuda);
  o.epochs = 0;  // open-ended: the reader and copier run on ahead
  for (int round = 0; round < 300; ++round) {
    Result<std::unique_ptr<Loader>> l = Loader::Open(o);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    ASSERT_TRUE((*l)->StartEpoch(0, 0).ok());
    Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
    ASSERT_TRUE(b.ok() && *b != nullptr);
    ASSERT_EQ((*b)->size(), 40u);
    l->reset();  // with the batch still held
  }
}

// Records of any size on the GPU: the same records as the host loader's, values and offsets
// copied to the GPU batch by batch, a batch larger than the first buffer growing it; a consumer
// stream reads them after WaitOn.
TEST(CudaLoaderRecords, TokenBatchesEqualTheHostLoaders) {
  RF_REQUIRE_GPU();
  TempDir t;
  std::vector<std::vector<uint16_t>> docs = testing::Documents(900, 2000);
  docs[301].assign(300000, 5);  // a batch far larger than the pool's first guess
  ASSERT_TRUE(testing::WriteDocuments(t.File("d.rfd"), docs, CodecSpec{Codec::kZstd, 1}).ok());
  auto host = Loader::Open(Options(t.File("d.rfd"), DeviceKind::kCpu));
  auto gpu = Loader::Open(Options(t.File("d.rfd"), DeviceKind::kCuda));
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  cuda::CudaStream stream = cuda::CreateStream().value();
  for (uint64_t e = 0; e < 2; ++e) {
    ASSERT_TRUE((*host)->StartEpoch(e, 0).ok());
    ASSERT_TRUE((*gpu)->StartEpoch(e, 0).ok());
    size_t seen = 0;
    for (;;) {
      auto a = (*host)->Next();
      auto b = (*gpu)->Next();
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(*a == nullptr, *b == nullptr);
      if (*a == nullptr) break;
      const LoadedBatch& hb = **a;
      LoadedBatch& gb = **b;
      ASSERT_TRUE(gb.on_gpu());
      ASSERT_EQ(hb.indices(), gb.indices());
      const int64_t elems = hb.offsets()[hb.size()];
      ASSERT_EQ(gb.shape(), std::vector<int64_t>{elems});
      std::vector<uint16_t> values(elems);
      std::vector<int64_t> offsets(hb.size() + 1), labels(hb.size());
      ASSERT_TRUE(gb.WaitOn(stream.get()).ok());
      ASSERT_EQ(cudaMemcpyAsync(values.data(), gb.samples(), elems * 2, cudaMemcpyDeviceToHost,
                                stream.get()),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpyAsync(offsets.data(), gb.offsets(), offsets.size() * 8,
                                cudaMemcpyDeviceToHost, stream.get()),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpyAsync(labels.data(), gb.labels(), labels.size() * 8,
                                cudaMemcpyDeviceToHost, stream.get()),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
      EXPECT_EQ(0, std::memcmp(values.data(), hb.samples(), elems * 2));
      EXPECT_EQ(0, std::memcmp(offsets.data(), hb.offsets(), offsets.size() * 8));
      EXPECT_EQ(0, std::memcmp(labels.data(), hb.labels(), labels.size() * 8));
      seen += hb.size();
    }
    EXPECT_EQ(seen, docs.size());
  }
}

}  // namespace
}  // namespace rf
