#include "io/codec.h"

#include <lz4.h>
#include <zstd.h>

#include <climits>
#include <cstring>

namespace rf {
namespace {

// Text built by appending (GCC 12 at -O3 misreads "literal" + std::string&& as an overlapping
// memcpy: -Wrestrict, a false positive that -Werror turns into a failed build).
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string s;
  (s.append(parts), ...);
  return s;
}

std::string Num(uint64_t v) { return std::to_string(v); }

// The user's text as it may go into a one-line message: printable ASCII, at most 40 characters.
std::string Shown(const std::string& text) {
  std::string s;
  for (char c : text.substr(0, 40)) s += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > 40) s += "...";
  return s;
}

}  // namespace

int MaxZstdLevel() { return ZSTD_maxCLevel(); }

bool IsCodec(uint32_t value) { return value <= static_cast<uint32_t>(Codec::kZstd); }

const char* CodecName(Codec c) {
  switch (c) {
    case Codec::kNone:
      return "none";
    case Codec::kLz4:
      return "lz4";
    case Codec::kZstd:
      return "zstd";
  }
  return "unknown";
}

std::string CodecText(const CodecSpec& spec) {
  std::string s = CodecName(spec.codec);
  if (spec.codec == Codec::kZstd) {
    s += ':';
    s += std::to_string(spec.level);
  }
  return s;
}

Result<CodecSpec> ParseCodec(const std::string& text) {
  const std::string valid =
      Cat("none, lz4, zstd or zstd:LEVEL with LEVEL 1 to ", Num(MaxZstdLevel()));
  if (text == "none") return CodecSpec{Codec::kNone, 0};
  if (text == "lz4") return CodecSpec{Codec::kLz4, 0};
  if (text == "zstd") return CodecSpec{Codec::kZstd, kDefaultZstdLevel};
  if (text.rfind("zstd:", 0) == 0) {
    const std::string l = text.substr(5);
    const bool digits =
        !l.empty() && l.size() <= 3 && l.find_first_not_of("0123456789") == std::string::npos;
    const int level = digits ? std::stoi(l) : -1;
    if (level < 1 || level > MaxZstdLevel()) {
      return Status::Usage(
          Cat("codec '", Shown(text), "': zstd levels are 1 to ", Num(MaxZstdLevel())));
    }
    return CodecSpec{Codec::kZstd, level};
  }
  return Status::Usage(Cat("unknown codec '", Shown(text), "': ", valid));
}

size_t CompressBound(Codec c, size_t n) {
  switch (c) {
    case Codec::kLz4:
      return n > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)
                 ? 0
                 : static_cast<size_t>(LZ4_compressBound(static_cast<int>(n)));
    case Codec::kZstd:
      return ZSTD_compressBound(n);
    case Codec::kNone:
      break;
  }
  return n;
}

uint64_t MaxDecompressedBytes(Codec c, uint64_t frame_bytes) {
  const uint64_t ratio = c == Codec::kLz4    ? kLz4MaxExpansion
                         : c == Codec::kZstd ? kZstdMaxExpansion
                                             : 1;
  return frame_bytes > UINT64_MAX / ratio ? UINT64_MAX : frame_bytes * ratio;
}

struct Compressor::Ctx {
  ZSTD_CCtx* zstd = nullptr;
  ~Ctx() { ZSTD_freeCCtx(zstd); }
};

Compressor::Compressor(CodecSpec spec) : spec_(spec), ctx_(std::make_unique<Ctx>()) {}
Compressor::~Compressor() = default;
Compressor::Compressor(Compressor&&) noexcept = default;
Compressor& Compressor::operator=(Compressor&&) noexcept = default;

Result<size_t> Compressor::Compress(const void* src, size_t n, void* dst, size_t capacity) {
  switch (spec_.codec) {
    case Codec::kNone:
      if (capacity < n) return Status::InvalidArgument("no room to store the chunk");
      std::memcpy(dst, src, n);
      return n;
    case Codec::kLz4: {
      // LZ4's block API takes int sizes: a chunk is at most a few GiB below its limit.
      if (n > static_cast<size_t>(LZ4_MAX_INPUT_SIZE))
        return Status::InvalidArgument(
            Cat("lz4: a chunk of ", Num(n), " bytes is larger than lz4 compresses in one block"));
      const int got = LZ4_compress_default(static_cast<const char*>(src), static_cast<char*>(dst),
                                           static_cast<int>(n),
                                           static_cast<int>(std::min<size_t>(capacity, INT_MAX)));
      if (got <= 0) return Status::InvalidArgument("lz4 could not compress the chunk");
      return static_cast<size_t>(got);
    }
    case Codec::kZstd: {
      if (ctx_->zstd == nullptr) {
        ctx_->zstd = ZSTD_createCCtx();
        if (ctx_->zstd == nullptr) return Status::InvalidArgument("zstd: out of memory");
        ZSTD_CCtx_setParameter(ctx_->zstd, ZSTD_c_compressionLevel, spec_.level);
        // The declared size goes into the frame header, so a reader can check it cheaply.
        ZSTD_CCtx_setParameter(ctx_->zstd, ZSTD_c_contentSizeFlag, 1);
        ZSTD_CCtx_setParameter(ctx_->zstd, ZSTD_c_checksumFlag, 0);  // the chunk has XXH3
      }
      const size_t got = ZSTD_compress2(ctx_->zstd, dst, capacity, src, n);
      if (ZSTD_isError(got)) return Status::InvalidArgument(Cat("zstd: ", ZSTD_getErrorName(got)));
      return got;
    }
  }
  return Status::InvalidArgument("unknown codec");
}

struct Decompressor::Ctx {
  ZSTD_DCtx* zstd = nullptr;
  ~Ctx() { ZSTD_freeDCtx(zstd); }
};

Decompressor::Decompressor() : ctx_(std::make_unique<Ctx>()) {}
Decompressor::~Decompressor() = default;
Decompressor::Decompressor(Decompressor&&) noexcept = default;
Decompressor& Decompressor::operator=(Decompressor&&) noexcept = default;

Status Decompressor::Decompress(Codec c, const void* src, size_t n, void* dst, size_t want) {
  auto sizes = [&](const std::string& what) {
    return Status::InvalidArgument(Cat(CodecName(c), " frame of ", Num(n), " bytes ", what));
  };
  switch (c) {
    case Codec::kNone:
      if (n != want) return sizes(Cat("stored raw, but ", Num(want), " were declared"));
      if (n != 0) std::memcpy(dst, src, n);  // an empty frame may come without a buffer (null)
      return Status::Ok();
    case Codec::kLz4: {
      if (n > static_cast<size_t>(INT_MAX) || want > static_cast<size_t>(INT_MAX))
        return sizes("is larger than an lz4 block");
      // Safe decoding: never reads past src + n nor writes past dst + want.
      const int got = LZ4_decompress_safe(static_cast<const char*>(src), static_cast<char*>(dst),
                                          static_cast<int>(n), static_cast<int>(want));
      if (got < 0)
        return sizes(
            Cat("is damaged, or decompresses to more than the ", Num(want), " bytes declared"));
      if (static_cast<size_t>(got) != want)
        return sizes(Cat("decompresses to ", Num(static_cast<uint64_t>(got)), " bytes, not the ",
                         Num(want), " declared"));
      return Status::Ok();
    }
    case Codec::kZstd: {
      // The frame's own declared content size, checked before anything is decompressed.
      const unsigned long long declared = ZSTD_getFrameContentSize(src, n);
      if (declared == ZSTD_CONTENTSIZE_ERROR) return sizes("is not a zstd frame");
      if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != want)
        return sizes(
            Cat("declares ", Num(declared), " bytes, not the ", Num(want), " in the index"));
      if (ctx_->zstd == nullptr) {
        ctx_->zstd = ZSTD_createDCtx();
        if (ctx_->zstd == nullptr) return Status::InvalidArgument("zstd: out of memory");
      }
      const size_t got = ZSTD_decompressDCtx(ctx_->zstd, dst, want, src, n);
      if (ZSTD_isError(got)) return sizes(Cat("is damaged: ", ZSTD_getErrorName(got)));
      if (got != want)
        return sizes(Cat("decompresses to ", Num(got), " bytes, not the ", Num(want), " declared"));
      return Status::Ok();
    }
  }
  return Status::InvalidArgument(Cat("unknown codec ", Num(static_cast<uint64_t>(c))));
}

}  // namespace rf
