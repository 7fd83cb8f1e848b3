// Per-chunk codecs of the dataset format (version 2, io/format.h): none, lz4 and zstd, from
// Debian's liblz4 and libzstd. Nothing here is a codec of our own: this is the one place that
// calls the libraries, so the writer, the reader's decompression stage and the tools agree.
//
// A compressed chunk is one frame (an LZ4 block, or one zstd frame) of the chunk's data bytes.
// The format records, per chunk, the frame's size and the data's size; Decompress enforces the
// data size exactly, so a frame that would inflate past it (a decompression bomb) or fall short
// of it is refused, never written past the destination.
//
// Thread safety: a Compressor or Decompressor holds its library context; use one per thread.
// The free functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace rf {

// Stored in the chunk index (one byte) and the header; never renumber.
enum class Codec : uint8_t { kNone = 0, kLz4 = 1, kZstd = 2 };

struct CodecSpec {
  Codec codec = Codec::kNone;
  int level = 0;  // zstd: 1 to MaxZstdLevel(); 0 for none and lz4
  bool operator==(const CodecSpec&) const = default;
};

inline constexpr int kDefaultZstdLevel = 3;
int MaxZstdLevel();  // libzstd's (22)

// "none", "lz4", "zstd" (level 3), "zstd:L". Usage naming the valid values otherwise.
Result<CodecSpec> ParseCodec(const std::string& text);
std::string CodecText(const CodecSpec& spec);  // "zstd:3"
const char* CodecName(Codec c);                // "zstd"; "unknown" for a value not above
bool IsCodec(uint32_t value);

// The largest frame Compress can make of n bytes.
size_t CompressBound(Codec c, size_t n);

// The most bytes a frame of `frame_bytes` of codec `c` can decompress to: the codec's own limit,
// whatever the frame holds (none: the frame itself). lz4: a block gives at most 255 bytes a byte
// (a match's length grows by 255 an extension byte); zstd: a block is at most 128 KiB and takes
// 4 bytes at least (its 3-byte header and one RLE byte), so at most 32768 bytes a byte (1 GiB of
// zeros makes a frame of 33,006 bytes at level 19). A chunk's index entry that declares more data
// than its frame can make is refused (format::DecodeIndex) before any buffer is sized from it:
// what a reader allocates for a chunk follows its stored bytes, which its file bounds.
inline constexpr uint64_t kLz4MaxExpansion = 255;
inline constexpr uint64_t kZstdMaxExpansion = 32768;
uint64_t MaxDecompressedBytes(Codec c, uint64_t frame_bytes);

class Compressor {
 public:
  explicit Compressor(CodecSpec spec);
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
  Compressor(Compressor&&) noexcept;
  Compressor& operator=(Compressor&&) noexcept;
  const CodecSpec& spec() const { return spec_; }
  // Compresses src[0, n) into dst (capacity CompressBound(codec, n) at least); the frame's
  // size. Fails only on a library error (InvalidArgument naming it).
  Result<size_t> Compress(const void* src, size_t n, void* dst, size_t capacity);

 private:
  CodecSpec spec_;
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

class Decompressor {
 public:
  Decompressor();
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  Decompressor(Decompressor&&) noexcept;
  Decompressor& operator=(Decompressor&&) noexcept;
  // Decompresses the frame src[0, n) of codec `c` into exactly `want` bytes at dst. A frame
  // that is damaged, truncated, of another codec, or whose content is not exactly `want` bytes
  // fails with a message saying which (the caller adds file, chunk and offset); nothing is
  // written past dst + want.
  Status Decompress(Codec c, const void* src, size_t n, void* dst, size_t want);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace rf
