// The loader over image records (pipeline/images/image_stage.h): every sample the decode of
// its own record under its own crop, keyed by (seed, epoch, index) whatever the threads, the depth
// or a resume; evaluation crops fixed; the outputs' dtypes; the decode running ahead of the
// consumer; bad records stopping the run naming file, chunk and record, or skipped, counted and
// reported; and the options decoded images refuse.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "decode/jpeg_image.h"
#include "io/dataset.h"
#include "pipeline/loader.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/jpeg_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using Jpegs = std::vector<std::vector<uint8_t>>;
using Pixels = std::map<uint64_t, std::vector<uint8_t>>;  // global index -> its output bytes

// A CPU loader of decoded images (uint8 NHWC, not normalized, size 32, crops of `crop`).
LoaderOptions DecodedOptions(const std::string& path, uint32_t batch, ImageCrop crop,
                             uint32_t threads = 2) {
  LoaderOptions o = testing::HostOptions(path, batch);
  o.output.dtype = DType::kUInt8;
  o.output.layout = SampleLayout::kNHWC;
  o.image.size = 32;
  o.image.crop = crop;
  o.image.threads = threads;
  o.output_buffers = 4;
  return o;
}

struct Epoch {
  Pixels pixels;
  std::vector<uint64_t> order;
  std::vector<uint32_t> sizes;
  std::vector<uint64_t> positions;
};

// Every batch of `epoch` from `position`, each sample's bytes by its index, each label checked
// (i % 5).
Epoch TakeEpoch(Loader& l, uint64_t epoch, uint64_t position = 0) {
  Epoch e;
  EXPECT_TRUE(l.StartEpoch(epoch, position).ok());
  for (;;) {
    Result<std::shared_ptr<LoadedBatch>> r = l.Next();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || *r == nullptr) break;
    const LoadedBatch& b = **r;
    EXPECT_EQ(b.offsets(), nullptr);
    EXPECT_EQ(b.epoch(), epoch);
    const size_t bytes = DTypeSize(b.dtype()) * 3 * 32 * 32;
    EXPECT_EQ(b.shape().size(), 4u);
    EXPECT_EQ(b.shape()[0], b.size());
    e.sizes.push_back(b.size());
    e.positions.push_back(b.position());
    for (uint32_t i = 0; i < b.size(); ++i) {
      const uint64_t g = b.indices()[i];
      const auto* p = static_cast<const uint8_t*>(b.samples()) + i * bytes;
      e.pixels[g].assign(p, p + bytes);
      e.order.push_back(g);
      EXPECT_EQ(b.labels()[i], int64_t(g % 5));
    }
  }
  return e;
}

class LoaderImages : public ::testing::Test {
 protected:
  void SetUp() override {
    jpegs_ = testing::MakeJpegs(70);
    ASSERT_TRUE(testing::WriteJpegDataset(dir_.File("jpegs.rfd"), jpegs_).ok());
  }
  std::string Data() const { return dir_.File("jpegs.rfd"); }
  // `jpegs` with record i replaced by `bad`, written as `name`.
  std::string WithBad(const std::string& name, const std::map<uint64_t, std::vector<uint8_t>>& bad,
                      CodecSpec codec = {}) {
    Jpegs j = jpegs_;
    for (const auto& [i, bytes] : bad) j[i] = bytes;
    EXPECT_TRUE(testing::WriteJpegDataset(dir_.File(name), j, 5, 16384, codec).ok());
    return dir_.File(name);
  }
  std::vector<uint8_t> Truncated(uint64_t i) const {
    return std::vector<uint8_t>(jpegs_[i].begin(), jpegs_[i].begin() + jpegs_[i].size() / 2);
  }
  // Cases run with and without the loader's worker (LoaderOptions::worker).
  void ResumedRunSeesTheCropsOfOneNeverStopped(bool worker);
  void BadRecordStopsTheRunNamingFileChunkAndRecord(bool worker);
  void SkipBadRecordsSkipsCountsAndReportsThem(bool worker);
  testing::TempDir dir_;
  Jpegs jpegs_;
};

TEST_F(LoaderImages, EverySampleIsItsOwnRecordDecodedUnderItsOwnCrop) {
  const LoaderOptions o = DecodedOptions(Data(), 16, ImageCrop::kRandomResized);
  auto l = testing::OpenLoader(o);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->plan().kind, BatchKind::kImages);

  EXPECT_EQ(l->sample_shape(), (std::vector<int64_t>{32, 32, 3}));
  auto ref = JpegImageDecoder::Create(testing::ImageSpecOf(o));
  ASSERT_TRUE(ref.ok());
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    const Epoch e = TakeEpoch(*l, epoch);
    ASSERT_EQ(e.pixels.size(), jpegs_.size());  // every record once
    for (const auto& [g, got] : e.pixels) {
      std::vector<uint8_t> want(got.size());
      ASSERT_EQ((*ref)->Decode(jpegs_[g].data(), jpegs_[g].size(), epoch, g, want.data()), "");
      ASSERT_EQ(got, want) << "sample " << g << " of epoch " << epoch;
    }
    // Positions: batch after batch, the last one partial.
    for (size_t b = 0; b < e.positions.size(); ++b) EXPECT_EQ(e.positions[b], 16 * b);
  }
  EXPECT_NE(l->Describe().find("images 32x32 (random resized crop and flip), image decode on 2 CPU "
                               "threads, 2 batches ahead"),
            std::string::npos)
      << l->Describe();
}

TEST_F(LoaderImages, TheBatchesAreTheSameWhateverTheThreadsAndTheDepth) {
  LoaderOptions one = DecodedOptions(Data(), 8, ImageCrop::kRandomResized, 1);
  one.output_buffers = 1;
  LoaderOptions many = DecodedOptions(Data(), 8, ImageCrop::kRandomResized, 4);
  many.output_buffers = 8;
  // And with the stage on the loader's worker thread (LoaderOptions::worker, as Python's).
  LoaderOptions worker = DecodedOptions(Data(), 8, ImageCrop::kRandomResized, 3);
  worker.worker = true;
  auto a = testing::OpenLoader(one);
  auto b = testing::OpenLoader(many);
  auto c = testing::OpenLoader(worker);
  ASSERT_TRUE(a && b && c);
  const Epoch ea = TakeEpoch(*a, 1), eb = TakeEpoch(*b, 1), ec = TakeEpoch(*c, 1);
  EXPECT_EQ(ea.order, eb.order);
  EXPECT_EQ(ea.pixels, eb.pixels);
  EXPECT_EQ(ea.order, ec.order);
  EXPECT_EQ(ea.pixels, ec.pixels);
  EXPECT_EQ(ea.positions, ec.positions);
}

TEST_F(LoaderImages, AResumedRunSeesTheCropsOfOneNeverStopped) {
  for (const bool worker : {false, true}) {
    SCOPED_TRACE(worker ? "on the worker" : "on the caller's thread");
    ResumedRunSeesTheCropsOfOneNeverStopped(worker);
  }
}

void LoaderImages::ResumedRunSeesTheCropsOfOneNeverStopped(bool worker) {
  LoaderOptions o = DecodedOptions(Data(), 8, ImageCrop::kRandomResized);
  o.worker = worker;
  Epoch straight;
  {
    auto l = testing::OpenLoader(o);
    ASSERT_TRUE(l);
    TakeEpoch(*l, 0);
    straight = TakeEpoch(*l, 1);
  }
  // A new loader (a new process, as far as the loader can tell) resumed at epoch 1, batch 3.
  auto resumed = testing::OpenLoader(o);
  ASSERT_TRUE(resumed);
  const Epoch rest = TakeEpoch(*resumed, 1, 24);
  ASSERT_EQ(rest.order.size(), jpegs_.size() - 24);
  EXPECT_EQ(rest.order, std::vector<uint64_t>(straight.order.begin() + 24, straight.order.end()));
  for (const auto& [g, got] : rest.pixels) EXPECT_EQ(got, straight.pixels.at(g)) << g;
  // And a loader stopped mid-epoch and restarted there by StartEpoch.
  auto again = testing::OpenLoader(o);
  ASSERT_TRUE(again);
  ASSERT_TRUE(again->StartEpoch(1, 0).ok());
  ASSERT_TRUE(again->Next().ok());
  EXPECT_EQ(again->position(), 8u);  // the consumer's, though the decode ran ahead
  const Epoch after = TakeEpoch(*again, 1, 8);
  for (const auto& [g, got] : after.pixels) EXPECT_EQ(got, straight.pixels.at(g)) << g;
}

TEST_F(LoaderImages, EvaluationCropsAreTheSameEveryEpoch) {
  const LoaderOptions o = DecodedOptions(Data(), 16, ImageCrop::kCenter);
  auto l = testing::OpenLoader(o);
  ASSERT_TRUE(l);
  const Epoch e0 = TakeEpoch(*l, 0), e1 = TakeEpoch(*l, 1);
  EXPECT_EQ(e0.pixels, e1.pixels);
  auto ref = JpegImageDecoder::Create(testing::ImageSpecOf(o));
  ASSERT_TRUE(ref.ok());
  std::vector<uint8_t> want(3 * 32 * 32);
  ASSERT_EQ((*ref)->Decode(jpegs_[5].data(), jpegs_[5].size(), 9, 5, want.data()), "");
  EXPECT_EQ(e0.pixels.at(5), want);
}

TEST_F(LoaderImages, FloatOutputsAreThePixelsNormalizedWithImageNetsStatistics) {
  LoaderOptions u8 = DecodedOptions(Data(), 16, ImageCrop::kRandomResized);
  u8.output.layout = SampleLayout::kNCHW;
  LoaderOptions f32 = u8;
  f32.output.dtype = DType::kFloat32;
  f32.output.normalize = true;
  auto a = testing::OpenLoader(u8);
  auto b = testing::OpenLoader(f32);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->sample_shape(), (std::vector<int64_t>{3, 32, 32}));
  const Epoch pa = TakeEpoch(*a, 0), pb = TakeEpoch(*b, 0);
  const ImageDecodeSpec imagenet;
  for (const auto& [g, pixels] : pa.pixels) {
    const std::vector<uint8_t>& floats = pb.pixels.at(g);
    for (size_t i = 0; i < pixels.size(); ++i) {
      const size_t c = i / (32 * 32);  // NCHW
      float v;
      std::memcpy(&v, &floats[i * 4], 4);
      ASSERT_EQ(v, (static_cast<float>(pixels[i]) - imagenet.mean[c]) / imagenet.stddev[c]);
    }
  }
  // Statistics of the caller's: three, in pixel units.
  LoaderOptions mine = f32;
  mine.output.mean = {100, 110, 120};
  mine.output.stddev = {50, 60, 70};
  auto c = testing::OpenLoader(mine);
  ASSERT_TRUE(c);
  const Epoch pc = TakeEpoch(*c, 0);
  float v;
  std::memcpy(&v, &pc.pixels.at(3)[32 * 32 * 4 * 2], 4);  // channel 2's first pixel
  EXPECT_EQ(v, (static_cast<float>(pa.pixels.at(3)[32 * 32 * 2]) - 120.f) / 70.f);
}

TEST_F(LoaderImages, TheDecodeRunsAheadWhileTheConsumerHoldsItsBatch) {
  LoaderOptions o = DecodedOptions(Data(), 16, ImageCrop::kRandomResized, 1);
  auto l = testing::OpenLoader(o);
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  auto first = l->Next();
  ASSERT_TRUE(first.ok() && *first);
  // The consumer "trains" on batch 0: meanwhile the decode thread decodes batch 1 (the loader
  // keeps 2 in flight: 4 buffers less the consumer's 2), which Next() queued before it waited
  // for batch 0.
  for (int i = 0; i < 100 && l->stats().images_decoded < 32; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(l->stats().images_decoded, 32u);  // batches 0 and 1, not more
  EXPECT_EQ(l->stats().batches, 1u);
  EXPECT_GT(l->stats().image_busy_seconds, 0);
  EXPECT_EQ(l->stats().image_threads, 1u);
  // Next() waited for batch 0's decode: a time, within the loader's clock.
  const LoaderStats s = l->stats();
  EXPECT_GT(s.image_wait_seconds, 0);
  EXPECT_LE(s.image_wait_seconds, s.seconds);
}

TEST_F(LoaderImages, ABadRecordStopsTheRunNamingFileChunkAndRecord) {
  for (const bool worker : {false, true}) {
    SCOPED_TRACE(worker ? "on the worker" : "on the caller's thread");
    BadRecordStopsTheRunNamingFileChunkAndRecord(worker);
  }
}

void LoaderImages::BadRecordStopsTheRunNamingFileChunkAndRecord(bool worker) {
  const std::string data = WithBad(worker ? "bad-w.rfd" : "bad.rfd", {{17, Truncated(17)}});
  auto d = Dataset::Open(data);
  ASSERT_TRUE(d.ok());
  LoaderOptions o = DecodedOptions(data, 8, ImageCrop::kCenter);
  o.worker = worker;
  auto l = testing::OpenLoader(o);
  ASSERT_TRUE(l);
  const Status st = testing::FirstErrorOfEpoch(*l);
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_EQ(st.path(), data);
  // The chunk holding sample 17, and the record's own first byte in the file.
  size_t c = 0;
  while (c + 1 < d->chunk_count() && d->chunk(c + 1).first_sample <= 17) ++c;
  EXPECT_EQ(st.chunk(), d->chunk(c).entry.index);
  ASSERT_TRUE(st.offset().has_value());
  std::ifstream f(data, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(*st.offset()));
  std::vector<char> head(4);
  f.read(head.data(), 4);
  EXPECT_EQ(std::memcmp(head.data(), jpegs_[17].data(), 4), 0);
  EXPECT_NE(st.message().find("record 17 (sample 17 of the dataset), an image record of " +
                              std::to_string(jpegs_[17].size() / 2) +
                              " bytes, does not decode: "
                              "JPEG: libjpeg-turbo: Premature end of JPEG file"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("skip_bad_records"), std::string::npos);
  // The loader stays failed until StartEpoch.
  EXPECT_FALSE(l->Next().ok());
}

TEST_F(LoaderImages, ABadRecordOfACompressedChunkIsNamedByItsByteInTheChunksData) {
  const std::string data = WithBad("zstd.rfd", {{30, Truncated(30)}}, CodecSpec{Codec::kZstd, 3});
  auto l = testing::OpenLoader(DecodedOptions(data, 8, ImageCrop::kCenter));
  ASSERT_TRUE(l);
  const Status st = testing::FirstErrorOfEpoch(*l);
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("record 30 (sample 30 of the dataset)"), std::string::npos);
  EXPECT_NE(st.message().find(" of the chunk's data)"), std::string::npos) << st.message();
}

TEST_F(LoaderImages, SkipBadRecordsSkipsCountsAndReportsThem) {
  for (const bool worker : {false, true}) {
    SCOPED_TRACE(worker ? "on the worker" : "on the caller's thread");
    SkipBadRecordsSkipsCountsAndReportsThem(worker);
  }
}

void LoaderImages::SkipBadRecordsSkipsCountsAndReportsThem(bool worker) {
  std::vector<uint8_t> huge = jpegs_[40];
  for (size_t p = 2; p + 8 < huge.size(); ++p) {
    if (huge[p] == 0xff && huge[p + 1] == 0xc0) {
      huge[p + 5] = huge[p + 6] = huge[p + 7] = huge[p + 8] = 0xff;  // 65535 x 65535
      break;
    }
  }
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0, 0, 13};
  const std::string data =
      WithBad(worker ? "bad3-w.rfd" : "bad3.rfd", {{3, Truncated(3)}, {40, huge}, {41, png}});
  LoaderOptions o = DecodedOptions(data, 8, ImageCrop::kRandomResized);
  o.image.skip_bad_records = true;
  o.worker = worker;
  o.pipeline.order.shuffle = ShuffleMode::kNone;  // stored order: batch 5 holds 40 to 47
  auto l = testing::OpenLoader(o);
  ASSERT_TRUE(l);
  const Epoch e = TakeEpoch(*l, 0);
  EXPECT_EQ(e.pixels.size(), jpegs_.size() - 3);
  EXPECT_EQ(e.pixels.count(3) + e.pixels.count(40) + e.pixels.count(41), 0u);
  EXPECT_EQ(e.sizes[0], 7u);      // 0 to 7 less 3
  EXPECT_EQ(e.sizes[5], 6u);      // 40 to 47 less two
  EXPECT_EQ(e.positions[1], 8u);  // positions count the skipped records too
  const SkippedRecords s = l->skipped();
  EXPECT_EQ(s.count, 3u);
  ASSERT_EQ(s.named.size(), 3u);
  EXPECT_EQ(s.named[0].rfind("sample 3 (" + data + " chunk ", 0), 0u) << s.named[0];
  EXPECT_NE(s.named[0].find("record 3): JPEG: libjpeg-turbo: Premature end of JPEG file"),
            std::string::npos)
      << s.named[0];
  EXPECT_NE(s.named[1].find("a frame header of 65535x65535 pixels, more than max_image_side "
                            "16384 a side"),
            std::string::npos)
      << s.named[1];
  EXPECT_NE(s.named[2].find("PNG: truncated: the data ends inside the IHDR chunk"),
            std::string::npos);
  EXPECT_EQ(s.Text(1).rfind("3 bad image records skipped in epoch 1: sample 3 (", 0), 0u);
  EXPECT_EQ(l->stats().records_skipped, 3u);
  // The next epoch's report starts over.
  ASSERT_TRUE(l->StartEpoch(1, 0).ok());
  EXPECT_EQ(l->skipped().count, 0u);
}

TEST_F(LoaderImages, MaxImageSideRefusesLargerImagesAsBadRecords) {
  LoaderOptions o = DecodedOptions(Data(), 8, ImageCrop::kCenter);
  o.image.max_side = 100;
  o.image.skip_bad_records = true;
  auto l = testing::OpenLoader(o);
  ASSERT_TRUE(l);
  const Epoch e = TakeEpoch(*l, 0);
  uint64_t small = 0;
  for (uint32_t i = 0; i < jpegs_.size(); ++i) {
    const uint32_t h = 40 + (i * 37) % 160, w = 40 + (i * 53 + 11) % 160;  // MakeJpegs' sizes
    small += h <= 100 && w <= 100;
  }
  EXPECT_EQ(e.pixels.size(), small);
  EXPECT_EQ(l->skipped().count, jpegs_.size() - small);
}

TEST_F(LoaderImages, WhatDecodedImagesCannotTakeIsRefusedNamingTheOption) {
  auto refused = [](const LoaderOptions& o, const std::string& what) {
    Result<std::unique_ptr<Loader>> l = Loader::Open(o);
    ASSERT_FALSE(l.ok()) << what;
    EXPECT_TRUE(l.status().IsUsage()) << l.status().ToString();
    EXPECT_NE(l.status().message().find(what), std::string::npos) << l.status().message();
  };
  LoaderOptions o = DecodedOptions(Data(), 8, ImageCrop::kRandomResized);
  o.output.augment = "flip";
  refused(o, "augment: image records are decoded with their own random resized crop");
  o = DecodedOptions(Data(), 8, ImageCrop::kRandomResized);
  o.output.dtype = DType::kFloat32;
  o.output.normalize = true;
  o.output.mean = {1, 2};
  o.output.stddev = {1, 2};
  refused(o, "decoded images have 3 channels");
  o = DecodedOptions(Data(), 8, ImageCrop::kRandomResized);
  o.output.normalize = true;  // uint8
  refused(o, "normalize needs a float dtype");
  o = DecodedOptions(Data(), 8, ImageCrop::kRandomResized);
  o.output.dtype = DType::kInt32;
  refused(o, "float32, bfloat16, float16 or uint8");
  o = DecodedOptions(Data(), 8, ImageCrop::kRandomResized);  // a host loader
  o.image.decoder = ImageDecoderChoice::kNvjpeg;
  refused(o,
          "image_decoder nvjpeg decodes on a GPU: give device cuda, or image_decoder cpu or auto");
  // image_size 0: the records as stored, and the image options then do nothing.
  o = DecodedOptions(Data(), 8, ImageCrop::kCenter);
  o.image.size = 0;
  refused(o, "image_crop: image_size 0 hands out the images' bytes as stored");
  o.image.crop = ImageCrop::kRandomResized;
  o.image.threads = 0;
  auto raw = testing::OpenLoader(o);
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->plan().kind, BatchKind::kRecords);
}

}  // namespace
}  // namespace rf
