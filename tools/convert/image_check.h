// Which files `ringfeed-convert images` stores as they are, which it re-encodes, and which it
// refuses (tools/convert/image_converter.h), from each file's structure and header alone.
//
// Stored as it is (CheckImage): an image the decoders of records take (decode/image_record.h), at
// most --max-image-side pixels a side (under --max-side, any size: those above it are re-encoded):
//   JPEG  every kind libjpeg-turbo decodes at 8 bits: baseline (SOF0), extended (SOF1),
//         progressive (SOF2), arithmetic-coded (SOF9, SOF10); 1 (grey), 3 (YCbCr, RGB) or 4
//         (CMYK, YCCK) components; one frame header, and an end-of-image marker after its first
//         scan; a header libjpeg-turbo reads (jpeg_read_header);
//   PNG   a good IHDR first (decode/png_image.h's ReadPngHeader), then whole chunks to an IEND,
//         each one's CRC right, a palette (PLTE) before the data of a palette image, image data
//         (IDAT);
//   WebP  a still image whose RIFF size lies within the file and whose headers libwebp reads
//         (decode/webp_image.h's ReadWebpHeader), its chunks whole within the RIFF size.
// Refused: an empty file, data of no codec above (GIF, BMP, TIFF, ...), a lossless or
// hierarchical JPEG, 12-bit samples, a truncated file, an animated WebP, a damaged PNG chunk.
//
// What is checked is each file's structure and header, not its compressed data: a stored file
// damaged inside its entropy-coded data (a JPEG's scan, a PNG's zlib stream under a right CRC, a
// WebP's bitstream) converts, and its decode fails at read time, where the loader names it
// (skip_bad_records leaves it out); a re-encoded one fails its decode in the converter. Nothing is
// allocated for the image: the checks allocate nothing of its size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "decode/image_record.h"  // ImageCodec, ImageHeader
#include "decode/image_spec.h"    // kDefaultMaxImageSide: CheckImage's default side too

namespace rf::convert {

// "" where `data` is an image stored as it is (above) with both sides within max_side, *info its
// header (codec, size, kind); else why not, one phrase ("an empty file, not an image", "GIF data:
// JPEG, PNG and WebP are stored", "a lossless JPEG (SOF3): libjpeg-turbo does not decode it",
// "65535x65535 pixels, more than --max-image-side 16384 a side", "truncated: no end-of-image
// marker after the scan", "a damaged PNG: chunk IDAT at byte 57 fails its CRC"). The dimensions
// are checked from the header before anything is allocated.
std::string CheckImage(const uint8_t* data, size_t n, uint32_t max_side, ImageHeader* info);

}  // namespace rf::convert
