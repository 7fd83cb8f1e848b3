#include "tests/testing/forged_dataset.h"

#include <gtest/gtest.h>

#include <cstring>

#include "io/checksum.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {
namespace {

format::Header HeaderOf(const std::vector<uint8_t>& bytes, const std::string& path) {
  auto h = format::DecodeHeader(bytes.data(), bytes.size(), path);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? *h : format::Header{};
}

std::vector<format::ChunkEntry> IndexOf(const std::vector<uint8_t>& bytes, const format::Header& h,
                                        const std::string& path) {
  auto e =
      format::DecodeIndex(h, bytes.data() + h.index_offset, bytes.size() - h.index_offset, path);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : std::vector<format::ChunkEntry>{};
}

void PutIndex(std::vector<uint8_t>* bytes, const format::Header& h,
              const std::vector<format::ChunkEntry>& entries) {
  // In the file's own version: a version 2 index has 64-byte entries.
  const std::vector<uint8_t> index = format::EncodeIndex(entries, h.version);
  ASSERT_LE(h.index_offset + index.size(), bytes->size());
  std::memcpy(bytes->data() + h.index_offset, index.data(), index.size());
}

}  // namespace

void ForgeHeader(const std::string& path, const std::function<void(format::Header*)>& edit) {
  std::vector<uint8_t> bytes = ReadAll(path);
  format::Header h = HeaderOf(bytes, path);
  edit(&h);
  format::EncodeHeader(h, bytes.data());
  WriteAll(path, bytes);
}

void ForgeIndex(const std::string& path,
                const std::function<void(std::vector<format::ChunkEntry>*)>& edit) {
  std::vector<uint8_t> bytes = ReadAll(path);
  const format::Header h = HeaderOf(bytes, path);
  std::vector<format::ChunkEntry> entries = IndexOf(bytes, h, path);
  const size_t n = entries.size();
  edit(&entries);
  ASSERT_EQ(entries.size(), n) << "ForgeIndex may not change the entry count";
  PutIndex(&bytes, h, entries);
  WriteAll(path, bytes);
}

void ForgeLabel(const std::string& path, size_t chunk, uint32_t i, int64_t value) {
  std::vector<uint8_t> bytes = ReadAll(path);
  const format::Header h = HeaderOf(bytes, path);
  std::vector<format::ChunkEntry> entries = IndexOf(bytes, h, path);
  ASSERT_LT(chunk, entries.size());
  format::ChunkEntry& e = entries[chunk];
  ASSERT_LT(i, e.sample_count);
  const uint64_t labels_at =
      e.offset +
      (h.variable()
           ? format::RecordLayoutFor(e.sample_count, h.LabelBytes()).labels_offset
           : format::LayoutFor(e.sample_count, h.SampleBytes(), h.LabelBytes()).labels_offset);
  // Little-endian: the low LabelBytes() bytes of the value are the label.
  std::memcpy(bytes.data() + labels_at + i * h.LabelBytes(), &value, h.LabelBytes());
  e.checksum = Checksum(bytes.data() + e.offset, e.stored_bytes);
  PutIndex(&bytes, h, entries);
  WriteAll(path, bytes);
}

void ForgeChunk(const std::string& path, size_t chunk,
                const std::function<void(uint8_t* stored, uint64_t bytes)>& edit) {
  std::vector<uint8_t> bytes = ReadAll(path);
  const format::Header h = HeaderOf(bytes, path);
  std::vector<format::ChunkEntry> entries = IndexOf(bytes, h, path);
  ASSERT_LT(chunk, entries.size());
  format::ChunkEntry& e = entries[chunk];
  ASSERT_FALSE(e.compressed());
  edit(bytes.data() + e.offset, e.stored_bytes);
  e.checksum = Checksum(bytes.data() + e.offset, e.stored_bytes);
  PutIndex(&bytes, h, entries);
  WriteAll(path, bytes);
}

std::vector<uint8_t> FrameOf(CodecSpec spec, const std::vector<uint8_t>& data) {
  Compressor c(spec);
  std::vector<uint8_t> out(CompressBound(spec.codec, data.size()));
  Result<size_t> n = c.Compress(data.data(), data.size(), out.data(), out.size());
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  out.resize(n.ok() ? *n : 0);
  return out;
}

std::vector<uint8_t> ChunkFrame(const std::string& path, size_t chunk) {
  const std::vector<uint8_t> bytes = ReadAll(path);
  const format::Header h = HeaderOf(bytes, path);
  const std::vector<format::ChunkEntry> entries = IndexOf(bytes, h, path);
  EXPECT_LT(chunk, entries.size());
  if (chunk >= entries.size()) return {};
  const format::ChunkEntry& e = entries[chunk];
  return std::vector<uint8_t>(bytes.begin() + static_cast<ptrdiff_t>(e.offset),
                              bytes.begin() + static_cast<ptrdiff_t>(e.offset + e.frame_bytes));
}

void ForgeFrame(const std::string& path, size_t chunk, Codec codec,
                const std::vector<uint8_t>& frame) {
  std::vector<uint8_t> bytes = ReadAll(path);
  const format::Header h = HeaderOf(bytes, path);
  ASSERT_EQ(h.version, 2u) << path << ": only a version 2 chunk holds a codec frame";
  std::vector<format::ChunkEntry> entries = IndexOf(bytes, h, path);
  ASSERT_LT(chunk, entries.size());
  format::ChunkEntry& e = entries[chunk];
  const uint64_t stored = format::RoundUp(frame.size(), format::kAlign);
  ASSERT_LE(stored, e.stored_bytes) << "a forged frame must fit the chunk's stored extent";
  uint8_t* at = bytes.data() + e.offset;
  std::memset(at, 0, e.stored_bytes);
  if (!frame.empty()) std::memcpy(at, frame.data(), frame.size());
  e.codec = codec;
  e.frame_bytes = frame.size();
  e.stored_bytes = stored;
  e.checksum = Checksum(at, stored);
  PutIndex(&bytes, h, entries);
  WriteAll(path, bytes);
}

}  // namespace rf::testing
