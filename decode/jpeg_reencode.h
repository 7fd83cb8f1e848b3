// An image decoded whole, resized and encoded again as a baseline JPEG: what `ringfeed-convert
// images --max-side N --quality Q` stores for an image larger than N a side (tools/convert/
// image_pipeline.h). A JPEG is decoded here (below); a PNG or WebP by its own decoder
// (decode/png_image.h, webp_image.h), its pixels handed to ReencodePixels.
//
// Per image:
//   1. libjpeg-turbo (its libjpeg API, the error manager of decode/jpeg_errors.h) reads the
//      header: any JPEG it decodes at 8 bits (baseline, extended, progressive or
//      arithmetic-coded; grey, YCbCr, RGB, CMYK or YCCK);
//   2. the decode, whole, at the coarsest DCT scale (1/8, 1/4, 1/2 or 1) that leaves both
//      sides at least the target's (libjpeg-turbo's scaled inverse DCT: a quarter of the work
//      or less where the image is twice the target or more, as PIL's draft mode); as RGB, grey
//      as grey; CMYK and YCCK as CMYK, then RGB by r = c k / 255 (Adobe's inverted inks, where
//      the file has an Adobe marker, as Photoshop writes them; else r = (255 - c)(255 - k) / 255:
//      PIL's and libvips' rule). A decode that libjpeg-turbo fails or warns about (corrupt or
//      truncated data) fails the image: the message says why;
//   3. the resize to the target, through decode/image_resample.h's filter (the triangle filter
//      widened by the downscale factor: every source pixel under an output pixel is averaged,
//      antialiased), the image's whole extent onto the target's; none where the decoded size is
//      the target's already;
//   4. the encode (decode/jpeg_encode.h): baseline, YCbCr 4:2:0 (grey stays grey), at the
//      quality asked, optimized Huffman tables.
// The output is a function of the input bytes, the target and the quality (and libjpeg-turbo's
// version): the resize's arithmetic is the same bits on every x86-64 (image_resample.h).
//
// Memory: an image whose decode needs more than kMaxReencodeDecodeBytes (its pixels at the DCT
// scale, and for a progressive JPEG libjpeg's coefficients, 2 bytes a sample at full size) is
// refused before it is decoded; libjpeg's own allocations are capped there too
// (max_memory_to_use). The buffers grow to the largest image met and are given back after an
// image that took more than 64 MiB. Thread safety: none; one re-encoder a thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/image_resample.h"
#include "decode/image_spec.h"
#include "decode/jpeg_encode.h"

namespace rf {

struct JpegDecompressor;  // decode/jpeg_errors.h

// The most memory one image's decode may take (decode/image_spec.h's).
inline constexpr uint64_t kMaxReencodeDecodeBytes = kMaxImageDecodeBytes;

struct ImageSize {
  uint32_t height = 0, width = 0;
  bool operator==(const ImageSize&) const = default;
};

// The size an image of height x width is stored at under a longest side of max_side (> 0): its
// own where both sides are within it; else its longer side max_side and its shorter side scaled
// by the same factor, rounded to nearest (halves up), at least 1.
ImageSize FitWithin(uint32_t height, uint32_t width, uint32_t max_side);

class JpegReencoder {
 public:
  // One re-encoder: its libjpeg decompressor and its encoder made (Unsupported where
  // libjpeg-turbo cannot make them).
  static Result<std::unique_ptr<JpegReencoder>> Create();
  ~JpegReencoder();
  JpegReencoder(const JpegReencoder&) = delete;
  JpegReencoder& operator=(const JpegReencoder&) = delete;

  // The JPEG at data[0, n) resized to `size` (a size no larger than the image's own, both
  // ways; FitWithin's) and encoded at `quality` (1 to 100) into *out. "" on success, else why
  // the image cannot be re-encoded (libjpeg-turbo's message, or the memory it would take).
  std::string Reencode(const uint8_t* data, size_t n, ImageSize size, int quality,
                       std::vector<uint8_t>* out);

  // Decoded pixels (decoded.height rows of decoded.width pixels of `channels`: 1 grey, 3 RGB,
  // back to back: a PNG's or WebP's whole decode) resized to `size` (no larger) and encoded as
  // Reencode encodes. "" or why not.
  std::string ReencodePixels(const uint8_t* pixels, ImageSize decoded, uint32_t channels,
                             ImageSize size, int quality, std::vector<uint8_t>* out);

  // The DCT scale denominator the last Reencode decoded at (1, 2, 4 or 8; 0 before any): for
  // tests.
  uint32_t last_scale() const { return last_scale_; }

 private:
  JpegReencoder() = default;
  // Decodes data[0, n) whole at the coarsest DCT scale that keeps `size` into pixels_ as RGB
  // (or grey): *decoded its size, *channels 1 or 3. "" or why not.
  std::string Decode(const uint8_t* data, size_t n, ImageSize size, ImageSize* decoded,
                     uint32_t* channels);

  // `pixels` (decoded, `channels` a pixel) resized to `size` from their whole extent, full_h x
  // full_w source pixels (the decoded size, or a DCT-scaled JPEG's full size over its scale), then
  // encoded into *out.
  std::string ResizeAndEncode(const uint8_t* pixels, ImageSize decoded, double full_h,
                              double full_w, uint32_t channels, ImageSize size, int quality,
                              std::vector<uint8_t>* out);

  // libjpeg's decompressor and error manager (decode/jpeg_errors.h): created with the
  // re-encoder, destroyed with it; its one owner.
  std::unique_ptr<JpegDecompressor> jpeg_;
  std::unique_ptr<JpegEncoder> encoder_;
  std::vector<uint8_t> pixels_;   // the decoded image
  std::vector<uint8_t> resized_;  // the resized one
  decode::ResampleScratch scratch_;
  uint32_t last_scale_ = 0;
};

}  // namespace rf
