// CudaBatchDecoder (pipeline/output/cuda_batch_decode.h): the GPU's decode equals the host's bit
// for bit for every spec on random bits (NaNs, infinities and subnormals among them) at n = 1, 7
// and 256; labels of every integer dtype likewise; a batch larger than one grid; Decode queues
// stream work only (it is captured into a CUDA graph under the global capture mode, which refuses
// allocation and host synchronization); and what Create and Decode refuse, which needs no GPU. The
// GPU cases skip without one.
#include "pipeline/output/cuda_batch_decode.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/handles.h"
#include "decode/dtypes.h"
#include "pipeline/output/batch_decode.h"
#include "tests/pipeline/decode_testing.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/test_rng.h"

namespace rf {
namespace {

using testing::Describe;
using testing::RandomBytes;
using testing::SameBytes;
using testing::TestRng;

cuda::DeviceBuffer Upload(const std::vector<uint8_t>& bytes) {
  auto b = cuda::DeviceBuffer::Allocate(bytes.size(), "test input");
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  if (!b.ok()) return {};
  EXPECT_EQ(cudaMemcpy(b->data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  return std::move(*b);
}

cuda::DeviceBuffer Allocate(size_t bytes) {
  auto b = cuda::DeviceBuffer::Allocate(bytes, "test output");
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? std::move(*b) : cuda::DeviceBuffer{};
}

std::vector<uint8_t> Download(const cuda::DeviceBuffer& b, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), b.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

std::unique_ptr<CudaBatchDecoder> MakeDecoder(const DecodeSpec& s, uint32_t max_batch) {
  auto d = CudaBatchDecoder::Create(s, max_batch);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(*d) : nullptr;
}

// One batch of random stored bits and labels, decoded on the GPU on `stream` and on the host.
struct Decoded {
  std::vector<uint8_t> gpu, host;
  std::vector<int64_t> gpu_labels, host_labels;
};

Decoded DecodeBoth(const DecodeSpec& s, DType label_dtype, uint32_t n, TestRng& rng,
                   cudaStream_t stream) {
  Decoded d;
  const std::vector<uint8_t> stored =
      RandomBytes(rng, size_t{n} * s.channels * s.height * s.width * DTypeSize(s.stored));
  const std::vector<uint8_t> labels = RandomBytes(rng, size_t{n} * DTypeSize(label_dtype));
  const size_t out_bytes = n * s.OutputSampleBytes();
  d.host.resize(out_bytes);
  d.host_labels.resize(n);
  DecodeSamplesOnHost(s, stored.data(), n, d.host.data());
  DecodeLabelsOnHost(label_dtype, labels.data(), n, d.host_labels.data());

  const std::unique_ptr<CudaBatchDecoder> decoder = MakeDecoder(s, n);
  if (decoder == nullptr) return d;
  const cuda::DeviceBuffer in = Upload(stored), in_labels = Upload(labels);
  const cuda::DeviceBuffer out = Allocate(out_bytes), out_labels = Allocate(n * sizeof(int64_t));
  const Status st = decoder->Decode(in.data(), in_labels.data(), label_dtype, n, out.data(),
                                    out_labels.as<int64_t>(), stream);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  d.gpu = Download(out, out_bytes);
  d.gpu_labels.resize(n);
  EXPECT_EQ(cudaMemcpy(d.gpu_labels.data(), out_labels.data(), n * sizeof(int64_t),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  return d;
}

TEST(CudaBatchDecoder, EqualsTheHostDecodeBitForBitForEverySpec) {
  RF_REQUIRE_GPU();
  auto stream = cuda::CreateStream();
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  const std::vector<DType> label_dtypes = testing::DTypesOf(decode::IntegerDTypes{});
  TestRng rng(21);
  size_t cases = 0;
  // An odd shape (no element count a multiple of anything) and a CIFAR-shaped one.
  for (const auto& [c, h, w] : {std::tuple{3u, 5u, 7u}, std::tuple{3u, 32u, 32u}}) {
    for (const DecodeSpec& s : testing::EverySpec(c, h, w)) {
      for (uint32_t n : {1u, 7u, 256u}) {
        const DType label_dtype = label_dtypes[cases++ % label_dtypes.size()];
        const Decoded d = DecodeBoth(s, label_dtype, n, rng, stream->get());
        EXPECT_TRUE(SameBytes(d.gpu, d.host, DTypeSize(s.output))) << Describe(s) << ", n " << n;
        EXPECT_EQ(d.gpu_labels, d.host_labels) << DTypeName(label_dtype) << ", n " << n;
      }
    }
  }
  EXPECT_GE(cases, 2u * 60 * 3);
}

TEST(CudaBatchDecoder, LabelsOfEveryIntegerDTypeEqualTheHosts) {
  RF_REQUIRE_GPU();
  auto stream = cuda::CreateStream();
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  DecodeSpec s;
  s.output = DType::kUInt8;
  s.normalize = false;
  TestRng rng(5);
  for (DType label_dtype : testing::DTypesOf(decode::IntegerDTypes{})) {
    for (uint32_t n : {1u, 7u, 256u}) {
      const Decoded d = DecodeBoth(s, label_dtype, n, rng, stream->get());
      EXPECT_EQ(d.gpu_labels, d.host_labels) << DTypeName(label_dtype) << ", n " << n;
    }
  }
}

TEST(CudaBatchDecoder, ABatchLargerThanOneGridLoops) {
  RF_REQUIRE_GPU();
  auto stream = cuda::CreateStream();
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  // 4096 blocks of 256 threads cover 2^20 elements: 1000 samples of 3x28x28 are 2.2 times as many;
  // 1.2 million samples of one element each are 1.1 times as many labels.
  DecodeSpec s;
  s.stored = DType::kUInt8;
  s.output = DType::kBFloat16;
  s.layout = SampleLayout::kNHWC;
  s.channels = 3;
  s.height = s.width = 28;
  testing::SetStatistics(&s);
  TestRng rng(8);
  const Decoded d = DecodeBoth(s, DType::kUInt8, 1000, rng, stream->get());
  EXPECT_TRUE(SameBytes(d.gpu, d.host, 2));
  EXPECT_EQ(d.gpu_labels, d.host_labels);
  s.channels = s.height = s.width = 1;
  testing::SetStatistics(&s);
  const Decoded e = DecodeBoth(s, DType::kInt32, 1'200'000, rng, stream->get());
  EXPECT_TRUE(SameBytes(e.gpu, e.host, 2));
  EXPECT_EQ(e.gpu_labels, e.host_labels);
}

TEST(CudaBatchDecoder, DecodeIsCapturedIntoAGraphUnderGlobalCaptureMode) {
  RF_REQUIRE_GPU();
  auto stream = cuda::CreateStream();
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  // The three paths: a copy (NCHW, stored dtype), a transpose (NHWC, stored dtype), the kernel.
  for (const auto& [output, layout, normalize] :
       {std::tuple{DType::kUInt8, SampleLayout::kNCHW, false},
        std::tuple{DType::kUInt8, SampleLayout::kNHWC, false},
        std::tuple{DType::kBFloat16, SampleLayout::kNHWC, true}}) {
    DecodeSpec s;
    s.stored = DType::kUInt8;
    s.output = output;
    s.layout = layout;
    s.normalize = normalize;
    s.channels = 3;
    s.height = s.width = 32;
    testing::SetStatistics(&s);
    SCOPED_TRACE(Describe(s));
    constexpr uint32_t kN = 64;
    TestRng rng(2);
    const std::vector<uint8_t> stored = RandomBytes(rng, size_t{kN} * 3 * 32 * 32);
    const std::vector<uint8_t> labels = RandomBytes(rng, kN);
    std::vector<uint8_t> host(kN * s.OutputSampleBytes());
    DecodeSamplesOnHost(s, stored.data(), kN, host.data());

    const std::unique_ptr<CudaBatchDecoder> decoder = MakeDecoder(s, kN);
    ASSERT_NE(decoder, nullptr);
    const cuda::DeviceBuffer in = Upload(stored), in_labels = Upload(labels);
    const cuda::DeviceBuffer out = Allocate(host.size()), out_labels = Allocate(kN * 8);
    ASSERT_EQ(cudaStreamBeginCapture(stream->get(), cudaStreamCaptureModeGlobal), cudaSuccess);
    const Status captured = decoder->Decode(in.data(), in_labels.data(), DType::kUInt8, kN,
                                            out.data(), out_labels.as<int64_t>(), stream->get());
    auto graph = cuda::EndCaptureAndInstantiate(stream->get(), captured);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    ASSERT_EQ(cudaGraphLaunch(graph->get(), stream->get()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
    EXPECT_TRUE(SameBytes(Download(out, host.size()), host, DTypeSize(output)));
  }
}

// What follows checks arguments before any CUDA call (and a spec without normalize has no device
// buffer), so it runs without a GPU too.

TEST(CudaBatchDecoder, CreateRefusesWhatValidateRefuses) {
  DecodeSpec s;
  s.stored = DType::kFloat32;
  s.output = DType::kUInt8;
  s.normalize = false;
  auto d = CudaBatchDecoder::Create(s, 1);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsUsage());
  EXPECT_EQ(d.status().message(), s.Validate().message());
  s.output = DType::kFloat32;
  s.normalize = true;  // and no statistics
  d = CudaBatchDecoder::Create(s, 1);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsUsage());
  EXPECT_EQ(d.status().message(),
            "normalize needs one mean and one stddev per channel: 0 means and 0 stddevs for 1 "
            "channels");
}

TEST(CudaBatchDecoder, DecodeRefusesLabelsThatAreNotIntegersMissingArraysAndHugeBatches) {
  DecodeSpec s;
  s.output = DType::kFloat32;
  s.normalize = false;
  s.channels = 3;
  s.height = s.width = 32;
  auto d = CudaBatchDecoder::Create(s, 1'000'000);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // Never dereferenced: every call below is refused before anything is queued.
  uint8_t in[16], labels[16], out[16];
  int64_t labels_out[2];
  Status st = (*d)->Decode(in, labels, DType::kFloat32, 2, out, labels_out, nullptr);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "cannot decode labels of dtype float32 (4)");
  st = (*d)->Decode(in, nullptr, DType::kUInt8, 2, out, labels_out, nullptr);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "a batch decode needs its samples, labels and both outputs");
  st = (*d)->Decode(in, labels, DType::kUInt8, 700'000, out, labels_out, nullptr);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(),
            "a batch of 2150400000 elements is too large to decode (at most 2^31 - 1)");
  EXPECT_TRUE((*d)->Decode(nullptr, nullptr, DType::kFloat32, 0, nullptr, nullptr, nullptr).ok());
  // A batch larger than the decoder was made for, and a decoder for none.
  auto small = CudaBatchDecoder::Create(s, 4);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  st = (*small)->Decode(in, labels, DType::kUInt8, 5, out, labels_out, nullptr);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "a batch of 5 samples is larger than the decoder's 4");
  EXPECT_TRUE(CudaBatchDecoder::Create(s, 0).status().IsInvalidArgument());
}

}  // namespace
}  // namespace rf
