// An image record of any codec the decoders take, to the pixels a model takes, on the host: the
// record's codec is known by its first bytes (SniffImageCodec), its header read by that codec's
// reader (ReadImageHeader: nothing allocated for the image before its size is checked), and its
// crop decoded by that codec's decoder:
//
//   JPEG  ff d8 ff            decode/jpeg_image.h  (libjpeg-turbo: baseline, progressive, CMYK)
//   PNG   89 P N G \r \n 1a \n  decode/png_image.h   (libpng)
//   WebP  RIFF .... WEBP      decode/webp_image.h  (libwebp: lossy and lossless, still)
//
// Every codec gives the same crop (CropWriter: keyed by seed, epoch and sample index) in the same
// dtype and layout, so a dataset may mix them: the media type of a dataset's header
// (io/format.h's HoldsImageRecords) says which it holds, the bytes which each record is.
//
// The CPU image decoder (pipeline/images/cpu_image_decoder.cc) runs one ImageRecordDecoder a
// worker thread; ringfeed-convert reads the same headers to decide what it stores.
//
// Memory: each codec's decoder keeps its buffers, grown to the largest image of its codec met.
// Thread safety: none; one decoder a thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "decode/image_spec.h"

namespace rf {

class JpegImageDecoder;
class PngImageDecoder;
class WebpImageDecoder;

enum class ImageCodec : uint8_t { kUnknown, kJpeg, kPng, kWebp };

// "JPEG", "PNG", "WebP"; "unknown".
const char* ImageCodecName(ImageCodec c);
// The codec of the record data[0, n) by its first bytes; kUnknown where they are none of the
// three.
ImageCodec SniffImageCodec(const uint8_t* data, size_t n);

// What a record's header says.
struct ImageHeader {
  ImageCodec codec = ImageCodec::kUnknown;
  uint32_t width = 0, height = 0;
  // The header's kind, for messages and the converter's report: "baseline", "progressive",
  // "CMYK progressive", "palette", "16-bit RGBA interlaced", "lossless with alpha", ...
  std::string kind;
};

// "" and *h set, or why data[0, n) is not an image record the decoders take: its codec's header
// reader's reason, or, for bytes of no known codec, what they are ("an empty record", "GIF data:
// JPEG, PNG and WebP are decoded", "not an image: it starts with bytes 3c 68 74 6d"). Allocates
// nothing.
std::string ReadImageHeader(const uint8_t* data, size_t n, uint32_t max_side, ImageHeader* h);

class ImageRecordDecoder {
 public:
  // Usage where the spec cannot be decoded (ImageDecodeSpec::Validate); Unsupported where
  // libjpeg-turbo cannot make its decompressor.
  static Result<std::unique_ptr<ImageRecordDecoder>> Create(const ImageDecodeSpec& spec);
  ~ImageRecordDecoder();

  // Decodes the record at data[0, n), of any codec above, as sample `index` of `epoch` into `out`
  // (spec.OutputSampleBytes(), aligned to its element). "" on success, else why the record is
  // bad, its codec named where known ("PNG: libpng: IDAT: incorrect data check").
  std::string Decode(const uint8_t* data, size_t n, uint64_t epoch, uint64_t index, void* out);

  const ImageDecodeSpec& spec() const { return spec_; }
  // The JPEG decoder's last DCT scale (decode/jpeg_image.h): for tests.
  uint32_t last_jpeg_scale() const;

 private:
  explicit ImageRecordDecoder(const ImageDecodeSpec& spec);

  ImageDecodeSpec spec_;
  std::unique_ptr<JpegImageDecoder> jpeg_;
  std::unique_ptr<PngImageDecoder> png_;
  std::unique_ptr<WebpImageDecoder> webp_;
};

}  // namespace rf
