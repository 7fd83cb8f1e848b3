#include "tools/convert/jpeg_check.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "decode/jpeg_errors.h"

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
  uint32_t precision = 0;
};

// The file's markers up to its first scan, and its end-of-image marker: "" or the first
// problem of structure found (no JPEG, truncated, two frame headers, ...), *frame and *info
// holding the frame header where one was read before it.
std::string ScanJpeg(const uint8_t* d, size_t n, Frame* frame, JpegInfo* info) {
  static const uint8_t kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n >= sizeof kPng && std::memcmp(d, kPng, sizeof kPng) == 0) return "PNG data, not a JPEG";
  if (n == 0) return "an empty file, not a JPEG";
  // "ff d8", or as much of it as the file holds, then too few bytes for anything after it.
  const bool starts = d[0] == 0xff && (n < 2 || d[1] == 0xd8);
  if (starts && n < 4) {
    return "truncated: " + std::to_string(n) + (n == 1 ? " byte" : " bytes") +
           ", where a JPEG needs its markers (ff d8, a frame header, a scan, ff d9)";
  }
  if (!starts) {
    char b[96];
    if (n == 1) {
      std::snprintf(b, sizeof b, "not a JPEG (its one byte is %02x, not ff d8)", d[0]);
    } else {
      std::snprintf(b, sizeof b, "not a JPEG (it starts with bytes %02x %02x, not ff d8)", d[0],
                    d[1]);
    }
    return b;
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
      info->components = d[p + 7];
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

std::string FrameSize(const JpegInfo& info) {
  return std::to_string(info.width) + "x" + std::to_string(info.height);
}

// A frame header stored as it is: "" or why not.
std::string CheckStoredFrame(const Frame& f, const JpegInfo& info, uint32_t max_side) {
  if (f.marker != 0xc0)
    return std::string(SofName(f.marker)) + ": only baseline JPEGs (SOF0) are stored";
  if (f.precision != 8)
    return std::to_string(f.precision) + "-bit samples: only 8-bit JPEGs are stored";
  if (info.width == 0 || info.height == 0)
    return "a frame header of " + FrameSize(info) + " pixels";
  if (info.width > max_side || info.height > max_side)
    return FrameSize(info) + " pixels, more than --max-image-side " + std::to_string(max_side) +
           " a side";
  if (info.components == 4) return "a CMYK JPEG: only grey and YCbCr JPEGs are stored";
  if (info.components != 1 && info.components != 3)
    return std::to_string(info.components) +
           " components: only grey (1) and YCbCr (3) JPEGs are stored";
  return "";
}

// A frame header a re-encode decodes: "" or why not.
std::string CheckReencodedFrame(const Frame& f, const JpegInfo& info) {
  if (!Decodable(f.marker))
    return std::string(SofName(f.marker)) + ": libjpeg-turbo does not decode it";
  if (f.precision != 8)
    return std::to_string(f.precision) + "-bit samples: only 8-bit JPEGs are stored or converted";
  if (info.width == 0 || info.height == 0)
    return "a frame header of " + FrameSize(info) + " pixels";
  if (info.components != 1 && info.components != 3 && info.components != 4)
    return std::to_string(info.components) +
           " components: only grey (1), colour (3) and CMYK (4) JPEGs are converted";
  return "";
}

// libjpeg-turbo's own reading of the header (jpeg_read_header, through the decoders' error
// manager: decode/jpeg_errors.h), what it would decode, without decoding: "" and *space (the
// JPEG's colour space), or why it cannot.
std::string LibjpegHeader(const uint8_t* data, size_t n, J_COLOR_SPACE* space) {
  JpegDecompressor d;
  if (!d.Create()) return std::string("libjpeg-turbo could not start: ") + d.errors.message;
  if (setjmp(d.errors.jump) != 0)
    return std::string("libjpeg-turbo cannot read its header: ") + d.errors.message;
  jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(n));
  jpeg_read_header(&d.cinfo, TRUE);
  *space = d.cinfo.jpeg_color_space;
  return "";
}

bool IsCmyk(J_COLOR_SPACE space) { return space == JCS_CMYK || space == JCS_YCCK; }

}  // namespace

// Each check reports a bad frame header before a problem of structure after it, as a reader
// meets them.
std::string CheckJpeg(const uint8_t* d, size_t n, uint32_t max_side, JpegInfo* info) {
  Frame frame;
  const std::string structure = ScanJpeg(d, n, &frame, info);
  if (frame.found) {
    if (std::string why = CheckStoredFrame(frame, *info, max_side); !why.empty()) return why;
  }
  if (!structure.empty()) return structure;
  J_COLOR_SPACE space = JCS_UNKNOWN;
  if (std::string why = LibjpegHeader(d, n, &space); !why.empty()) return why;
  if (IsCmyk(space)) return "a CMYK JPEG: only grey and YCbCr JPEGs are stored";
  return "";
}

std::string CheckJpegToReencode(const uint8_t* d, size_t n, JpegInfo* info) {
  Frame frame;
  info->convert.clear();
  const std::string structure = ScanJpeg(d, n, &frame, info);
  if (frame.found) {
    if (std::string why = CheckReencodedFrame(frame, *info); !why.empty()) return why;
  }
  if (!structure.empty()) return structure;
  J_COLOR_SPACE space = JCS_UNKNOWN;
  if (std::string why = LibjpegHeader(d, n, &space); !why.empty()) return why;
  if (frame.marker != 0xc0) info->convert = SofName(frame.marker);
  if (IsCmyk(space)) {
    const char* kind = space == JCS_CMYK ? "CMYK" : "CMYK (YCCK)";
    info->convert =
        info->convert.empty() ? std::string("a ") + kind + " JPEG" : info->convert + ", " + kind;
  }
  return "";
}

}  // namespace rf::convert
