// Headers and chunk indices a hostile user forges: every field at a value no writer produces,
// with the checksums recomputed, so only DecodeHeader's and DecodeIndex's own checks stand
// between the value and a reader that would size an allocation, a read or a loop from it.
// Each test plants one, and asserts the refusal with its file, chunk and byte offset.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace rf::format
