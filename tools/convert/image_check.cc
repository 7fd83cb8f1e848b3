#include "tools/convert/image_check.h"

#include <zlib.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "decode/jpeg_errors.h"
#include "decode/png_image.h"
#include "decode/webp_image.h"

namespace rf::convert {
namespace {

uint32_t Be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }

const char* SofName(uint8_t m) {
  switch (m) {
    case 0xc1:
      return "an extended sequential JPEG (SOF1)";
    case 0xc2:
      return "a progressive JPEG (SOF2)";
    case 0xc3:
      return "a lossless JPEG (SOF3)";
    case 0xc5:
    case 0xc6:
    case 0xc7:
      return "a hierarchical JPEG";
    case 0xc9:
      return "an arithmetic-coded JPEG (SOF9)";
    case 0xca:
      return "a progressive arithmetic-coded JPEG (SOF10)";
    case 0xcb:
      return "a lossless arithmetic-coded JPEG (SOF11)";
    default:
      return "a hierarchical arithmetic-coded JPEG";
  }
}

bool IsSof(uint8_t m) { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc; }

// The frame kinds libjpeg-turbo 2.1 decodes (lossless and hierarchical ones it does not).
bool Decodable(uint8_t m) { return m == 0xc0 || m == 0xc1 || m == 0xc2 || m == 0xc9 || m == 0xca; }

// The first frame header of a file.
struct Frame {
  bool found = false;
  uint8_t marker = 0;
  uint32_t precision = 0, components = 0;
};

// The file's markers up to its first scan, and its end-of-image marker: "" or the first
// problem of structure found (no JPEG, truncated, two frame headers, ...), *frame and *info
// holding the frame header where one was read before it.
std::string ScanJpeg(const uint8_t* d, size_t n, Frame* frame, ImageHeader* info) {
  if (n < 4) {
    return "truncated: " + std::to_string(n) + (n == 1 ? " byte" : " bytes") +
           ", where a JPEG needs its markers (ff d8, a frame header, a scan, ff d9)";
  }
  size_t p = 2;
  size_t sos = 0;
  while (sos == 0) {
    while (p < n && d[p] == 0xff && p + 1 < n && d[p + 1] == 0xff) ++p;  // fill bytes
    if (p + 2 > n) return "truncated: its header ends before the first scan";
    if (d[p] != 0xff) return "not a JPEG: a byte between markers at " + std::to_string(p);
    const uint8_t m = d[p + 1];
    p += 2;
    if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) continue;  // no length
    if (m == 0xd9) return "no image: an end-of-image marker before any scan";
    if (p + 2 > n) return "truncated: its header ends before the first scan";
    const uint32_t len = Be16(d + p);
    if (len < 2 || p + len > n) return "truncated: its header ends before the first scan";
    if (IsSof(m)) {
      if (frame->found) return "two frame headers";
      if (len < 8) return "a frame header too short";
      frame->found = true;
      frame->marker = m;
      frame->precision = d[p + 2];
      info->height = Be16(d + p + 3);
      info->width = Be16(d + p + 5);
      frame->components = d[p + 7];
    }
    if (m == 0xda) {
      if (!frame->found) return "a scan before the frame header";
      sos = p + len;
    }
    p += len;
  }
  // The entropy-coded data stuffs every 0xff as ff 00 (or is an ff d0-d7 restart marker), so
  // ff d9 after the first scan's header is the end-of-image marker (trailing bytes allowed).
  bool eoi = false;
  for (size_t i = n - 1; i > sos && !eoi; --i) eoi = d[i] == 0xd9 && d[i - 1] == 0xff;
  if (!eoi) return "truncated: no end-of-image marker after the scan";
  return "";
}

std::string FrameSize(const ImageHeader& info) {
  return std::to_string(info.width) + "x" + std::to_string(info.height);
}

std::string TooLarge(const ImageHeader& info, uint32_t max_side) {
  return FrameSize(info) + " pixels, more than --max-image-side " + std::to_string(max_side) +
         " a side";
}

// A frame header stored as it is: "" or why not.
std::string CheckFrame(const Frame& f, const ImageHeader& info, uint32_t max_side) {
  if (!Decodable(f.marker))
    return std::string(SofName(f.marker)) + ": libjpeg-turbo does not decode it";
  if (f.precision != 8)
    return std::to_string(f.precision) + "-bit samples: only 8-bit JPEGs are stored";
  if (info.width == 0 || info.height == 0)
    return "a frame header of " + FrameSize(info) + " pixels";
  if (info.width > max_side || info.height > max_side) return TooLarge(info, max_side);
  if (f.components != 1 && f.components != 3 && f.components != 4)
    return std::to_string(f.components) +
           " components: only grey (1), colour (3) and CMYK (4) JPEGs are stored";
  return "";
}

// libjpeg-turbo's own reading of the header (jpeg_read_header, through the decoders' error
// manager: decode/jpeg_errors.h), what it would decode, without decoding: "" or why it cannot.
std::string LibjpegHeader(const uint8_t* data, size_t n) {
  JpegDecompressor d;
  if (!d.Create()) return std::string("libjpeg-turbo could not start: ") + d.errors.message;
  if (setjmp(d.errors.jump) != 0)
    return std::string("libjpeg-turbo cannot read its header: ") + d.errors.message;
  jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(n));
  jpeg_read_header(&d.cinfo, TRUE);
  return "";
}

// Each check reports a bad frame header before a problem of structure after it, as a reader
// meets them.
std::string CheckJpeg(const uint8_t* d, size_t n, uint32_t max_side, ImageHeader* info) {
  Frame frame;
  info->codec = ImageCodec::kJpeg;
  const std::string structure = ScanJpeg(d, n, &frame, info);
  if (frame.found) {
    if (std::string why = CheckFrame(frame, *info, max_side); !why.empty()) return why;
  }
  if (!structure.empty()) return structure;
  if (std::string why = LibjpegHeader(d, n); !why.empty()) return why;
  // The header's kind, as the decoders read it.
  ImageHeader read;
  if (std::string why = ReadImageHeader(d, n, 65535, &read); !why.empty()) return why;
  info->kind = read.kind;
  return "";
}

std::string ChunkName(const uint8_t* type) {
  std::string name;
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>(type[i]);
    name += (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ? c : '?';
  }
  return name;
}

uint32_t Be32(const uint8_t* p) { return Be16(p) << 16 | Be16(p + 2); }
uint32_t Le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// The chunks after the signature: whole, their CRCs right, IHDR first, PLTE before the IDATs
// of a palette image, IDAT, IEND last.
std::string CheckPngChunks(const uint8_t* d, size_t n, const PngHeader& h) {
  bool palette = false, data = false;
  for (size_t p = 8;;) {
    if (n - p < 12) {
      return p == n ? std::string("truncated: no IEND chunk after byte ") + std::to_string(p)
                    : "truncated: the data ends inside a chunk header at byte " + std::to_string(p);
    }
    const uint32_t len = Be32(d + p);
    const std::string name = ChunkName(d + p + 4);
    if (len > 0x7fffffffu || n - p - 12 < len) {
      return "truncated: chunk " + name + " at byte " + std::to_string(p) + " of " +
             std::to_string(len) + " bytes ends past the data's " + std::to_string(n);
    }
    const uint32_t crc = static_cast<uint32_t>(crc32(crc32(0, nullptr, 0), d + p + 4, len + 4));
    if (crc != Be32(d + p + 8 + len)) {
      return "a damaged PNG: chunk " + name + " at byte " + std::to_string(p) + " fails its CRC";
    }
    if (name == "IEND") break;
    if (name == "PLTE") palette = true;
    if (name == "IDAT") {
      if (h.color_type == 3 && !palette) return "a palette PNG without a PLTE chunk before IDAT";
      data = true;
    }
    p += 12 + size_t{len};
  }
  if (!data) return "a PNG without image data (no IDAT chunk)";
  return "";
}

std::string CheckPng(const uint8_t* d, size_t n, uint32_t max_side, ImageHeader* info) {
  PngHeader h;
  info->codec = ImageCodec::kPng;
  // The header's own checks, but for the side, which is named as the converter's option.
  if (std::string why = ReadPngHeader(d, n, 0x7fffffffu, &h); !why.empty()) return why;
  info->width = h.width;
  info->height = h.height;
  if (h.width > max_side || h.height > max_side) return TooLarge(*info, max_side);
  if (std::string why = CheckPngChunks(d, n, h); !why.empty()) return why;
  ImageHeader read;
  ReadImageHeader(d, n, max_side, &read);
  info->kind = read.kind;
  return "";
}

std::string CheckWebp(const uint8_t* d, size_t n, uint32_t max_side, ImageHeader* info) {
  WebpHeader h;
  info->codec = ImageCodec::kWebp;
  if (std::string why = ReadWebpHeader(d, n, 0x7fffffffu, &h); !why.empty()) return why;
  info->width = h.width;
  info->height = h.height;
  if (h.width > max_side || h.height > max_side) return TooLarge(*info, max_side);
  // The RIFF chunks: each whole (padded to an even size) within the RIFF size.
  const size_t end = size_t{Le32(d + 4)} + 8;
  for (size_t p = 12; p < end;) {
    if (end - p < 8) return "truncated: a RIFF chunk header at byte " + std::to_string(p);
    const size_t len = Le32(d + p + 4);
    if (end - p - 8 < len) {
      return "truncated: RIFF chunk " + ChunkName(d + p) + " at byte " + std::to_string(p) +
             " of " + std::to_string(len) + " bytes ends past the RIFF size " + std::to_string(end);
    }
    p += 8 + len + (len & 1);
  }
  info->kind = h.lossless ? "lossless" : "lossy";
  if (h.alpha) info->kind += " with alpha";
  return "";
}

}  // namespace

std::string CheckImage(const uint8_t* d, size_t n, uint32_t max_side, ImageHeader* info) {
  *info = ImageHeader();
  if (n == 0) return "an empty file, not an image";
  // A file that starts as a JPEG does (ff d8, or its first byte alone) is read as one, so that a
  // truncated JPEG is named so.
  if (d[0] == 0xff && (n < 2 || d[1] == 0xd8)) return CheckJpeg(d, n, max_side, info);
  switch (SniffImageCodec(d, n)) {
    case ImageCodec::kPng:
      if (std::string why = CheckPng(d, n, max_side, info); !why.empty()) return "PNG: " + why;
      return "";
    case ImageCodec::kWebp:
      if (std::string why = CheckWebp(d, n, max_side, info); !why.empty()) return "WebP: " + why;
      return "";
    default:
      break;
  }
  ImageHeader unknown;
  std::string why = ReadImageHeader(d, n, max_side, &unknown);
  // "GIF data: JPEG, PNG and WebP are decoded" is the loader's phrase; here they are stored.
  const std::string decoded = "are decoded";
  if (why.size() > decoded.size() &&
      why.compare(why.size() - decoded.size(), decoded.size(), decoded) == 0) {
    why.replace(why.size() - decoded.size(), decoded.size(), "are stored");
  }
  return why;
}

}  // namespace rf::convert
