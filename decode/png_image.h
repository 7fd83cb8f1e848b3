// One PNG record to the pixels a model takes, on the host: libpng (Debian's libpng16) decodes the
// rows the crop reads, then decode/image_spec.h's CropWriter writes the crop. decode/
// image_record.h's decoder holds one.
//
// What is decoded: every PNG of the standard (PNG 1.2, ISO/IEC 15948): grey, grey with alpha,
// RGB, RGBA and palette images, of 1, 2, 4, 8 and 16 bits, interlaced (Adam7) or not. They become
// what PIL's Image.convert("RGB") makes of them (a spec of 3 channels), or Image.convert("RGBA")
// (4: the alpha kept), which is what torchvision's transforms see:
//   - a palette image its palette's colours (a tRNS chunk's transparency applied as alpha under
//     4 channels, not applied under 3);
//   - grey of 1, 2 or 4 bits scaled to 0..255 (x 255, 85, 17); grey stays one channel, written
//     as 3 equal ones (as a grey JPEG); grey with alpha (or a grey tRNS, under 4 channels)
//     becomes RGBA;
//   - 16-bit samples their high byte (libpng's png_set_strip_16; PIL's "RGB;16B");
//   - alpha dropped under 3 channels (the colour as stored, not blended with any background),
//     kept as stored (straight, not premultiplied) under 4; a tRNS colour of an RGB or grey image
//     is alpha 0 under 4; an image without alpha is opaque (255);
//   - gamma (gAMA), colour profiles (iCCP, sRGB, cHRM) and text are not applied or read.
//
// Per image:
//   1. the header (ReadPngHeader): the 8-byte signature, then the IHDR chunk, read from the bytes
//      themselves: no IHDR first, a side of 0 or above max_side, a bit depth and colour type the
//      standard does not pair, an unknown compression, filter or interlace method is refused
//      here, before anything is allocated for it;
//   2. the crop (CropWriter::Plan, the image's own scale);
//   3. the decode (ReadPngRows): a non-interlaced image's rows from the first to the crop's last,
//      keeping only the crop's (the rows above it are inflated and unfiltered one by one through a
//      single row's buffer; the rows below it are not read); an interlaced image's every row (its
//      seven passes each span the image);
//   4. the crop's resample into the output.
// A decode libpng fails (a chunk's CRC, a zlib stream that is damaged or ends early, data that
// ends before the rows read) is a bad record: Decode returns why. As with a JPEG, damage is found
// where the decode reads: below the crop's last row of a non-interlaced image it is not.
//
// Memory: the rows kept grow to the largest region met and are reused; libpng's own per image
// (a row, zlib's window; ancillary chunks are skipped unread). Thread safety: none; one decoder a
// thread (libpng's structures are made per image).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/image_spec.h"

namespace rf {

// The 8 bytes every PNG starts with.
inline constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

// What a PNG's IHDR says, read without decoding (ReadPngHeader).
struct PngHeader {
  uint32_t width = 0, height = 0;
  uint8_t bit_depth = 0;
  uint8_t color_type = 0;  // 0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGBA
  bool interlaced = false;
  // The channels a decode gives with the alpha dropped: 1 (grey, grey + alpha) or 3.
  uint32_t channels() const { return color_type == 0 || color_type == 4 ? 1 : 3; }
};

// "grey", "RGB", "palette", "grey + alpha", "RGBA" for PNG colour type t; "unknown" for others.
const char* PngColorTypeName(uint8_t t);

// "" and *h set, or why the bytes are no PNG whose header is good ("no PNG signature", "no IHDR
// chunk first", "an IHDR of 70000x70000 pixels, more than max_image_side 16384 a side", "bit
// depth 16 with colour type 3 (palette): no such PNG", ...). Reads 33 bytes: allocates nothing.
std::string ReadPngHeader(const uint8_t* data, size_t n, uint32_t max_side, PngHeader* h);

// Decodes rows [row_lo, row_hi) (row_lo < row_hi <= h.height) of the PNG at data[0, n), whose
// header ReadPngHeader read as `h`, into *rows (grown as needed): row r at (r - row_lo) *
// h.width * C, C bytes a pixel: h.channels() with the alpha dropped; with keep_alpha, 4 (RGBA)
// for an image with alpha (its colour type's, or a tRNS chunk's), else h.channels(). *channels,
// where given, is set to C. "" or why libpng failed ("libpng: IDAT: incorrect data check",
// "libpng: the data ends at byte 1234, inside chunk IDAT", ...).
std::string ReadPngRows(const uint8_t* data, size_t n, const PngHeader& h, uint32_t row_lo,
                        uint32_t row_hi, std::vector<uint8_t>* rows, bool keep_alpha = false,
                        uint32_t* channels = nullptr);

class PngImageDecoder {
 public:
  // Usage where the spec cannot be decoded (ImageDecodeSpec::Validate).
  static Result<std::unique_ptr<PngImageDecoder>> Create(const ImageDecodeSpec& spec);

  // Decodes the PNG at data[0, n) as sample `index` of `epoch` into `out`
  // (spec.OutputSampleBytes(), aligned to its element). "" on success, else why the record is
  // bad (out is then partly written or not at all).
  std::string Decode(const uint8_t* data, size_t n, uint64_t epoch, uint64_t index, void* out);

 private:
  explicit PngImageDecoder(const ImageDecodeSpec& spec) : spec_(spec), writer_(spec) {}

  ImageDecodeSpec spec_;
  std::vector<uint8_t> rows_;  // the decoded rows the crop reads
  CropWriter writer_;
};

}  // namespace rf
