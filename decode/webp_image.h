// One WebP record to the pixels a model takes, on the host: libwebp (Debian's) decodes the region
// the crop reads, then decode/image_spec.h's CropWriter writes the crop. decode/image_record.h's
// decoder holds one.
//
// What is decoded: still WebP images, lossy (VP8) and lossless (VP8L), with or without alpha
// (VP8X's extended header); the alpha is dropped, as PIL's Image.convert("RGB") drops it, under a
// spec of 3 channels, and kept as stored (straight) under 4, an image without alpha opaque (255).
// An animated WebP is refused (its frames are not one image). Colour profiles are not applied.
//
// Per image:
//   1. the header (ReadWebpHeader): the RIFF container's signature and size, then libwebp's
//      WebPGetFeatures (the bitstream's or the VP8X canvas's size, alpha, animation): no
//      "RIFF....WEBP", a RIFF size past the data, a side above max_side, an animation is refused
//      here, before anything is allocated for it;
//   2. the crop (CropWriter::Plan, the image's own scale);
//   3. the decode of the crop's rows and columns, widened by kWebpMargin pixels on each side
//      within the image (libwebp's cropping: a lossy image's fancy chroma upsampling treats the
//      region's edges as the image's, so the pixels the resample reads are the full decode's only
//      away from them) into the decoder's buffer as RGB, or RGBA where the alpha is kept (libwebp
//      writes it: external memory);
//   4. the crop's resample into the output.
// A decode libwebp fails (a damaged or truncated bitstream) is a bad record: Decode returns why,
// with libwebp's status.
//
// Memory: the region's buffer grows to the largest region met and is reused; libwebp's own per
// image: a lossy image's few macroblock rows, a lossless image's whole decode at 4 bytes a pixel
// (1 GiB at the default max_image_side of 16384). Thread safety: none; one decoder a thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/image_spec.h"

namespace rf {

// The pixels a region's decode adds on each side of the crop's (within the image).
inline constexpr uint32_t kWebpMargin = 8;

// What a WebP's headers say, read without decoding (ReadWebpHeader).
struct WebpHeader {
  uint32_t width = 0, height = 0;
  bool alpha = false;
  bool lossless = false;  // VP8L (false: VP8, or a VP8X whose image is either)
};

// "" and *h set, or why the bytes are no still WebP whose header is good ("no RIFF WEBP
// signature", "a RIFF size of 5000000 bytes, past the data's 1234", "an animated WebP: only still
// images are decoded", "a canvas of 16383x16383 pixels, more than max_image_side 4096 a side",
// "libwebp: its header is not a WebP's (VP8_STATUS_BITSTREAM_ERROR)"). Allocates nothing.
std::string ReadWebpHeader(const uint8_t* data, size_t n, uint32_t max_side, WebpHeader* h);

// Decodes the region rows [row_lo, row_hi), columns [col_lo, col_hi) (within the image) of the
// WebP at data[0, n), whose header ReadWebpHeader read as `h`, as RGB (or, with `channels` 4,
// RGBA) into *pixels (grown as needed), *pitch bytes a row; libwebp's cropping takes even starts,
// so the region's first row and column, *row0 <= row_lo and *col0 <= col_lo, may be one before.
// "" or why libwebp failed.
std::string ReadWebpRegion(const uint8_t* data, size_t n, const WebpHeader& h, uint32_t row_lo,
                           uint32_t row_hi, uint32_t col_lo, uint32_t col_hi,
                           std::vector<uint8_t>* pixels, uint32_t* row0, uint32_t* col0,
                           size_t* pitch, uint32_t channels = 3);

class WebpImageDecoder {
 public:
  // Usage where the spec cannot be decoded (ImageDecodeSpec::Validate).
  static Result<std::unique_ptr<WebpImageDecoder>> Create(const ImageDecodeSpec& spec);

  // Decodes the WebP at data[0, n) as sample `index` of `epoch` into `out`
  // (spec.OutputSampleBytes(), aligned to its element). "" on success, else why the record is
  // bad (out is then partly written or not at all).
  std::string Decode(const uint8_t* data, size_t n, uint64_t epoch, uint64_t index, void* out);

 private:
  explicit WebpImageDecoder(const ImageDecodeSpec& spec) : spec_(spec), writer_(spec) {}

  ImageDecodeSpec spec_;
  std::vector<uint8_t> pixels_;  // the decoded region
  CropWriter writer_;
};

}  // namespace rf
