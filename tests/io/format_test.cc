#include "io/format.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rf::format {
namespace {

Header SampleHeader() {
  Header h;
  h.dataset_id = 0x1234;
  h.sample_dtype = DType::kUInt8;
  h.label_dtype = DType::kUInt8;
  h.channels = 3;
  h.height = 4;
  h.width = 5;
  h.num_classes = 10;
  h.total_samples = 100;
  h.chunk_samples = 30;
  h.total_chunks = 4;
  h.shard_chunks = 4;
  h.shard_samples = 100;
  h.index_offset = 8 * kAlign;
  h.file_size = h.index_offset + IndexStoredBytes(4);
  h.mean[0] = 1.5f;
  h.stddev[2] = 2.5f;
  return h;
}

TEST(Format, HeaderRoundTripsEveryField) {
  Header h = SampleHeader();
  uint8_t buf[kHeaderBytes];
  EncodeHeader(h, buf);
  auto d = DecodeHeader(buf, sizeof buf, "x.rfd");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->dataset_id, h.dataset_id);
  EXPECT_EQ(d->channels, 3u);
  EXPECT_EQ(d->height, 4u);
  EXPECT_EQ(d->width, 5u);
  EXPECT_EQ(d->total_samples, 100u);
  EXPECT_EQ(d->chunk_samples, 30u);
  EXPECT_EQ(d->file_size, h.file_size);
  EXPECT_EQ(d->mean, h.mean);
  EXPECT_EQ(d->stddev, h.stddev);
}

TEST(Format, HeaderWithWrongMagicIsRefusedNamingTheFile) {
  uint8_t buf[kHeaderBytes];
  EncodeHeader(SampleHeader(), buf);
  buf[0] = 'X';
  auto d = DecodeHeader(buf, sizeof buf, "bad.rfd");
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsCorruption());
  EXPECT_EQ(d.status().ToString(), "bad.rfd: at byte 0: not a ringfeed dataset (wrong magic)");
}

TEST(Format, HeaderWithUnknownVersionIsRefused) {
  Header h = SampleHeader();
  h.version = 9;
  uint8_t buf[kHeaderBytes];
  EncodeHeader(h, buf);
  auto d = DecodeHeader(buf, sizeof buf, "v.rfd");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().ToString().find("unknown format version 9"), std::string::npos);
}

TEST(Format, EveryFlippedHeaderBitIsCaught) {
  uint8_t good[kHeaderBytes];
  EncodeHeader(SampleHeader(), good);
  for (size_t byte = 0; byte < kHeaderBytes; byte += 7) {
    uint8_t buf[kHeaderBytes];
    std::memcpy(buf, good, sizeof buf);
    buf[byte] ^= 0x10;
    EXPECT_FALSE(DecodeHeader(buf, sizeof buf, "h.rfd").ok()) << "byte " << byte;
  }
}

TEST(Format, HeaderFieldsThatDisagreeAreRefused) {
  Header h = SampleHeader();
  h.total_chunks = 5;  // 100 samples in chunks of 30 make 4
  uint8_t buf[kHeaderBytes];
  EncodeHeader(h, buf);
  auto d = DecodeHeader(buf, sizeof buf, "f.rfd");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().ToString().find("make 4 chunks, not 5"), std::string::npos)
      << d.status().ToString();
}

TEST(Format, ShortHeaderSaysTruncated) {
  uint8_t buf[kHeaderBytes] = {};
  auto d = DecodeHeader(buf, 100, "t.rfd");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().ToString().find("shorter than the 4096-byte header"), std::string::npos);
}

TEST(Format, FileSizeMismatchNamesBothSizes) {
  Header h = SampleHeader();
  Status st = CheckFileSize(h, h.file_size - 1, "s.rfd");
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.ToString().find("truncated"), std::string::npos);
  EXPECT_TRUE(CheckFileSize(h, h.file_size, "s.rfd").ok());
  EXPECT_FALSE(CheckFileSize(h, h.file_size + 4096, "s.rfd").ok());
}

TEST(Format, ChunkLayoutIsAlignedAndHoldsLabelsAfterSamples) {
  ChunkLayout l = LayoutFor(7, 784, 1);
  EXPECT_EQ(l.labels_offset, RoundUp(7 * 784, kLabelAlign));
  EXPECT_EQ(l.payload_bytes, l.labels_offset + 7);
  EXPECT_EQ(l.stored_bytes % kAlign, 0u);
  EXPECT_GE(l.stored_bytes, l.payload_bytes);
}

TEST(Format, ShardNamesRoundTrip) {
  EXPECT_EQ(ShardPath("d/data.rfd", 2, 4), "d/data-00002-of-00004.rfd");
  EXPECT_EQ(ShardPath("d/data", 0, 2), "d/data-00000-of-00002");
  EXPECT_EQ(ShardPath("d/data.rfd", 0, 1), "d/data.rfd");
  EXPECT_EQ(ShardBase("d/data-00002-of-00004.rfd"), "d/data.rfd");
  EXPECT_EQ(ShardBase("d/data-00000-of-00002"), "d/data");
  EXPECT_EQ(ShardBase("d/data.rfd"), "");
}

TEST(Format, VerifyChunkNamesFileChunkAndOffset) {
  std::vector<uint8_t> data(kAlign, 7);
  ChunkEntry e;
  e.index = 3;
  e.offset = 5 * kAlign;
  e.stored_bytes = kAlign;
  e.checksum = Checksum(data.data(), data.size());
  EXPECT_TRUE(VerifyChunk(e, data.data(), "c.rfd").ok());
  data[100] ^= 1;
  Status st = VerifyChunk(e, data.data(), "c.rfd");
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_EQ(st.ToString().rfind("c.rfd: chunk 3 at byte 20480: checksum mismatch", 0), 0u)
      << st.ToString();
}

}  // namespace
}  // namespace rf::format
