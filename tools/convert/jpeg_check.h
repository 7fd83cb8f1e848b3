// Which files `ringfeed-convert images` stores as they are, which it re-encodes, and which it
// refuses (tools/convert/image_converter.h), from each file's structure and header alone.
//
// Stored as it is (CheckJpeg; the default): a JPEG the decoders of records take without
// conversion: baseline (SOF0), 8 bits, 1 (grey) or 3 (YCbCr) components, at most
// --max-image-side pixels a side, with an end-of-image marker after its first scan.
//
// Re-encoded (CheckJpegToReencode; under --max-side): any JPEG libjpeg-turbo decodes at 8 bits
// (decode/jpeg_reencode.h): baseline (SOF0), extended sequential (SOF1), progressive (SOF2) or
// arithmetic-coded (SOF9, SOF10), 1, 3 or 4 (CMYK, YCCK) components, of any size (JPEG's own
// limit), with an end-of-image marker after its first scan. Of those, what is not a JPEG the
// decoders take as it is (all but a baseline grey or YCbCr JPEG) is named in JpegInfo::convert:
// re-encoded whatever its size. Refused either way: data that is no JPEG (PNG, GIF, ...), a
// lossless or hierarchical JPEG, 12-bit (or other non-8-bit) samples, 2 or more than 4
// components, a truncated file.
//
// What is checked is the file's structure and header (libjpeg-turbo's jpeg_read_header reads it
// too), not the entropy-coded data: a stored file damaged inside its scan converts, and its
// decode will fail at read time (that is decided by the reader, issue 25); a re-encoded one
// fails its decode in the converter. A truncated file has no end-of-image marker and is refused.
// Nothing is allocated for the image: the checks allocate nothing of its size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "decode/jpeg_image.h"  // kDefaultMaxImageSide: CheckJpeg's default side too

namespace rf::convert {

// What a check found of an image it accepted.
struct JpegInfo {
  uint32_t width = 0, height = 0;
  uint32_t components = 0;
  // CheckJpegToReencode: what the image is that the decoders do not take as it is ("a
  // progressive JPEG (SOF2)", "a CMYK JPEG", "a CMYK (YCCK) JPEG", "a progressive JPEG (SOF2),
  // CMYK"); "" for a baseline grey or YCbCr JPEG (and always "" from CheckJpeg).
  std::string convert;
};

// "" where `data` is a JPEG stored as it is (above), else why not, one phrase ("PNG data, not a
// JPEG", "a progressive JPEG (SOF2): only baseline JPEGs (SOF0) are stored", "65535x65535
// pixels, more than --max-image-side 16384 a side", "truncated: no end-of-image marker after
// the scan"). The dimensions are checked from the frame header before anything is allocated.
std::string CheckJpeg(const uint8_t* data, size_t n, uint32_t max_side, JpegInfo* info);

// "" where `data` is a JPEG a re-encode takes (above), info->convert saying whether it must be
// converted; else why not, one phrase ("PNG data, not a JPEG", "12-bit samples: only 8-bit JPEGs
// are stored or converted", "a lossless JPEG (SOF3): libjpeg-turbo does not decode it").
std::string CheckJpegToReencode(const uint8_t* data, size_t n, JpegInfo* info);

}  // namespace rf::convert
