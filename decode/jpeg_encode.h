// Pixels to a baseline JPEG, through libjpeg-turbo's libjpeg API (the one the decoders use) and
// the project's own error manager (decode/jpeg_errors.h): what ringfeed-convert images stores
// for an image it re-encodes (decode/jpeg_reencode.h).
//
// The JPEG: baseline (SOF0), 8 bits, a JFIF header and nothing else (no EXIF, no ICC profile),
// colour as YCbCr 4:2:0 (libjpeg's defaults for RGB input), grey as one component; the
// quantization tables libjpeg's jpeg_set_quality makes of `quality` (1 to 100, forced to 8-bit
// tables: baseline), the accurate integer DCT, Huffman tables optimized for the image (smaller
// records for the reader; libjpeg-turbo's two-pass encode). The bytes are a function of the
// pixels, the quality and libjpeg-turbo's version alone: no time, no random.
//
// Memory: the output vector is the caller's (grown as libjpeg writes); libjpeg's own working
// memory (with optimized Huffman, a coefficient buffer of the image: 2 bytes a sample) is freed
// after each image. Thread safety: none; one encoder a thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace rf {

class JpegEncoder {
 public:
  // An encoder, its libjpeg compressor made (Unsupported where libjpeg-turbo cannot make one).
  static Result<std::unique_ptr<JpegEncoder>> Create();
  ~JpegEncoder();
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // Encodes the height x width image at `pixels` (rows of `pitch` bytes: `channels` 1, grey, or
  // 3, interleaved RGB) at `quality` (1 to 100) into *out (replacing what it held). "" on
  // success, else why (libjpeg-turbo's message; *out then holds nothing of use).
  std::string Encode(const uint8_t* pixels, size_t pitch, uint32_t height, uint32_t width,
                     uint32_t channels, int quality, std::vector<uint8_t>* out);

 private:
  JpegEncoder();
  // libjpeg's compressor and error manager (jpeg_encode.cc): created with the encoder,
  // destroyed with it; its one owner.
  struct Libjpeg;
  std::unique_ptr<Libjpeg> jpeg_;
};

}  // namespace rf
