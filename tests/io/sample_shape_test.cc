// The sample shape of the format (io/format.h): ndim and dims in the header, the image view
// (channels, height, width) kept in step with them, files written before the shape was recorded,
// hostile shapes refused before anything is sized from them; and the writer's shapes, id dtypes
// and datasets without labels.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "io/checksum.h"
#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "io/format.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using format::Header;
using format::kHeaderBytes;
using testing::TempDir;

// Byte offsets of the fields the tests edit (io/format_header.cc's table).
constexpr size_t kOffChannels = 40, kOffHeight = 44, kOffWidth = 48, kOffNdim = 640, kOffDims = 644,
                 kOffChecksum = kHeaderBytes - 8;

// A consistent header of 100 samples of `shape` in chunks of 30.
Header ShapedHeader(const std::vector<uint64_t>& shape, DType dtype) {
  Header h;
  h.dataset_id = 0x1234;
  h.sample_dtype = dtype;
  EXPECT_TRUE(format::SetSampleShape(shape, &h).ok()) << format::ShapeText(shape);
  h.num_classes = 10;
  h.total_samples = 100;
  h.chunk_samples = 30;
  h.total_chunks = 4;
  h.shard_chunks = 4;
  h.shard_samples = 100;
  h.index_offset = 8 * format::kAlign;
  h.file_size = h.index_offset + format::IndexStoredBytes(4);
  return h;
}

template <typename T>
void Put(uint8_t* buf, size_t off, T v) {
  std::memcpy(buf + off, &v, sizeof v);
}
// Re-seals a header edited in place, so that only the edit is what the decoder sees.
void Reseal(uint8_t* buf) { Put<uint64_t>(buf, kOffChecksum, Checksum(buf, kOffChecksum)); }

TEST(SampleShape, HeaderRoundTripsEveryNdimAndSampleDType) {
  const std::vector<std::vector<uint64_t>> shapes = {{2048}, {4, 2048}, {3, 5, 7}, {2, 3, 5, 7}};
  const DType dtypes[] = {DType::kUInt8,   DType::kUInt16,   DType::kInt32,  DType::kInt64,
                          DType::kFloat16, DType::kBFloat16, DType::kFloat32};
  for (const auto& shape : shapes) {
    for (DType t : dtypes) {
      SCOPED_TRACE(format::ShapeText(shape) + " " + std::string(DTypeName(t)));
      uint8_t buf[kHeaderBytes];
      format::EncodeHeader(ShapedHeader(shape, t), buf);
      auto d = format::DecodeHeader(buf, sizeof buf, "s.rfd");
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->Shape(), shape);
      EXPECT_EQ(d->ndim, shape.size());
      EXPECT_EQ(d->sample_dtype, t);
      uint64_t elems = 1;
      for (uint64_t v : shape) elems *= v;
      EXPECT_EQ(d->SampleElems(), elems);
      EXPECT_EQ(d->SampleBytes(), elems * DTypeSize(t));
    }
  }
}

TEST(SampleShape, ImageViewIsChannelsHeightWidthForThreeDimsAndOneChannelOtherwise) {
  auto view = [](const std::vector<uint64_t>& shape) {
    Header h;
    EXPECT_TRUE(format::SetSampleShape(shape, &h).ok());
    return std::vector<uint64_t>{h.channels, h.height, h.width};
  };
  EXPECT_EQ(view({3, 32, 32}), (std::vector<uint64_t>{3, 32, 32}));
  EXPECT_EQ(view({2048}), (std::vector<uint64_t>{1, 1, 2048}));
  EXPECT_EQ(view({28, 28}), (std::vector<uint64_t>{1, 28, 28}));
  EXPECT_EQ(view({2, 3, 5, 7}), (std::vector<uint64_t>{1, 30, 7}));
}

// A file written before the shape was recorded: zeros where ndim and dims now are. It reads as
// the 3-dim shape of its channels, height and width.
TEST(SampleShape, HeaderWrittenBeforeTheShapeFieldsReadsAsChannelsHeightWidth) {
  uint8_t buf[kHeaderBytes];
  format::EncodeHeader(ShapedHeader({3, 4, 5}, DType::kUInt8), buf);
  std::memset(buf + kOffNdim, 0, 4 + 4 * format::kMaxDims);
  Reseal(buf);
  auto d = format::DecodeHeader(buf, sizeof buf, "old.rfd");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->ndim, 3u);
  EXPECT_EQ(d->Shape(), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(d->SampleBytes(), 60u);
  // Encoded again, it records the shape.
  uint8_t again[kHeaderBytes];
  format::EncodeHeader(*d, again);
  uint32_t ndim;
  std::memcpy(&ndim, again + kOffNdim, 4);
  EXPECT_EQ(ndim, 3u);
}

class HostileShape : public ::testing::Test {
 protected:
  void SetUp() override { format::EncodeHeader(ShapedHeader({4, 2048}, DType::kUInt16), buf_); }
  // The decoder's message, after the edits and a new checksum.
  std::string Decode() {
    Reseal(buf_);
    auto d = format::DecodeHeader(buf_, sizeof buf_, "h.rfd");
    return d.ok() ? "decoded" : d.status().ToString();
  }
  uint8_t buf_[kHeaderBytes];
};

TEST_F(HostileShape, NdimOutsideOneToFourIsRefusedAtItsByte) {
  Put<uint32_t>(buf_, kOffNdim, 5);
  EXPECT_EQ(Decode(),
            "h.rfd: at byte 640: bad header: sample shape of 5 dimensions; a sample has 1 to 4");
  // ndim 0 is a file from before the shape fields, whose dims are all 0.
  Put<uint32_t>(buf_, kOffNdim, 0);
  EXPECT_EQ(Decode(),
            "h.rfd: at byte 644: bad header: dimension 0 is set in a shape of 0 dimensions");
}

TEST_F(HostileShape, ZeroDimIsRefusedAtItsByte) {
  Put<uint32_t>(buf_, kOffDims + 4, 0);
  EXPECT_EQ(Decode(), "h.rfd: at byte 648: bad header: sample shape 4x0: dimension 1 is 0");
}

TEST_F(HostileShape, ShapeWhoseSizeOverflowsSixtyFourBitsIsRefused) {
  Put<uint32_t>(buf_, kOffNdim, 4);
  for (uint32_t i = 0; i < 4; ++i) Put<uint32_t>(buf_, kOffDims + 4 * i, UINT32_MAX);
  EXPECT_EQ(Decode(),
            "h.rfd: at byte 644: bad header: sample shape "
            "4294967295x4294967295x4294967295x4294967295: samples larger than 4 GiB (a chunk "
            "holds at least one)");
}

TEST_F(HostileShape, SampleLargerThanAChunkCanHoldIsRefused) {
  // 2^20 rows of 2048 uint16 are 4 GiB, the most a sample may be; one row more is refused.
  Put<uint32_t>(buf_, kOffDims, 1u << 20);
  Put<uint32_t>(buf_, kOffHeight, 1u << 20);
  EXPECT_EQ(Decode(), "decoded");
  Put<uint32_t>(buf_, kOffDims, (1u << 20) + 1);
  Put<uint32_t>(buf_, kOffHeight, (1u << 20) + 1);
  EXPECT_EQ(Decode(),
            "h.rfd: at byte 644: bad header: sample shape 1048577x2048: samples larger than 4 GiB "
            "(a chunk holds at least one)");
}

// Before the shape fields, 64 x 2^31 x 2^31 wrapped to a 0-byte sample and passed the size check,
// so readers sized buffers from a shape the model then read far beyond.
TEST_F(HostileShape, OldStyleHeaderWhoseSizeWrapsToZeroIsRefused) {
  std::memset(buf_ + kOffNdim, 0, 4 + 4 * format::kMaxDims);
  Put<uint32_t>(buf_, kOffChannels, 64);
  Put<uint32_t>(buf_, kOffHeight, 1u << 31);
  Put<uint32_t>(buf_, kOffWidth, 1u << 31);
  EXPECT_EQ(Decode(),
            "h.rfd: at byte 40: bad header: sample shape 64x2147483648x2147483648: samples larger "
            "than 4 GiB (a chunk holds at least one)");
}

TEST_F(HostileShape, ImageViewThatDisagreesWithTheShapeIsRefused) {
  Put<uint32_t>(buf_, kOffHeight, 2);  // 4x2048 is 1 x 4 x 2048
  EXPECT_EQ(Decode(),
            "h.rfd: at byte 40: bad header: image view 1x2x2048 does not match the sample shape "
            "4x2048 (expected 1x4x2048)");
}

TEST(SampleShape, CheckSampleShapeRefusesWhatTheFormatCannotHold) {
  EXPECT_TRUE(format::CheckSampleShape({2048}, DType::kInt64).ok());
  EXPECT_EQ(format::CheckSampleShape({}, DType::kUInt8).message(),
            "sample shape : 0 dimensions; a sample has 1 to 4");
  EXPECT_EQ(format::CheckSampleShape({1, 2, 3, 4, 5}, DType::kUInt8).message(),
            "sample shape 1x2x3x4x5: 5 dimensions; a sample has 1 to 4");
  EXPECT_EQ(format::CheckSampleShape({uint64_t{1} << 32}, DType::kUInt8).message(),
            "sample shape 4294967296: dimension 0 is 2^32 or more");
  EXPECT_EQ(format::CheckSampleShape({65, 2, 2}, DType::kUInt8).message(),
            "sample shape 65x2x2: 65 channels; a C,H,W sample has at most 64");
  // 65 leading values in 4 dims are fine: only a 3-dim shape is C,H,W.
  EXPECT_TRUE(format::CheckSampleShape({65, 2, 2, 2}, DType::kUInt8).ok());
}

TEST(SampleShape, DatasetWithoutLabelsMustStoreUint8Labels) {
  Header h = ShapedHeader({2048}, DType::kUInt16);
  h.num_classes = 0;
  uint8_t buf[kHeaderBytes];
  format::EncodeHeader(h, buf);
  auto d = format::DecodeHeader(buf, sizeof buf, "n.rfd");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE(d->HasLabels());
  h.label_dtype = DType::kInt32;
  format::EncodeHeader(h, buf);
  d = format::DecodeHeader(buf, sizeof buf, "n.rfd");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().ToString(),
            "n.rfd: at byte 36: bad header: a dataset without labels (0 classes) stores uint8 "
            "labels, not int32");
}

// Token rows as a language model's data: n rows of 2048 uint16 ids, id k of row i = i * 7 + k
// (mod 2^16), so a misplaced row or id shows. No labels.
TEST(SampleShape, WriterStoresTokenRowsWithoutLabelsOrStatistics) {
  TempDir t;
  constexpr uint64_t kN = 300, kLen = 2048;
  DatasetSpec spec;
  spec.sample_dtype = DType::kUInt16;
  spec.shape = {kLen};
  spec.has_labels = false;
  WriterOptions o;
  o.chunk_bytes = 64 << 10;
  auto w = DatasetWriter::Create(t.File("tok.rfd"), spec, o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<uint16_t> rows(kN * kLen);
  for (uint64_t i = 0; i < rows.size(); ++i)
    rows[i] = static_cast<uint16_t>(i / kLen * 7 + i % kLen);
  uint8_t label = 0;
  EXPECT_EQ((*w)->Append(rows.data(), &label, 1).ToString(),
            "labels appended to a dataset without labels");
  for (uint64_t i = 0; i < kN; i += 11)
    ASSERT_TRUE((*w)->Append(&rows[i * kLen], nullptr, std::min<uint64_t>(11, kN - i)).ok());
  ASSERT_TRUE((*w)->Finish().ok());

  auto d = Dataset::Open(t.File("tok.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const Header& h = d->header();
  EXPECT_EQ(h.Shape(), std::vector<uint64_t>{kLen});
  EXPECT_EQ(h.sample_dtype, DType::kUInt16);
  EXPECT_EQ(h.SampleBytes(), 2 * kLen);
  EXPECT_FALSE(h.HasLabels());
  EXPECT_EQ(h.label_dtype, DType::kUInt8);
  EXPECT_EQ(h.mean[0], 0.f);
  EXPECT_EQ(h.stddev[0], 1.f);
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  std::vector<uint16_t> got;
  for (size_t c = 0; c < d->chunk_count(); ++c) {
    ASSERT_TRUE(d->ReadChunk(c, buf.data()).ok());
    const uint32_t n = d->chunk(c).entry.sample_count;
    const size_t at = got.size();
    got.resize(at + n * kLen);
    std::memcpy(&got[at], buf.data(), n * kLen * 2);
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(d->Label(c, buf.data(), i), 0);
  }
  EXPECT_EQ(got, rows);
}

TEST(SampleShape, WriterRefusesAShapeTheFormatCannotHold) {
  TempDir t;
  DatasetSpec spec;
  spec.shape = {1, 2, 3, 4, 5};
  auto w = DatasetWriter::Create(t.File("x.rfd"), spec, {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().ToString(), "sample shape 1x2x3x4x5: 5 dimensions; a sample has 1 to 4");
  spec.shape = {};
  spec.has_labels = false;
  spec.num_classes = 3;
  w = DatasetWriter::Create(t.File("x.rfd"), spec, {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().ToString(), "a dataset without labels has uint8 labels and 0 classes");
}

}  // namespace
}  // namespace rf
