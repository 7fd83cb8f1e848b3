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

// Version 2: the same dataset, its writer's codec and the record kind in the header.
Header SampleHeaderV2() {
  Header h = SampleHeader();
  h.version = 2;
  h.codec = {Codec::kZstd, 19};
  h.file_size = h.index_offset + IndexStoredBytes(4, 2);
  return h;
}

TEST(Format, VersionTwoHeaderRoundTripsItsCodecLevelAndRecordKind) {
  const Header h = SampleHeaderV2();
  uint8_t buf[kHeaderBytes];
  EncodeHeader(h, buf);
  auto d = DecodeHeader(buf, sizeof buf, "x.rfd");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->version, 2u);
  EXPECT_EQ(d->codec, h.codec);
  EXPECT_EQ(d->record_kind, RecordKind::kTensor);
  EXPECT_EQ(d->file_size, h.file_size);
  EXPECT_EQ(d->Shape(), h.Shape());
  // The fields lie where io/format.h says: codec at 660, level at 664, record kind at 668.
  uint32_t codec, kind;
  int32_t level;
  std::memcpy(&codec, buf + 660, 4);
  std::memcpy(&level, buf + 664, 4);
  std::memcpy(&kind, buf + 668, 4);
  EXPECT_EQ(codec, 2u);
  EXPECT_EQ(level, 19);
  EXPECT_EQ(kind, 0u);
  for (const CodecSpec spec : {CodecSpec{Codec::kNone, 0}, CodecSpec{Codec::kLz4, 0},
                               CodecSpec{Codec::kZstd, 1}, CodecSpec{Codec::kZstd, 22}}) {
    Header v = SampleHeaderV2();
    v.codec = spec;
    EncodeHeader(v, buf);
    auto dv = DecodeHeader(buf, sizeof buf, "x.rfd");
    ASSERT_TRUE(dv.ok()) << CodecText(spec) << ": " << dv.status().ToString();
    EXPECT_EQ(dv->codec, spec);
  }
}

// A version 1 header is written exactly as before version 2: nothing past the shape, and the
// codec a version 1 header might carry in memory is not written.
TEST(Format, VersionOneHeaderWritesNoVersionTwoFields) {
  Header h = SampleHeader();
  h.codec = {Codec::kZstd, 3};
  uint8_t buf[kHeaderBytes];
  EncodeHeader(h, buf);
  for (size_t b = 660; b < kHeaderBytes - 8; ++b) ASSERT_EQ(buf[b], 0) << "byte " << b;
  auto d = DecodeHeader(buf, sizeof buf, "x.rfd");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->version, 1u);
  EXPECT_EQ(d->codec, CodecSpec{});
}

std::vector<ChunkEntry> SampleEntriesV2() {
  // Chunks of 30 samples of 60 bytes are 4096 bytes of data; chunk 1 is stored raw.
  std::vector<ChunkEntry> e(4);
  uint64_t offset = kAlign;
  for (uint32_t i = 0; i < 4; ++i) {
    e[i].index = i;
    e[i].first_sample = 30 * i;
    e[i].offset = offset;
    e[i].sample_count = i < 3 ? 30 : 10;
    e[i].data_bytes = kAlign;
    e[i].codec = i == 1 ? Codec::kNone : i % 2 == 0 ? Codec::kLz4 : Codec::kZstd;
    e[i].frame_bytes = i == 1 ? kAlign : 1000 + i;
    e[i].stored_bytes = kAlign;
    e[i].checksum = 0x1000 + i;
    offset += kAlign;
  }
  return e;
}

TEST(Format, VersionTwoIndexRoundTripsEveryFieldIn64ByteEntries) {
  const std::vector<ChunkEntry> e = SampleEntriesV2();
  const std::vector<uint8_t> index = EncodeIndex(e, 2);
  EXPECT_EQ(index.size(), IndexStoredBytes(4, 2));
  EXPECT_EQ(IndexEntryBytes(2), 64u);
  EXPECT_EQ(IndexEntryBytes(1), 48u);
  // Chunk 2's codec byte and sizes where io/format.h puts them (entry bytes 36, 48 and 56).
  const uint8_t* e2 = index.data() + 2 * 64;
  uint64_t frame, data;
  std::memcpy(&frame, e2 + 48, 8);
  std::memcpy(&data, e2 + 56, 8);
  EXPECT_EQ(e2[36], static_cast<uint8_t>(Codec::kLz4));
  EXPECT_EQ(e2[37] | e2[38] | e2[39], 0);
  EXPECT_EQ(frame, 1002u);
  EXPECT_EQ(data, kAlign);
  auto d = DecodeIndex(SampleHeaderV2(), index.data(), index.size(), "x.rfd");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ((*d)[i].index, e[i].index);
    EXPECT_EQ((*d)[i].first_sample, e[i].first_sample);
    EXPECT_EQ((*d)[i].offset, e[i].offset);
    EXPECT_EQ((*d)[i].stored_bytes, e[i].stored_bytes);
    EXPECT_EQ((*d)[i].sample_count, e[i].sample_count);
    EXPECT_EQ((*d)[i].checksum, e[i].checksum);
    EXPECT_EQ((*d)[i].codec, e[i].codec);
    EXPECT_EQ((*d)[i].frame_bytes, e[i].frame_bytes);
    EXPECT_EQ((*d)[i].data_bytes, e[i].data_bytes);
  }
}

// Version 1 entries read as raw chunks: codec none, frame = data = stored.
TEST(Format, VersionOneIndexReadsAsRawChunks) {
  std::vector<ChunkEntry> e = SampleEntriesV2();
  for (ChunkEntry& x : e) {
    x.codec = Codec::kNone;
    x.frame_bytes = x.data_bytes = x.stored_bytes;
  }
  const std::vector<uint8_t> index = EncodeIndex(e, 1);
  EXPECT_EQ(index.size(), IndexStoredBytes(4, 1));
  auto d = DecodeIndex(SampleHeader(), index.data(), index.size(), "x.rfd");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  for (const ChunkEntry& x : *d) {
    EXPECT_EQ(x.codec, Codec::kNone);
    EXPECT_EQ(x.frame_bytes, x.stored_bytes);
    EXPECT_EQ(x.data_bytes, x.stored_bytes);
  }
}

// A chunk's data from its stored bytes: a frame decompressed to exactly data_bytes, a raw chunk
// copied; a failure names file, chunk and offset.
TEST(Format, DecodeChunkDataInflatesAFrameAndNamesFileChunkAndOffsetOnFailure) {
  std::vector<uint8_t> data(2 * kAlign);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i / 7);
  Compressor c({Codec::kZstd, 3});
  std::vector<uint8_t> stored(CompressBound(Codec::kZstd, data.size()));
  auto frame = c.Compress(data.data(), data.size(), stored.data(), stored.size());
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  ChunkEntry e;
  e.index = 6;
  e.offset = 3 * kAlign;
  e.codec = Codec::kZstd;
  e.frame_bytes = *frame;
  e.stored_bytes = RoundUp(*frame, kAlign);
  e.data_bytes = data.size();
  Decompressor d;
  std::vector<uint8_t> out(e.data_bytes);
  ASSERT_TRUE(DecodeChunkData(e, stored.data(), out.data(), d, "c.rfd").ok());
  EXPECT_EQ(out, data);
  e.data_bytes = kAlign;  // the index declares less than the frame holds
  out.assign(e.data_bytes, 0);
  const Status st = DecodeChunkData(e, stored.data(), out.data(), d, "c.rfd");
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_EQ(st.ToString(), "c.rfd: chunk 6 at byte 12288: zstd frame of " + std::to_string(*frame) +
                               " bytes declares 8192 bytes, not the 4096 in the index");
  ChunkEntry raw;
  raw.frame_bytes = raw.stored_bytes = raw.data_bytes = data.size();
  out.assign(data.size(), 0);
  ASSERT_TRUE(DecodeChunkData(raw, data.data(), out.data(), d, "c.rfd").ok());
  EXPECT_EQ(out, data);
}

}  // namespace
}  // namespace rf::format
