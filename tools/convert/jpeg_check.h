// Which files `ringfeed-convert images` stores (tools/convert/image_converter.h).
//
// Every image must be a JPEG the decoders take without conversion (CheckJpeg): baseline
// (SOF0), 8 bits, 1 (grey) or 3 (YCbCr) components, at most --max-image-side pixels a side,
// with an end-of-image marker after its first scan. What is checked is the file's structure
// and header (libjpeg-turbo's tjDecompressHeader3 reads it too), not the entropy-coded data: a
// file damaged inside its scan converts, and its decode will fail at read time (that is decided
// by the reader, issue 25). A truncated file has no end-of-image marker and is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rf::convert {

// What CheckJpeg found of an image it accepted.
struct JpegInfo {
  uint32_t width = 0, height = 0;
  uint32_t components = 0;
};

// The largest image side CheckJpeg takes by default (--max-image-side): 16384 pixels, 805 MB as
// 8-bit RGB, which a decoder must allocate; JPEG's own limit is 65535.
inline constexpr uint32_t kDefaultMaxImageSide = 16384;

// "" where `data` is a JPEG as the header comment says, else why not, one phrase ("PNG data, not
// a JPEG", "a progressive JPEG (SOF2): only baseline JPEGs are stored", "65535x65535 pixels, more
// than --max-image-side 16384 a side", "truncated: no end-of-image marker after the scan"). The
// dimensions are checked from the frame header before anything is allocated for the image.
std::string CheckJpeg(const uint8_t* data, size_t n, uint32_t max_side, JpegInfo* info);

}  // namespace rf::convert
