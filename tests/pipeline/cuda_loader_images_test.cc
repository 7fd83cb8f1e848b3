// Decoded images (image records) through a loader on a GPU against the host loader: the CPU
// decoder's batches copied to the GPU hold the same pixels and labels, in every output dtype and
// layout, and a held batch stays valid through later batches; nvJPEG's batches hold the same
// samples and labels, their pixels within the decoders' rounding (printed: the tolerance the docs
// state), their float outputs exactly the normalization of their pixels, the records nvJPEG does
// not take and the CPU share decoded exactly as the host does, a run repeated bit for bit at a
// fixed share, the auto share giving every record to the CPU threads where they keep up, and bad
// records named or skipped as on the host, and a dataset of no JPEG decoded by the CPU threads
// (auto), nvjpeg refused for it; with the alpha kept, the CPU threads' batches the host's and
// nvJPEG's its RGB with an opaque channel. Skips without a GPU; the nvJPEG cases skip where nvJPEG
// does not load.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "cuda/handles.h"
#include "cuda/nvjpeg_library.h"
#include "pipeline/loader.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/batch_copy.h"
#include "tests/testing/image_encoding.h"
#include "tests/testing/jpeg_testing.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

LoaderOptions Options(const std::string& path, DeviceKind device, DType dtype, bool nhwc,
                      ImageDecoderChoice decoder = ImageDecoderChoice::kCpu, uint32_t size = 40,
                      ImageCrop crop = ImageCrop::kRandomResized) {
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
  o.image.size = size;
  o.image.crop = crop;
  o.image.decoder = decoder;
  o.image.threads = 3;
  o.output_buffers = 4;
  o.epochs = 2;
  return o;
}

using Copy = testing::HostBatch;

// Two epochs' batches, copied to the host (on `stream`, after it waits for each batch). The
// first batch is held to the end and checked unchanged.
std::vector<Copy> Epochs(const LoaderOptions& o, cudaStream_t stream) {
  std::vector<Copy> out;
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return out;
  EXPECT_EQ((*l)->plan().kind, BatchKind::kImages);
  const size_t bytes =
      size_t{o.image.alpha ? 4u : 3u} * o.image.size * o.image.size * DTypeSize(o.output.dtype);
  auto fetch = [&](LoadedBatch& b) { return testing::CopyToHost(b, bytes, stream); };
  std::shared_ptr<LoadedBatch> held;
  for (uint64_t e = 0; e < o.epochs; ++e) {
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
        EXPECT_EQ(host[b].samples, gpu[b].samples)
            << "batch " << b << ", dtype " << DTypeName(dtype) << (nhwc ? ", NHWC" : "");
      }
    }
  }
}

// The loader's nvJPEG decoder, or a skip where nvJPEG does not load.
#define RF_REQUIRE_NVJPEG()                                         \
  do {                                                              \
    Result<const cuda::nvjpeg::Api*> api = cuda::nvjpeg::Library(); \
    if (!api.ok()) GTEST_SKIP() << api.status().ToString();         \
  } while (0)

// How far nvJPEG's pixels are from the CPU decoder's, over every sample of two epochs.
struct PixelGap {
  double mean = 0;
  int max = 0;
  double over8 = 0;  // the share of pixels more than 8 apart
};

PixelGap Gap(const std::vector<Copy>& a, const std::vector<Copy>& b) {
  PixelGap g;
  uint64_t n = 0, over = 0;
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].samples.size(), b[i].samples.size());
    for (size_t k = 0; k < std::min(a[i].samples.size(), b[i].samples.size()); ++k) {
      const int d = std::abs(int(a[i].samples[k]) - int(b[i].samples[k]));
      sum += d;
      over += d > 8;
      g.max = std::max(g.max, d);
      ++n;
    }
  }
  g.mean = n ? sum / n : 0;
  g.over8 = n ? double(over) / n : 0;
  return g;
}

void ExpectSameSamples(const std::vector<Copy>& a, const std::vector<Copy>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].indices, b[i].indices) << i;
    EXPECT_EQ(a[i].labels, b[i].labels) << i;
  }
}

class CudaLoaderNvjpeg : public ::testing::Test {
 protected:
  void SetUp() override {
    RF_REQUIRE_GPU();
    RF_REQUIRE_NVJPEG();
    jpegs_ = testing::MakeJpegs(50);
    ASSERT_TRUE(testing::WriteJpegDataset(t_.File("jpegs.rfd"), jpegs_).ok());
    Result<cuda::CudaStream> s = cuda::CreateStream();
    ASSERT_TRUE(s.ok());
    stream_ = std::move(*s);
  }
  std::string Data() const { return t_.File("jpegs.rfd"); }
  testing::TempDir t_;
  std::vector<std::vector<uint8_t>> jpegs_;
  cuda::CudaStream stream_;
};

TEST_F(CudaLoaderNvjpeg, SamplesEqualTheHostLoadersAndPixelsAreWithinTheDecodersRounding) {
  // Size 100: every crop of these images (40 to 199 pixels a side) is under twice the output,
  // so the CPU decodes at full size too and the gap is the JPEG decoders' alone. Size 40: the
  // CPU decodes most crops at 1/2, 1/4 (DCT scaling) and the GPU resamples the full image.
  for (uint32_t size : {100u, 40u}) {
    for (ImageCrop crop : {ImageCrop::kRandomResized, ImageCrop::kCenter}) {
      for (bool nhwc : {false, true}) {
        const auto host = Epochs(Options(Data(), DeviceKind::kCpu, DType::kUInt8, nhwc,
                                         ImageDecoderChoice::kCpu, size, crop),
                                 stream_.get());
        const auto gpu = Epochs(Options(Data(), DeviceKind::kCuda, DType::kUInt8, nhwc,
                                        ImageDecoderChoice::kNvjpeg, size, crop),
                                stream_.get());
        ExpectSameSamples(host, gpu);
        const PixelGap g = Gap(host, gpu);
        std::printf(
            "nvJPEG vs libjpeg-turbo, size %u, %s crop, %s: mean |diff| %.3f, max %d, "
            "%.4f%% over 8\n",
            size, crop == ImageCrop::kCenter ? "centre" : "random", nhwc ? "NHWC" : "NCHW", g.mean,
            g.max, 100 * g.over8);
        // The bounds the docs state (docs/images.md), with room over what was measured.
        EXPECT_LT(g.mean, size == 100 ? 1.0 : 2.0);
        EXPECT_LT(g.over8, size == 100 ? 0.002 : 0.02);
      }
    }
  }
}

TEST_F(CudaLoaderNvjpeg, FloatOutputsAreTheNormalizationOfItsPixelsAndRunsRepeatBitForBit) {
  // At a fixed CPU share (the auto share follows the consumer's waits: which decoder takes a
  // record, and so its pixels' rounding, may change from run to run).
  auto run = [&](DType dtype) {
    LoaderOptions o = Options(Data(), DeviceKind::kCuda, dtype, true, ImageDecoderChoice::kNvjpeg);
    o.image.cpu_share = 0.25;
    return Epochs(o, stream_.get());
  };
  const auto u8 = run(DType::kUInt8);
  const auto again = run(DType::kUInt8);
  ASSERT_EQ(u8.size(), again.size());
  for (size_t b = 0; b < u8.size(); ++b) EXPECT_EQ(u8[b].samples, again[b].samples) << b;
  const auto f32 = run(DType::kFloat32);
  ExpectSameSamples(u8, f32);
  const ImageDecodeSpec spec;  // ImageNet's statistics, the loader's default
  for (size_t b = 0; b < u8.size(); ++b) {
    ASSERT_EQ(f32[b].samples.size(), u8[b].samples.size() * 4);
    for (size_t k = 0; k < u8[b].samples.size(); ++k) {
      const int c = static_cast<int>(k % 3);  // NHWC
      const float want = (static_cast<float>(u8[b].samples[k]) - spec.mean[c]) / spec.stddev[c];
      float got;
      std::memcpy(&got, &f32[b].samples[k * 4], 4);
      ASSERT_EQ(got, want) << "batch " << b << " element " << k;
    }
  }
}

// image_alpha keep on a GPU: the CPU threads' batches copied to it are the host loader's, and
// nvJPEG's are its RGB batches with an opaque fourth channel (JPEGs have no alpha), NHWC and NCHW.
TEST_F(CudaLoaderNvjpeg, AlphaKeptIsTheHostsOnTheCpuThreadsAndNvjpegsRgbWithAnOpaqueChannel) {
  for (bool nhwc : {true, false}) {
    LoaderOptions host = Options(Data(), DeviceKind::kCpu, DType::kUInt8, nhwc);
    LoaderOptions threads = Options(Data(), DeviceKind::kCuda, DType::kUInt8, nhwc);
    host.image.alpha = threads.image.alpha = true;
    const auto h = Epochs(host, stream_.get()), g = Epochs(threads, stream_.get());
    ExpectSameSamples(h, g);
    for (size_t b = 0; b < h.size(); ++b) EXPECT_EQ(h[b].samples, g[b].samples) << b;

    LoaderOptions rgb =
        Options(Data(), DeviceKind::kCuda, DType::kUInt8, nhwc, ImageDecoderChoice::kNvjpeg);
    rgb.image.cpu_share = 0;
    LoaderOptions rgba = rgb;
    rgba.image.alpha = true;
    const auto three = Epochs(rgb, stream_.get()), four = Epochs(rgba, stream_.get());
    ExpectSameSamples(three, four);
    const size_t plane = size_t{rgb.image.size} * rgb.image.size;
    for (size_t b = 0; b < three.size(); ++b) {
      const size_t n = three[b].samples.size() / (3 * plane);
      ASSERT_EQ(four[b].samples.size(), n * 4 * plane);
      size_t wrong_colour = 0, not_opaque = 0;
      for (size_t s = 0; s < n; ++s) {
        for (size_t p = 0; p < plane; ++p) {
          for (size_t c = 0; c < 4; ++c) {
            const size_t at4 = nhwc ? (s * plane + p) * 4 + c : (s * 4 + c) * plane + p;
            const uint8_t v = four[b].samples[at4];
            if (c == 3) {
              not_opaque += v != 255;
              continue;
            }
            const size_t at3 = nhwc ? (s * plane + p) * 3 + c : (s * 3 + c) * plane + p;
            wrong_colour += v != three[b].samples[at3];
          }
        }
      }
      EXPECT_EQ(wrong_colour, 0u) << "batch " << b << (nhwc ? ", NHWC" : ", NCHW");
      EXPECT_EQ(not_opaque, 0u) << "batch " << b << (nhwc ? ", NHWC" : ", NCHW");
    }
  }
}

TEST_F(CudaLoaderNvjpeg, RecordsNvjpegDoesNotTakeAreDecodedByTheCpuFallbackAsOnTheHost) {
  // 4:1:1 chroma: nvJPEG's hardware decoder does not take it (and on a GPU without one, the CUDA
  // decode may); whichever decodes it, the samples are the host's, and the CPU's bit for bit
  // where the CPU fallback decoded them.
  std::vector<std::vector<uint8_t>> j;
  for (uint32_t i = 0; i < 24; ++i)
    j.push_back(testing::MakeJpeg(60 + i * 3, 90 + i * 2, 3, 90, TJSAMP_411, i));
  ASSERT_TRUE(testing::WriteJpegDataset(t_.File("411.rfd"), j).ok());
  const auto host = Epochs(Options(t_.File("411.rfd"), DeviceKind::kCpu, DType::kUInt8, false,
                                   ImageDecoderChoice::kCpu, 60),
                           stream_.get());
  Result<std::unique_ptr<Loader>> l =
      Loader::Open(Options(t_.File("411.rfd"), DeviceKind::kCuda, DType::kUInt8, false,
                           ImageDecoderChoice::kNvjpeg, 60));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const std::string describe = (*l)->Describe();
  std::printf("%s\n", describe.c_str());
  EXPECT_NE(describe.find("nvJPEG"), std::string::npos) << describe;
  const auto gpu = Epochs(Options(t_.File("411.rfd"), DeviceKind::kCuda, DType::kUInt8, false,
                                  ImageDecoderChoice::kNvjpeg, 60),
                          stream_.get());
  ExpectSameSamples(host, gpu);
  if (describe.find("hardware") != std::string::npos) {
    for (size_t b = 0; b < host.size(); ++b) EXPECT_EQ(host[b].samples, gpu[b].samples) << b;
  } else {
    EXPECT_LT(Gap(host, gpu).mean, 2.0);
  }
}

// A dataset whose media type holds no JPEG (image/webp here): nvJPEG would take none of its
// records, so auto decodes on the CPU threads alone (the host's batches bit for bit), and an
// explicit nvjpeg is refused as an option that would do nothing.
TEST_F(CudaLoaderNvjpeg, ADatasetOfNoJpegIsTheCpuThreadsAndNvjpegIsRefusedForIt) {
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kBytes;
  spec.media_type = "image/webp";
  spec.num_classes = 3;
  {
    auto w = DatasetWriter::Create(t_.File("webp.rfd"), spec, WriterOptions{});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (uint32_t i = 0; i < 20; ++i) {
      const uint32_t width = 40 + i * 3, height = 36 + i * 2;
      std::vector<uint8_t> rgb(size_t{width} * height * 3);
      for (size_t k = 0; k < rgb.size(); ++k) rgb[k] = static_cast<uint8_t>((k * 7 + i * 31) % 251);
      const std::vector<uint8_t> webp = testing::EncodeWebp(rgb, width, height, true);
      ASSERT_FALSE(webp.empty());
      const uint64_t offsets[2] = {0, webp.size()};
      const uint8_t label = static_cast<uint8_t>(i % 3);
      ASSERT_TRUE((*w)->AppendRecords(webp.data(), offsets, &label, 1).ok());
    }
    ASSERT_TRUE((*w)->Finish().ok());
  }
  const std::string data = t_.File("webp.rfd");
  Result<std::unique_ptr<Loader>> l = Loader::Open(
      Options(data, DeviceKind::kCuda, DType::kUInt8, false, ImageDecoderChoice::kAuto));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const std::string describe = (*l)->Describe();
  EXPECT_EQ(describe.find("nvJPEG"), std::string::npos) << describe;
  EXPECT_NE(describe.find("image decode on 3 CPU threads"), std::string::npos) << describe;
  const auto host = Epochs(Options(data, DeviceKind::kCpu, DType::kUInt8, false), stream_.get());
  const auto gpu =
      Epochs(Options(data, DeviceKind::kCuda, DType::kUInt8, false, ImageDecoderChoice::kAuto),
             stream_.get());
  ASSERT_EQ(host.size(), gpu.size());
  for (size_t b = 0; b < host.size(); ++b) {
    EXPECT_EQ(host[b].labels, gpu[b].labels) << b;
    EXPECT_EQ(host[b].samples, gpu[b].samples) << b;
  }
  Result<std::unique_ptr<Loader>> refused = Loader::Open(
      Options(data, DeviceKind::kCuda, DType::kUInt8, false, ImageDecoderChoice::kNvjpeg));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsUsage()) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("image_decoder nvjpeg decodes JPEGs"),
            std::string::npos)
      << refused.status().ToString();
}

TEST_F(CudaLoaderNvjpeg, TheCpuShareIsTheHostsDecodeAndARunRepeatsBitForBit) {
  // Share 1: every record on the CPU threads, so the batches are the host loader's bit for bit.
  // Share 0.5: half of each batch (6 of 12) on the CPU, the rest nvJPEG's; each sample is one
  // or the other's, and a second run makes the same choice.
  auto with = [&](double share) {
    LoaderOptions o =
        Options(Data(), DeviceKind::kCuda, DType::kUInt8, true, ImageDecoderChoice::kNvjpeg, 64);
    o.image.cpu_share = share;
    return Epochs(o, stream_.get());
  };
  const auto host =
      Epochs(Options(Data(), DeviceKind::kCpu, DType::kUInt8, true, ImageDecoderChoice::kCpu, 64),
             stream_.get());
  const auto all_cpu = with(1.0), none = with(0.0), half = with(0.5), again = with(0.5);
  ExpectSameSamples(host, all_cpu);
  ExpectSameSamples(host, half);
  for (size_t b = 0; b < host.size(); ++b) EXPECT_EQ(host[b].samples, all_cpu[b].samples) << b;
  const size_t bytes = size_t{3} * 64 * 64;
  size_t cpu_only = 0, gpu_only = 0;
  for (size_t b = 0; b < host.size(); ++b) {
    EXPECT_EQ(half[b].samples, again[b].samples) << b;
    const size_t n = host[b].indices.size();
    size_t from_cpu = 0;
    for (size_t i = 0; i < n; ++i) {
      const auto at = [&](const Copy& c) { return c.samples.begin() + i * bytes; };
      const bool cpu = std::equal(at(half[b]), at(half[b]) + bytes, at(host[b]));
      const bool gpu = std::equal(at(half[b]), at(half[b]) + bytes, at(none[b]));
      EXPECT_TRUE(cpu || gpu) << "batch " << b << " sample " << i;
      from_cpu += cpu;
      cpu_only += cpu && !gpu;
      gpu_only += gpu && !cpu;
    }
    EXPECT_GE(from_cpu, static_cast<size_t>(std::floor(n * 0.5 + 0.5))) << b;
  }
  // The two decoders' pixels differ on most images, so both kinds are seen.
  EXPECT_GT(cpu_only, 0u);
  EXPECT_GT(gpu_only, 0u);
}

TEST_F(CudaLoaderNvjpeg, TheAutoShareGivesTheCpuThreadsEveryRecordWhereTheyKeepUp) {
  // A consumer that takes 15 ms a batch, far longer than 3 CPU threads take for 12 small images:
  // the auto share (pipeline/images/cpu_share.h) rises from its floor to 1 as the consumer finds
  // its batches ready, and from then on every batch is the host loader's, bit for bit. The share
  // starts at its floor, so the first batches are partly nvJPEG's.
  LoaderOptions o =
      Options(Data(), DeviceKind::kCuda, DType::kUInt8, true, ImageDecoderChoice::kNvjpeg, 64);
  o.image.threads = 5;              // two nvJPEG drivers and 3 CPU threads
  o.epochs = 14;                    // 70 batches of 12 (the last of each epoch 2)
  ASSERT_LT(o.image.cpu_share, 0);  // the default
  LoaderOptions h =
      Options(Data(), DeviceKind::kCpu, DType::kUInt8, true, ImageDecoderChoice::kCpu, 64);
  h.epochs = o.epochs;
  const auto host = Epochs(h, stream_.get());
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const size_t bytes = size_t{3} * 64 * 64;
  std::vector<bool> same;  // each batch: the host's bit for bit
  for (uint64_t e = 0; e < o.epochs; ++e) {
    ASSERT_TRUE((*l)->StartEpoch(e, 0).ok());
    for (;;) {
      Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (*b == nullptr) break;
      const size_t at = same.size();
      ASSERT_LT(at, host.size());
      EXPECT_EQ((*b)->indices(), host[at].indices) << at;
      same.push_back(testing::CopyToHost(**b, bytes, stream_.get()).samples == host[at].samples);
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
    }
  }
  ASSERT_EQ(same.size(), host.size());
  const std::string describe = (*l)->Describe();
  std::printf("%s\n", describe.c_str());
  EXPECT_NE(describe.find("as the CPU threads keep up"), std::string::npos) << describe;
  EXPECT_NE(describe.find("now 1.000"), std::string::npos) << describe;
  // The floor (about 0.025 for 3 threads beside two drivers) rises by 0.05 a batch after the
  // first two found ready: 1 within about 28 batches (each epoch's first is not counted), with
  // room for waits while the decoders start.
  for (size_t b = 40; b < same.size(); ++b) EXPECT_TRUE(same[b]) << "batch " << b;
  // And before, some batch was not all the CPU's (the floor is not 1).
  EXPECT_FALSE(same[0] && same[1] && same[2]);
}

TEST_F(CudaLoaderNvjpeg, BadRecordsAreNamedOrSkippedAsOnTheHost) {
  std::vector<std::vector<uint8_t>> j = jpegs_;
  j[17].resize(j[17].size() / 2);  // cut short
  std::vector<uint8_t> huge = j[40];
  for (size_t p = 2; p + 8 < huge.size(); ++p) {
    if (huge[p] == 0xff && huge[p + 1] == 0xc0) {
      huge[p + 5] = huge[p + 6] = huge[p + 7] = huge[p + 8] = 0xff;  // 65535 x 65535
      break;
    }
  }
  j[40] = huge;
  j[41] = {0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0, 0, 13};
  ASSERT_TRUE(testing::WriteJpegDataset(t_.File("bad.rfd"), j).ok());
  // Share 0: the bad records go through the nvJPEG path's checks and its late fallback; share
  // 1: through the CPU share.
  for (double share : {0.0, 1.0}) {
    SCOPED_TRACE(share);
    LoaderOptions o = Options(t_.File("bad.rfd"), DeviceKind::kCuda, DType::kUInt8, false,
                              ImageDecoderChoice::kNvjpeg, 40, ImageCrop::kCenter);
    o.image.cpu_share = share;
    o.epochs = 1;
    o.pipeline.order.shuffle = ShuffleMode::kNone;  // the skipped records named in stored order
    {
      Result<std::unique_ptr<Loader>> l = Loader::Open(o);
      ASSERT_TRUE(l.ok()) << l.status().ToString();
      const Status st = testing::FirstErrorOfEpoch(**l);
      ASSERT_TRUE(st.IsCorruption()) << st.ToString();
      EXPECT_EQ(st.path(), t_.File("bad.rfd"));
      EXPECT_NE(st.message().find("record 17 (sample 17 of the dataset)"), std::string::npos)
          << st.message();
    }
    o.image.skip_bad_records = true;
    Result<std::unique_ptr<Loader>> l = Loader::Open(o);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    ASSERT_TRUE((*l)->StartEpoch(0, 0).ok());
    uint64_t seen = 0;
    for (;;) {
      Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (*b == nullptr) break;
      for (uint64_t i : (*b)->indices()) EXPECT_TRUE(i != 17 && i != 40 && i != 41) << i;
      seen += (*b)->size();
    }
    EXPECT_EQ(seen, j.size() - 3);
    const SkippedRecords s = (*l)->skipped();
    ASSERT_EQ(s.count, 3u);
    EXPECT_NE(s.named[0].find("libjpeg-turbo: Premature end of JPEG file"), std::string::npos)
        << s.named[0];
    EXPECT_NE(s.named[1].find("65535x65535"), std::string::npos) << s.named[1];
    EXPECT_NE(s.named[2].find("PNG: truncated: the data ends inside the IHDR chunk"),
              std::string::npos)
        << s.named[2];
  }
}

}  // namespace
}  // namespace rf
