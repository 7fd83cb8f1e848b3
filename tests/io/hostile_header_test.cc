// Headers and chunk indices a hostile user forges: every field at a value no writer produces,
// with the checksums recomputed, so only DecodeHeader's and DecodeIndex's own checks stand
// between the value and a reader that would size an allocation, a read or a loop from it.
// Each test plants one, and asserts the refusal with its file, chunk and byte offset.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/checksum.h"
#include "io/format.h"

namespace rf::format {
namespace {

// 100 samples of 3x4x5 uint8 in 4 chunks of 30 (the last 10), each 4096 bytes stored, at bytes
// 4096, 8192, 12288 and 16384; the index at 8 x 4096.
Header ValidHeader() {
  Header h;
  h.dataset_id = 0x1234;
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
  return h;
}

std::vector<ChunkEntry> ValidEntries() {
  std::vector<ChunkEntry> e(4);
  for (uint32_t i = 0; i < 4; ++i) {
    e[i].index = i;
    e[i].first_sample = 30 * i;
    e[i].offset = kAlign * (i + 1);
    e[i].stored_bytes = kAlign;
    e[i].sample_count = i < 3 ? 30 : 10;
  }
  return e;
}

// The header as a file would hold it (a valid checksum), decoded.
Result<Header> Decode(const Header& h) {
  uint8_t buf[kHeaderBytes];
  EncodeHeader(h, buf);
  return DecodeHeader(buf, sizeof buf, "x.rfd");
}

std::string Refusal(const Header& h) {
  Result<Header> d = Decode(h);
  if (d.ok()) return "accepted";
  EXPECT_TRUE(d.status().IsCorruption());
  return d.status().ToString();
}

std::string IndexRefusal(const std::vector<ChunkEntry>& entries) {
  const std::vector<uint8_t> index = EncodeIndex(entries);
  auto d = DecodeIndex(ValidHeader(), index.data(), index.size(), "x.rfd");
  if (d.ok()) return "accepted";
  EXPECT_TRUE(d.status().IsCorruption());
  return d.status().ToString();
}

TEST(HostileHeader, TheValidOnesAreAccepted) {
  EXPECT_EQ(Refusal(ValidHeader()), "accepted");
  EXPECT_EQ(IndexRefusal(ValidEntries()), "accepted");
}

// Issue 15, defect 3: 16 x 2^30 x 2^30 bytes wraps 64 bits to 0; inspect printed "0 bytes per
// sample" and train crashed.
TEST(HostileHeader, AShapeWhoseByteSizeWrapsIsRefused) {
  Header h = ValidHeader();
  h.channels = 16;
  h.height = h.width = 1u << 30;
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 644: bad header: sample shape 16x1073741824x1073741824: samples "
            "larger than 4 GiB (a chunk holds at least one)");
}

// Issue 15, defect 3: num_classes 4294967295 made train allocate its last layer and abort.
TEST(HostileHeader, MoreClassesThanTheLabelDTypeCanNameAreRefused) {
  Header h = ValidHeader();
  h.num_classes = 0xffffffffu;
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 52: bad header: 4294967295 classes; uint8 labels name "
            "at most 256");
  h.num_classes = 257;
  EXPECT_NE(Refusal(h), "accepted");
  h.num_classes = 256;
  EXPECT_EQ(Refusal(h), "accepted");
  h.label_dtype = DType::kUInt16;
  h.num_classes = 65537;
  EXPECT_NE(Refusal(h), "accepted");
  h.label_dtype = DType::kInt32;
  h.num_classes = (1u << 31) + 1;
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 52: bad header: 2147483649 classes; int32 labels name "
            "at most 2147483648");
  h.num_classes = 1u << 31;
  EXPECT_EQ(Refusal(h), "accepted");
}

// total_samples + chunk_samples - 1 wrapped: 2^64-1 samples in chunks of 2^32-1 made 0 chunks,
// an empty index matched them, and only the shard sum caught it later.
TEST(HostileHeader, AnAbsurdSampleCountCannotWrapTheChunkCount) {
  Header h = ValidHeader();
  h.total_samples = ~uint64_t{0};
  h.chunk_samples = 0xffffffffu;
  h.total_chunks = h.shard_chunks = 0;
  h.shard_samples = 0;
  h.index_offset = kAlign;
  h.file_size = kAlign + IndexStoredBytes(0);
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 64: bad header: 18446744073709551615 samples in chunks of "
            "4294967295 make 4294967297 chunks, not 0");
}

// A header claiming 2^31 chunks before an index 28 KiB into the file: its index would be 96 GiB,
// sized from the header and a file (or a server's object) that claims to be that long.
TEST(HostileHeader, MoreChunksThanTheBytesBeforeTheIndexHoldAreRefused) {
  Header h = ValidHeader();
  h.chunk_samples = 1;
  h.total_samples = h.shard_samples = uint64_t{1} << 31;
  h.total_chunks = h.shard_chunks = 1u << 31;
  h.file_size = h.index_offset + IndexStoredBytes(h.shard_chunks);
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 76: bad header: shard holds 2147483648 chunks, more than the 28672 "
            "bytes before its index hold (4096 bytes a chunk at least)");
  h.total_samples = h.shard_samples = h.total_chunks = h.shard_chunks = 7;  // exactly fits
  h.file_size = h.index_offset + IndexStoredBytes(h.shard_chunks);
  EXPECT_EQ(Refusal(h), "accepted");
  h.total_samples = h.shard_samples = h.total_chunks = h.shard_chunks = 8;
  h.file_size = h.index_offset + IndexStoredBytes(h.shard_chunks);
  EXPECT_NE(Refusal(h).find("shard holds 8 chunks"), std::string::npos);
}

TEST(HostileHeader, NoSamplesAreRefused) {
  Header h = ValidHeader();
  h.total_samples = h.shard_samples = 0;
  h.total_chunks = h.shard_chunks = 0;
  h.file_size = h.index_offset + IndexStoredBytes(0);
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 56: bad header: no samples (the writer never writes an "
            "empty dataset)");
}

// A chunk of 2^32-1 samples of 4 GiB each: its size wraps 64 bits, and a stored_bytes equal to
// the wrapped (small) size would have passed DecodeIndex.
TEST(HostileHeader, AChunkWhoseSizeOverflowsIsRefused) {
  Header h = ValidHeader();
  h.channels = 1;
  h.height = h.width = 65536;  // 4 GiB samples: the largest allowed
  h.chunk_samples = 0xffffffffu;
  h.total_samples = h.shard_samples = 0xffffffffu;
  h.total_chunks = h.shard_chunks = 1;
  h.file_size = h.index_offset + IndexStoredBytes(1);
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 72: bad header: chunks of 4294967295 samples of "
            "4294967296 bytes overflow 64 bits");
  // The same chunk size behind a dataset of one sample (found by tools/fuzz's header target: a
  // header whose every chunk fits, while the size its chunk_samples names does not).
  h.total_samples = h.shard_samples = 1;
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 72: bad header: chunks of 4294967295 samples of "
            "4294967296 bytes overflow 64 bits");
}

// index_offset + the index's size wrapped: an index "at" 2^64-4096 of 8192 bytes ends at 4096,
// so a file of just its header passed the size check and was read at a negative offset.
TEST(HostileHeader, AnIndexOffsetThatWrapsTheFileSizeIsRefused) {
  Header h = ValidHeader();
  h.total_samples = h.shard_samples = 100;
  h.chunk_samples = 1;
  h.total_chunks = h.shard_chunks = 100;  // 4808 index bytes: 8192 stored
  h.index_offset = ~uint64_t{0} - kAlign + 1;
  h.file_size = h.index_offset + IndexStoredBytes(100);  // wraps to 4096
  ASSERT_EQ(h.file_size, kAlign);
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 96: bad header: file size 4096 does not match the index at "
            "18446744073709547520");
}

// Issue 15, defect 3: a chunk offset near 2^64 wrapped offset + stored_bytes past zero, and
// inspect accepted the file.
TEST(HostileIndex, AChunkOffsetThatWrapsIsRefused) {
  std::vector<ChunkEntry> e = ValidEntries();
  e[3].offset = ~uint64_t{0} - kAlign + 1;
  EXPECT_EQ(IndexRefusal(e),
            "x.rfd: chunk 3 at byte 32912: bad chunk index entry: chunk at byte "
            "18446744073709547520 of 4096 bytes runs past the index at byte 32768");
}

TEST(HostileIndex, AChunkPastTheEndOfTheFileIsRefused) {
  std::vector<ChunkEntry> e = ValidEntries();
  e[3].offset = 1u << 20;
  EXPECT_EQ(IndexRefusal(e),
            "x.rfd: chunk 3 at byte 32912: bad chunk index entry: chunk at byte "
            "1048576 of 4096 bytes runs past the index at byte 32768");
  e[3].offset = 8 * kAlign;  // where the index starts
  EXPECT_NE(IndexRefusal(e), "accepted");
}

TEST(HostileIndex, OverlappingChunksAreRefused) {
  std::vector<ChunkEntry> e = ValidEntries();
  e[2].offset = e[1].offset;
  EXPECT_EQ(IndexRefusal(e),
            "x.rfd: chunk 2 at byte 32864: bad chunk index entry: misplaced "
            "chunk offset 8192 (a multiple of 4096 at or after byte 12288, "
            "where the one before it ends)");
  e = ValidEntries();
  e[0].offset = 0;  // over the header
  EXPECT_NE(IndexRefusal(e), "accepted");
}

TEST(HostileIndex, AnUnalignedChunkIsRefused) {
  std::vector<ChunkEntry> e = ValidEntries();
  e[1].offset += 512;
  EXPECT_EQ(IndexRefusal(e),
            "x.rfd: chunk 1 at byte 32816: bad chunk index entry: misplaced "
            "chunk offset 8704 (a multiple of 4096 at or after byte 8192, where "
            "the one before it ends)");
}

TEST(HostileIndex, AStoredSizeOtherThanTheLayoutsIsRefused) {
  std::vector<ChunkEntry> e = ValidEntries();
  e[0].stored_bytes = ~uint64_t{0} - kAlign + 1;  // would wrap offset + stored_bytes to 0
  EXPECT_EQ(IndexRefusal(e),
            "x.rfd: chunk 0 at byte 32768: bad chunk index entry: stored size "
            "does not match its sample count");
}

TEST(HostileIndex, SampleCountsAndNumbersOutOfSequenceAreRefused) {
  std::vector<ChunkEntry> e = ValidEntries();
  e[1].sample_count = 0xffffffffu;
  EXPECT_EQ(IndexRefusal(e),
            "x.rfd: chunk 1 at byte 32816: bad chunk index entry: 4294967295 "
            "samples, expected 30");
  e = ValidEntries();
  e[2].index = ~uint64_t{0};
  EXPECT_NE(IndexRefusal(e), "accepted");
}

// Version 2: the same dataset with 64-byte entries (the index at 8 x 4096: entry i at
// 32768 + 64 i), every chunk's data 4096 bytes; chunk 1 raw, the others compressed.
Header ValidHeaderV2() {
  Header h = ValidHeader();
  h.version = 2;
  h.codec = {Codec::kZstd, 3};
  h.file_size = h.index_offset + IndexStoredBytes(4, 2);
  return h;
}

std::vector<ChunkEntry> ValidEntriesV2() {
  std::vector<ChunkEntry> e = ValidEntries();
  for (ChunkEntry& x : e) {
    x.data_bytes = kAlign;
    x.codec = x.index == 1 ? Codec::kNone : Codec::kZstd;
    x.frame_bytes = x.index == 1 ? kAlign : 900;
  }
  return e;
}

std::string IndexRefusalV2(const std::vector<ChunkEntry>& entries) {
  const std::vector<uint8_t> index = EncodeIndex(entries, 2);
  auto d = DecodeIndex(ValidHeaderV2(), index.data(), index.size(), "x.rfd");
  if (d.ok()) return "accepted";
  EXPECT_TRUE(d.status().IsCorruption());
  return d.status().ToString();
}

// An index entry's byte set by hand (EncodeIndex writes only what a writer may) in the valid
// index of `version` (48-byte entries, or 64-byte ones), the index checksum recomputed.
std::string IndexRefusalWithByte(uint32_t version, size_t entry, size_t byte, uint8_t value) {
  const size_t entry_bytes = IndexEntryBytes(version);
  std::vector<uint8_t> index =
      EncodeIndex(version < 2 ? ValidEntries() : ValidEntriesV2(), version);
  index[entry * entry_bytes + byte] = value;
  const uint64_t sum = Checksum(index.data(), 4 * entry_bytes);
  std::memcpy(index.data() + 4 * entry_bytes, &sum, 8);
  auto d = DecodeIndex(version < 2 ? ValidHeader() : ValidHeaderV2(), index.data(), index.size(),
                       "x.rfd");
  return d.ok() ? "accepted" : d.status().ToString();
}

// Sets a version 2 header's field (u32 or i32 at `offset`) by hand and recomputes the checksum.
std::string RefusalV2WithField(size_t offset, uint32_t value) {
  uint8_t buf[kHeaderBytes];
  EncodeHeader(ValidHeaderV2(), buf);
  std::memcpy(buf + offset, &value, 4);
  const uint64_t sum = Checksum(buf, kHeaderBytes - 8);
  std::memcpy(buf + kHeaderBytes - 8, &sum, 8);
  auto d = DecodeHeader(buf, sizeof buf, "x.rfd");
  return d.ok() ? "accepted" : d.status().ToString();
}

TEST(HostileHeader, TheValidVersionTwoOnesAreAccepted) {
  EXPECT_EQ(Refusal(ValidHeaderV2()), "accepted");
  EXPECT_EQ(IndexRefusalV2(ValidEntriesV2()), "accepted");
}

TEST(HostileHeader, AnUnknownCodecIdIsRefusedAtByte660) {
  EXPECT_EQ(RefusalV2WithField(660, 3), "x.rfd: at byte 660: bad header: unknown codec id 3");
  EXPECT_EQ(RefusalV2WithField(660, 0xffffffffu),
            "x.rfd: at byte 660: bad header: unknown codec id 4294967295");
}

TEST(HostileHeader, AZstdLevelOutsideItsRangeOrALevelForAnotherCodecIsRefusedAtByte664) {
  EXPECT_EQ(RefusalV2WithField(664, 0), "x.rfd: at byte 664: bad header: codec level 0 for zstd");
  EXPECT_EQ(RefusalV2WithField(664, static_cast<uint32_t>(MaxZstdLevel() + 1)),
            "x.rfd: at byte 664: bad header: codec level " + std::to_string(MaxZstdLevel() + 1) +
                " for zstd");
  EXPECT_EQ(RefusalV2WithField(664, static_cast<uint32_t>(-1)),
            "x.rfd: at byte 664: bad header: codec level -1 for zstd");
  EXPECT_EQ(RefusalV2WithField(664, 22), "accepted");
  Header h = ValidHeaderV2();
  h.codec = {Codec::kLz4, 1};
  EXPECT_EQ(Refusal(h), "x.rfd: at byte 664: bad header: codec level 1 for lz4");
  h.codec = {Codec::kNone, 3};
  EXPECT_EQ(Refusal(h), "x.rfd: at byte 664: bad header: codec level 3 for none");
}

TEST(HostileHeader, AnUnknownRecordKindIsRefusedAtByte668) {
  EXPECT_EQ(RefusalV2WithField(668, 4),
            "x.rfd: at byte 668: bad header: unknown record kind 4 (this build reads tensor, "
            "tokens, bytes and fields records)");
  EXPECT_EQ(RefusalV2WithField(668, 0x80000000u),
            "x.rfd: at byte 668: bad header: unknown record kind 2147483648 (this build reads "
            "tensor, tokens, bytes and fields records)");
  // Samples of several fields are version 3's.
  EXPECT_EQ(RefusalV2WithField(668, 3),
            "x.rfd: at byte 668: bad header: fields records in a version 2 file (they are "
            "version 3)");
  // Records of any size on a tensor dataset's fields (3 dims, uint8): refused for their shape.
  EXPECT_EQ(RefusalV2WithField(668, 1),
            "x.rfd: at byte 32: bad header: tokens records of uint8 (token ids are uint16, int32 "
            "or int64)");
}

// A compressed chunk's data is not bounded by its file: the format bounds it, and a header whose
// chunk_samples name a larger chunk is refused before any reader sizes a slot from it. Version 1
// chunks are bounded by their file (the index's stored sizes): the same header is accepted.
TEST(HostileHeader, AVersionTwoChunkLargerThanTheFormatsBoundIsRefused) {
  Header h = ValidHeaderV2();
  // 60-byte samples: 17895698 of them are 1073741880 bytes, so the samples alone pass 2^30.
  h.chunk_samples = 17895698;
  h.total_samples = h.shard_samples = 4 * uint64_t{h.chunk_samples};
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 72: bad header: chunks of 17895698 samples of 60 bytes are "
            "1091641344 bytes, more than the format's 1073741824");
  h.chunk_samples = 17825792;  // 1069547520 bytes of samples, 1087373312 in all
  h.total_samples = h.shard_samples = 4 * uint64_t{h.chunk_samples};
  EXPECT_NE(Refusal(h), "accepted");
  h.chunk_samples = 17623000;  // 1057380000 + 17623000 labels: past 2^30 by their labels
  h.total_samples = h.shard_samples = 4 * uint64_t{h.chunk_samples};
  EXPECT_NE(Refusal(h), "accepted");
  h.chunk_samples = 17000000;  // 1020000000 + 17000000: 1037000704 stored, within the bound
  h.total_samples = h.shard_samples = 4 * uint64_t{h.chunk_samples};
  EXPECT_EQ(Refusal(h), "accepted");
  h.version = 1;
  h.chunk_samples = 17895698;
  h.total_samples = h.shard_samples = 4 * uint64_t{h.chunk_samples};
  h.file_size = h.index_offset + IndexStoredBytes(4, 1);
  EXPECT_EQ(Refusal(h), "accepted");
  // One sample larger than the bound: a chunk of one is allowed (it is the sample's own).
  h = ValidHeaderV2();
  h.channels = 1;
  h.height = h.width = 40000;  // 1.6 GB
  h.chunk_samples = 1;
  h.total_samples = h.shard_samples = h.total_chunks = h.shard_chunks = 4;
  EXPECT_EQ(Refusal(h), "accepted");
  h.chunk_samples = 2;
  h.total_chunks = h.shard_chunks = 2;
  h.file_size = h.index_offset + IndexStoredBytes(2, 2);
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 72: bad header: chunks of 2 samples of 1600000000 bytes are "
            "3200004096 bytes, more than the format's 1600004096");
}

TEST(HostileIndex, AnUnknownCodecIdInAnEntryIsRefusedNamingTheChunk) {
  std::vector<ChunkEntry> e = ValidEntriesV2();
  e[2].codec = static_cast<Codec>(3);
  EXPECT_EQ(IndexRefusalV2(e),
            "x.rfd: chunk 2 at byte 32896: bad chunk index entry: unknown codec id 3");
  // The codec is one byte and three zero bytes: a byte set beyond it is no codec either.
  EXPECT_EQ(IndexRefusalWithByte(2, 3, 37, 1),
            "x.rfd: chunk 3 at byte 32960: bad chunk index entry: unknown codec id 258");
  EXPECT_EQ(IndexRefusalWithByte(2, 3, 36, 0xff),
            "x.rfd: chunk 3 at byte 32960: bad chunk index entry: unknown codec id 255");
}

TEST(HostileIndex, ARawChunkWhoseFrameDataAndStoredSizesDifferIsRefused) {
  const std::string why =
      "bad chunk index entry: a raw chunk's frame, data and stored sizes differ";
  std::vector<ChunkEntry> e = ValidEntriesV2();
  e[1].frame_bytes = 100;
  EXPECT_EQ(IndexRefusalV2(e), "x.rfd: chunk 1 at byte 32832: " + why);
  e = ValidEntriesV2();
  e[1].stored_bytes = 2 * kAlign;
  EXPECT_EQ(IndexRefusalV2(e), "x.rfd: chunk 1 at byte 32832: " + why);
  e = ValidEntriesV2();
  e[1].frame_bytes = e[1].stored_bytes = ~uint64_t{0};
  EXPECT_EQ(IndexRefusalV2(e), "x.rfd: chunk 1 at byte 32832: " + why);
}

TEST(HostileIndex, ACompressedFrameThatDoesNotFitItsStoredExtentIsRefused) {
  std::vector<ChunkEntry> e = ValidEntriesV2();
  e[0].frame_bytes = kAlign + 1;  // larger than its stored extent
  EXPECT_EQ(IndexRefusalV2(e),
            "x.rfd: chunk 0 at byte 32768: bad chunk index entry: zstd frame of 4097 bytes in a "
            "stored extent of 4096");
  e[0].frame_bytes = ~uint64_t{0};
  EXPECT_NE(IndexRefusalV2(e), "accepted");
  e[0].frame_bytes = 0;
  EXPECT_EQ(IndexRefusalV2(e),
            "x.rfd: chunk 0 at byte 32768: bad chunk index entry: zstd frame of 0 bytes in a "
            "stored extent of 4096");
  // A stored extent other than the frame rounded up to 4096: a block of padding too many.
  e = ValidEntriesV2();
  e[2].stored_bytes = 2 * kAlign;
  EXPECT_EQ(IndexRefusalV2(e),
            "x.rfd: chunk 2 at byte 32896: bad chunk index entry: zstd frame of 900 bytes in a "
            "stored extent of 8192");
  e = ValidEntriesV2();
  e[3].codec = Codec::kLz4;
  e[3].stored_bytes = 0;
  EXPECT_EQ(IndexRefusalV2(e),
            "x.rfd: chunk 3 at byte 32960: bad chunk index entry: lz4 frame of 900 bytes in a "
            "stored extent of 0");
}

TEST(HostileIndex, ADataSizeOtherThanTheSampleCountsIsRefused) {
  std::vector<ChunkEntry> e = ValidEntriesV2();
  e[2].data_bytes = 2 * kAlign;
  EXPECT_EQ(IndexRefusalV2(e),
            "x.rfd: chunk 2 at byte 32896: bad chunk index entry: data size 8192 does not match "
            "its 30 samples (4096 bytes)");
  // The decompression bomb's declaration: far more data than the samples hold.
  e[2].data_bytes = uint64_t{1} << 40;
  EXPECT_EQ(IndexRefusalV2(e),
            "x.rfd: chunk 2 at byte 32896: bad chunk index entry: data size 1099511627776 does "
            "not match its 30 samples (4096 bytes)");
  e = ValidEntriesV2();
  e[1].data_bytes = e[1].frame_bytes = e[1].stored_bytes = 2 * kAlign;  // raw, consistently
  EXPECT_EQ(IndexRefusalV2(e),
            "x.rfd: chunk 1 at byte 32832: bad chunk index entry: data size 8192 does not match "
            "its 30 samples (4096 bytes)");
}

// Version 1's entry bytes 36 to 39 are spare and zero: version 2 keeps its codec there, so a
// version 1 file with them set is refused rather than read as something it is not.
TEST(HostileIndex, NonzeroSpareBytesOfAVersionOneEntryAreRefused) {
  EXPECT_EQ(IndexRefusalWithByte(1, 0, 36, 0), "accepted");
  for (size_t byte = 36; byte < 40; ++byte) {
    EXPECT_EQ(IndexRefusalWithByte(1, 2, byte, 1),
              "x.rfd: chunk 2 at byte 32864: bad chunk index entry: spare bytes at entry byte 36 "
              "are not zero")
        << "byte " << byte;
  }
}

// Issue 40: a 3-byte class names block for 2 classes said "(2 to 1048576: ...)", a range 3 lies
// inside; the least is two bytes a class.
TEST(HostileHeader, AClassNamesBlockTooSmallForItsClassesNamesTheLeastItNeeds) {
  Header h = ValidHeader();
  h.num_classes = 2;
  h.names_offset = 6 * kAlign;
  h.names_bytes = 3;
  h.names_checksum = 1;
  EXPECT_EQ(Refusal(h),
            "x.rfd: at byte 808: bad header: class names block of 3 bytes for 2 classes (4 to "
            "1048576: one byte and a newline a class at least)");
  h.names_bytes = 4;
  EXPECT_EQ(Refusal(h), "accepted");
}

}  // namespace
}  // namespace rf::format
