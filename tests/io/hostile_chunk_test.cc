// Compressed chunks (format version 2) a hostile user or a failing disk hands Dataset::ReadChunk:
// a bit flipped and nothing fixed, which the checksum over the stored extent catches; and codec
// frames forged with every checksum recomputed (tests/testing/forged_dataset.h ForgeFrame), which
// only the frame checks can refuse: damaged, truncated, of the other codec, declaring another
// size, or inflating far beyond the size the index declares (a decompression bomb). Each is
// refused naming file, chunk and offset, and nothing is written past the chunk's data: every
// read goes into a buffer of exactly data_bytes, so the ASan run catches a write past it.
#include <gtest/gtest.h>
#include <zstd.h>

#include <string>
#include <vector>

#include "io/codec.h"
#include "io/dataset.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

// 200 positional samples of 1x32x32 uint8 in chunks of 16 KiB (15 samples, 14 chunks), each
// compressed with `codec` to one 4 KiB block.
std::string WriteCompressed(const std::string& path, CodecSpec codec) {
  testing::WritePositionalDataset(
      path, 200, {.channels = 1, .height = 32, .width = 32, .chunk_bytes = 16384, .codec = codec});
  return path;
}

// 300 positional samples of 1x8x8 in version 2 chunks of 4 KiB (63 samples), stored raw: room
// for a forged frame of up to 4096 bytes that must inflate to 4096.
std::string WriteRawV2(const std::string& path) {
  testing::WritePositionalDataset(path, 300, {.chunk_bytes = 4096, .version = 2});
  return path;
}

// "ok", or why Dataset::ReadChunk refused chunk `chunk`, read into exactly its data_bytes.
std::string ReadError(const std::string& path, size_t chunk) {
  Result<Dataset> d = Dataset::Open(path);
  if (!d.ok()) return "open: " + d.status().ToString();
  std::vector<uint8_t> data(d->chunk(chunk).entry.data_bytes);
  const Status st = d->ReadChunk(chunk, data.data());
  if (st.ok()) return "ok";
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  return st.ToString();
}

// What every refusal of chunk `chunk`'s frame starts with: file, chunk, offset, the codec and
// the frame's size.
std::string FramePrefix(const std::string& path, size_t chunk, Codec codec) {
  Result<Dataset> d = Dataset::Open(path);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  if (!d.ok()) return "";
  const format::ChunkEntry& e = d->chunk(chunk).entry;
  return path + ": chunk " + std::to_string(chunk) + " at byte " + std::to_string(e.offset) + ": " +
         CodecName(codec) + " frame of " + std::to_string(e.frame_bytes) + " bytes ";
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// A zstd frame of `data` that declares `declared` bytes of content (256 to 65791) whatever it
// holds: made without a content size, then given one (the header's Frame_Content_Size_flag set
// to 2 bytes, the field inserted after the window descriptor, as RFC 8878 lays it out).
std::vector<uint8_t> ZstdFrameDeclaring(const std::vector<uint8_t>& data, uint64_t declared) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
  std::vector<uint8_t> frame(ZSTD_compressBound(data.size()));
  const size_t n = ZSTD_compress2(c, frame.data(), frame.size(), data.data(), data.size());
  ZSTD_freeCCtx(c);
  EXPECT_FALSE(ZSTD_isError(n));
  frame.resize(n);
  EXPECT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  if (declared == 0) return frame;  // no declared size at all
  EXPECT_EQ(frame[4] & 0xe3, 0) << "expected no content size, single segment, dictionary";
  frame[4] |= 1 << 6;  // a 2-byte Frame_Content_Size, holding the size less 256
  const uint16_t field = static_cast<uint16_t>(declared - 256);
  frame.insert(frame.begin() + 6, {static_cast<uint8_t>(field), static_cast<uint8_t>(field >> 8)});
  EXPECT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), declared);
  return frame;
}

class HostileChunk : public ::testing::TestWithParam<CodecSpec> {
 protected:
  Codec codec() const { return GetParam().codec; }
  Codec other() const { return codec() == Codec::kLz4 ? Codec::kZstd : Codec::kLz4; }
};

TEST_P(HostileChunk, TheWritersChunksAreCompressedAndReadBack) {
  TempDir t;
  const std::string p = WriteCompressed(t.File("c.rfd"), GetParam());
  auto d = Dataset::Open(p);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->chunk_count(), 14u);
  EXPECT_EQ(d->compressed_chunks(), 14u);
  for (size_t c = 0; c < d->chunk_count(); ++c) {
    EXPECT_EQ(d->chunk(c).entry.codec, codec());
    EXPECT_EQ(d->chunk(c).entry.stored_bytes, format::kAlign);
    EXPECT_EQ(ReadError(p, c), "ok");
  }
}

// A flipped bit anywhere in the stored extent, in the frame or its zero padding, with nothing
// fixed: the checksum over the stored bytes refuses it before anything is decompressed.
TEST_P(HostileChunk, AFlippedBitIsRefusedByTheChecksumNamingFileChunkAndOffset) {
  TempDir t;
  const std::string p = WriteCompressed(t.File("f.rfd"), GetParam());
  auto d = Dataset::Open(p);
  ASSERT_TRUE(d.ok());
  for (size_t c : {size_t{0}, size_t{6}, d->chunk_count() - 1}) {
    const format::ChunkEntry& e = d->chunk(c).entry;
    for (uint64_t at : {uint64_t{0}, e.frame_bytes / 2, e.frame_bytes - 1, e.stored_bytes - 1}) {
      testing::FlipBit(p, e.offset + at, 5);
      EXPECT_TRUE(StartsWith(ReadError(p, c), p + ": chunk " + std::to_string(c) + " at byte " +
                                                  std::to_string(e.offset) +
                                                  ": checksum mismatch (stored "))
          << "chunk " << c << " byte " << at << ": " << ReadError(p, c);
      testing::FlipBit(p, e.offset + at, 5);
      EXPECT_EQ(ReadError(p, c), "ok");
    }
  }
}

// Damage a forger hides behind a recomputed checksum: the frame checks alone stand. A frame
// whose second half is all 0xff, and one cut short at any length, are refused; and damage
// anywhere (a byte of the frame set to three values in turn: every byte of its first 32, then
// every fifth) is refused, by the frame checks
// or the labels' (a damaged frame that still decodes to exactly the declared size hands on
// whatever it decodes to: the format keeps a checksum of the stored bytes, which the forger
// recomputed, not of the data), or read as such, never past the chunk's data.
TEST_P(HostileChunk, ADamagedFrameWithARecomputedChecksumIsRefusedNamingFileChunkAndOffset) {
  TempDir t;
  const std::string p = WriteCompressed(t.File("d.rfd"), GetParam());
  const std::vector<uint8_t> good = testing::ChunkFrame(p, 2);
  const std::string prefix = FramePrefix(p, 2, codec());
  std::vector<uint8_t> ff = good;
  std::fill(ff.begin() + static_cast<ptrdiff_t>(ff.size() / 2), ff.end(), 0xff);
  testing::ForgeFrame(p, 2, codec(), ff);
  const std::string err = ReadError(p, 2);
  EXPECT_TRUE(StartsWith(err, prefix + "is damaged")) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);

  // A frame cut too short to make its chunk's data (lz4's 255 bytes a byte, zstd's 32768) is
  // refused at open, by its entry (issue 40, M1); a longer cut when the chunk is read.
  const std::vector<uint8_t> file = testing::ReadAll(p);
  uint64_t data_bytes = 0;
  {
    Result<Dataset> d = Dataset::Open(p);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    data_bytes = d->chunk(2).entry.data_bytes;
  }
  for (size_t cut = 1; cut < good.size(); cut += cut < 32 ? 1 : 7) {
    testing::WriteAll(p, file);
    const std::vector<uint8_t> head(good.begin(), good.begin() + static_cast<ptrdiff_t>(cut));
    testing::ForgeFrame(p, 2, codec(), head);
    const std::string e = ReadError(p, 2);
    if (MaxDecompressedBytes(codec(), cut) < data_bytes) {
      ASSERT_TRUE(e.find("open: " + p + ": chunk 2 at byte ") == 0 &&
                  e.find(": bad chunk index entry: data size " + std::to_string(data_bytes) +
                         " from a " + CodecName(codec()) + " frame of " + std::to_string(cut) +
                         " bytes, more than ") != std::string::npos)
          << "cut at " << cut << ": " << e;
    } else {
      ASSERT_TRUE(StartsWith(e, FramePrefix(p, 2, codec()))) << "cut at " << cut << ": " << e;
    }
  }
  testing::WriteAll(p, file);

  const std::string chunk = p + ": chunk 2 at byte ";
  int refused = 0, read = 0;
  for (size_t at = 0; at < good.size(); at += at < 32 ? 1 : 5) {
    for (uint8_t v : {uint8_t(good[at] ^ 0x01), uint8_t(good[at] ^ 0x80), uint8_t{0xff}}) {
      if (v == good[at]) continue;
      std::vector<uint8_t> bad = good;
      bad[at] = v;
      testing::ForgeFrame(p, 2, codec(), bad);
      const std::string e = ReadError(p, 2);
      if (e == "ok") {
        ++read;
        continue;
      }
      ++refused;
      ASSERT_TRUE(StartsWith(e, chunk)) << "byte " << at << " = " << int{v} << ": " << e;
      ASSERT_EQ(e.find('\n'), std::string::npos) << e;
    }
  }
  EXPECT_GT(refused, 0);
  RecordProperty("refused", refused);
  RecordProperty("read", read);
  testing::ForgeFrame(p, 2, codec(), good);
  EXPECT_EQ(ReadError(p, 2), "ok");
}

TEST_P(HostileChunk, AFrameOfTheOtherCodecIsRefused) {
  TempDir t;
  const std::string p = WriteCompressed(t.File("o.rfd"), GetParam());
  testing::ForgeFrame(p, 3, other(), testing::ChunkFrame(p, 3));
  const std::string err = ReadError(p, 3);
  if (other() == Codec::kZstd) {
    EXPECT_EQ(err, FramePrefix(p, 3, other()) + "is not a zstd frame");
  } else {
    EXPECT_TRUE(StartsWith(err, FramePrefix(p, 3, other()))) << err;
  }
}

// Data of another size than the index declares: zstd's frame says so in its header (checked
// before anything is decompressed); an lz4 block says nothing, and decompressing finds it.
TEST_P(HostileChunk, AFrameOfAnotherSizeIsRefused) {
  TempDir t;
  const std::string p = WriteCompressed(t.File("s.rfd"), GetParam());
  const std::vector<uint8_t> data = testing::PositionalSamples(20, 1024);
  for (size_t bytes : {size_t{12288}, size_t{20480}}) {
    testing::ForgeFrame(
        p, 4, codec(),
        testing::FrameOf(GetParam(), std::vector<uint8_t>(data.begin(), data.begin() + bytes)));
    const std::string prefix = FramePrefix(p, 4, codec());
    if (codec() == Codec::kZstd) {
      EXPECT_EQ(ReadError(p, 4), prefix + "declares " + std::to_string(bytes) +
                                     " bytes, not the 16384 in the index");
    } else if (bytes < 16384) {
      EXPECT_EQ(ReadError(p, 4), prefix + "decompresses to " + std::to_string(bytes) +
                                     " bytes, not the 16384 declared");
    } else {
      EXPECT_EQ(ReadError(p, 4),
                prefix + "is damaged, or decompresses to more than the 16384 bytes declared");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, HostileChunk,
                         ::testing::Values(CodecSpec{Codec::kLz4, 0}, CodecSpec{Codec::kZstd, 3}),
                         [](const auto& info) { return std::string(CodecName(info.param.codec)); });

// Decompression bombs: 64 MiB of zeros (512 KiB for lz4, whose blocks inflate at most ~255 times)
// in a 4096-byte chunk's place, the checksum recomputed. Each refused, and nothing written past
// the chunk's 4096 bytes.
TEST(HostileChunkBomb, AZstdFrameDeclaringItsRealSizeIsRefusedBeforeDecompressing) {
  TempDir t;
  const std::string p = WriteRawV2(t.File("b.rfd"));
  testing::ForgeFrame(p, 1, Codec::kZstd,
                      testing::FrameOf({Codec::kZstd, 19}, std::vector<uint8_t>(64 << 20, 0)));
  EXPECT_EQ(ReadError(p, 1),
            FramePrefix(p, 1, Codec::kZstd) + "declares 67108864 bytes, not the 4096 in the index");
}

TEST(HostileChunkBomb, AZstdFrameDeclaring4096BytesThatHolds64MiBIsRefused) {
  TempDir t;
  const std::string p = WriteRawV2(t.File("b.rfd"));
  testing::ForgeFrame(p, 1, Codec::kZstd, ZstdFrameDeclaring(std::vector<uint8_t>(64 << 20), 4096));
  const std::string err = ReadError(p, 1);
  EXPECT_TRUE(StartsWith(err, FramePrefix(p, 1, Codec::kZstd) + "is damaged: ")) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);
}

TEST(HostileChunkBomb, AZstdFrameDeclaringNoSizeIsRefused) {
  TempDir t;
  const std::string p = WriteRawV2(t.File("b.rfd"));
  testing::ForgeFrame(p, 1, Codec::kZstd, ZstdFrameDeclaring(std::vector<uint8_t>(64 << 20), 0));
  const std::string err = ReadError(p, 1);
  EXPECT_TRUE(StartsWith(err, FramePrefix(p, 1, Codec::kZstd) + "is damaged: ")) << err;
}

TEST(HostileChunkBomb, AnLz4BlockInflatingPastTheDeclaredSizeIsRefused) {
  TempDir t;
  const std::string p = WriteRawV2(t.File("b.rfd"));
  testing::ForgeFrame(p, 1, Codec::kLz4,
                      testing::FrameOf({Codec::kLz4, 0}, std::vector<uint8_t>(512 << 10)));
  EXPECT_EQ(ReadError(p, 1), FramePrefix(p, 1, Codec::kLz4) +
                                 "is damaged, or decompresses to more than the 4096 bytes "
                                 "declared");
}

// A raw chunk forged to name a codec, its bytes left as they are: no frame of either codec.
TEST(HostileChunkBomb, ARawChunkRelabelledAsCompressedIsRefused) {
  TempDir t;
  const std::string p = WriteRawV2(t.File("r.rfd"));
  for (Codec c : {Codec::kLz4, Codec::kZstd}) {
    std::vector<uint8_t> raw = testing::ChunkFrame(p, 2);
    raw.resize(4000);  // a frame is shorter than its 4096-byte stored extent
    testing::ForgeFrame(p, 2, c, raw);
    const std::string err = ReadError(p, 2);
    EXPECT_TRUE(StartsWith(err, FramePrefix(p, 2, c))) << err;
  }
}

}  // namespace
}  // namespace rf
