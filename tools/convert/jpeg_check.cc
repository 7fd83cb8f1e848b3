#include "tools/convert/jpeg_check.h"

#include <turbojpeg.h>

#include <cstdio>
#include <cstring>

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
    default:
      return "an arithmetic-coded JPEG";
  }
}

bool IsSof(uint8_t m) { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc; }

// libjpeg-turbo's own reading of the header: what it would decode, without decoding.
std::string TurboHeader(const uint8_t* data, size_t n) {
  tjhandle tj = tjInitDecompress();
  if (tj == nullptr) return "libjpeg-turbo could not start";
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  std::string why;
  if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(n), &w, &h, &subsamp, &colorspace) !=
      0) {
    why = std::string("libjpeg-turbo cannot read its header: ") + tjGetErrorStr2(tj);
  } else if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    why = "a CMYK JPEG: only grey and YCbCr JPEGs are stored";
  }
  tjDestroy(tj);
  return why;
}

}  // namespace

std::string CheckJpeg(const uint8_t* d, size_t n, uint32_t max_side, JpegInfo* info) {
  static const uint8_t kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n >= sizeof kPng && std::memcmp(d, kPng, sizeof kPng) == 0) return "PNG data, not a JPEG";
  if (n == 0) return "an empty file, not a JPEG";
  if (n < 4 || d[0] != 0xff || d[1] != 0xd8) {
    char b[96];
    std::snprintf(b, sizeof b, "not a JPEG (it starts with bytes %02x %02x, not ff d8)", d[0],
                  n > 1 ? d[1] : 0);
    return b;
  }
  size_t p = 2;
  bool have_sof = false;
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
      if (have_sof) return "two frame headers";
      have_sof = true;
      if (len < 8) return "a frame header too short";
      const uint32_t precision = d[p + 2];
      info->height = Be16(d + p + 3);
      info->width = Be16(d + p + 5);
      info->components = d[p + 7];
      if (m != 0xc0) return std::string(SofName(m)) + ": only baseline JPEGs (SOF0) are stored";
      if (precision != 8)
        return std::to_string(precision) + "-bit samples: only 8-bit JPEGs are stored";
      if (info->width == 0 || info->height == 0)
        return "a frame header of " + std::to_string(info->width) + "x" +
               std::to_string(info->height) + " pixels";
      if (info->width > max_side || info->height > max_side)
        return std::to_string(info->width) + "x" + std::to_string(info->height) +
               " pixels, more than --max-image-side " + std::to_string(max_side) + " a side";
      if (info->components == 4) return "a CMYK JPEG: only grey and YCbCr JPEGs are stored";
      if (info->components != 1 && info->components != 3)
        return std::to_string(info->components) +
               " components: only grey (1) and YCbCr (3) JPEGs are stored";
    }
    if (m == 0xda) {
      if (!have_sof) return "a scan before the frame header";
      sos = p + len;
    }
    p += len;
  }
  // The entropy-coded data stuffs every 0xff as ff 00 (or is an ff d0-d7 restart marker), so
  // ff d9 after the first scan's header is the end-of-image marker (trailing bytes allowed).
  bool eoi = false;
  for (size_t i = n - 1; i > sos && !eoi; --i) eoi = d[i] == 0xd9 && d[i - 1] == 0xff;
  if (!eoi) return "truncated: no end-of-image marker after the scan";
  return TurboHeader(d, n);
}

}  // namespace rf::convert
