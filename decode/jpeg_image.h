// One JPEG record to the pixels a model takes, on the host: libjpeg-turbo decodes the part of
// it the crop needs, then the crop (core/resized_crop.h) is resized, flipped, normalized and
// written in the output dtype and layout in one pass (decode/image_resample.h). The CPU image
// decoder (pipeline/images/image_decoder.h) runs one JpegImageDecoder a worker thread.
//
// Per image:
//   1. the frame header (SOFn) is read from the bytes themselves: an image without one, of a
//      side of 0 or more than max_side pixels, or of a component count other than 1 or 3 is
//      refused here, before anything is allocated for it;
//   2. the crop: RandomResizedCropOf(seed, epoch, index, H, W) for training (with its flip),
//      CenterCropOf(H, W, size) for evaluation;
//   3. the decode, through libjpeg-turbo's libjpeg API (the TurboJPEG API of libjpeg-turbo 2.1
//      decodes whole images only), of what the resample reads and no more:
//        - at the coarsest DCT scale (1/8, 1/4, 1/2 or 1) at which the crop keeps at least
//          `size` pixels on both sides: a crop twice the output or more costs less than a
//          quarter of the full decode's inverse DCT, colour conversion and memory;
//        - only the crop's columns (jpeg_crop_scanline, widened by an iMCU on either side, so
//          that the chroma upsampling at the crop's edges is the full decode's) and
//          rows: the rows above it are entropy-decoded only (jpeg_skip_scanlines), the rows
//          below it not at all (the decode stops at the crop's last row);
//      grey JPEGs decode as grey and become 3 equal channels at the end;
//   4. the resample of the crop, in the decoded image's own coordinates (the crop box scaled by
//      the DCT scale), into the output.
// A decode that libjpeg-turbo fails, or that meets a warning other than extraneous bytes
// before a marker (a truncated file's "Premature end of JPEG file", corrupt entropy-coded
// data), is a bad record: Decode returns why. Damage is found where the decode reads: in the
// rows down to the crop's last, so a file cut short below one epoch's crop decodes for that
// crop and is refused for a crop that reaches the cut (ringfeed-convert refuses files without
// an end-of-image marker, so a converted dataset holds no such file).
//
// Memory: the decoded region's buffer and the resample's taps grow to the largest image met and
// are reused (libjpeg-turbo's own working memory is its business, per image). Thread safety:
// none; one decoder a thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/resized_crop.h"
#include "core/status.h"
#include "decode/image_resample.h"

namespace rf {

struct JpegDecompressor;  // decode/jpeg_errors.h

// The largest image side a decode takes by default: ringfeed-convert images' --max-image-side
// default (16384: 805 MB as 8-bit RGB), which is also where a crafted 65535 x 65535 header is
// refused.
inline constexpr uint32_t kDefaultMaxImageSide = 16384;

enum class ImageCrop {
  kRandomResized,  // training: RandomResizedCrop and a random horizontal flip
  kCenter,         // evaluation: the shorter side to size / 0.875, the centre size x size
};

// What a decoded image becomes. Plain data, shared read-only by every decode thread.
struct ImageDecodeSpec {
  uint32_t size = 224;  // the output's height and width
  ImageCrop crop = ImageCrop::kRandomResized;
  DType output = DType::kFloat32;  // float32, bfloat16, float16, or uint8 (the pixels)
  bool channels_last = false;      // NHWC; else NCHW
  bool normalize = true;           // (x - mean[c]) / std[c], x in 0..255; float outputs only
  // ImageNet's statistics in pixel units (torchvision's 0.485, 0.456, 0.406 and 0.229, 0.224,
  // 0.225, times 255).
  std::array<float, 3> mean = {123.675f, 116.28f, 103.53f};
  std::array<float, 3> stddev = {58.395f, 57.12f, 57.375f};
  uint32_t max_side = kDefaultMaxImageSide;  // a larger image is refused (1 to 65535)
  uint64_t seed = 0;                         // the training crops' key, with epoch and index

  // Usage naming the option to change: a size of 0 or above 65535, an output dtype the decode
  // does not write, normalize with uint8, a std of 0 or a non-finite statistic, a max_side of 0.
  Status Validate() const;
  size_t OutputSampleBytes() const { return size_t{3} * size * size * DTypeSize(output); }
};

// The crop of a height x width image under `spec` for sample `index` of `epoch`.
CropBox CropFor(const ImageDecodeSpec& spec, uint64_t epoch, uint64_t index, uint32_t height,
                uint32_t width);

// One axis of a crop in the image's own pixels: output o (of spec.size) centres on origin + (o +
// 0.5) * step, its taps clipped to [lo, hi) (decode/image_resample.h's filter). For the box's
// start and extent on that axis, its resized extent (CropBox::resized_*: 0 for a training crop)
// and the image's extent.
struct AxisWindow {
  double origin = 0, step = 1;
  int32_t lo = 0, hi = 1;
};
AxisWindow CropAxisWindow(uint32_t start, uint32_t extent, uint32_t resized, uint32_t image,
                          uint32_t size);

// What a JPEG's frame header says, read without decoding (ReadJpegFrame).
struct JpegFrame {
  uint32_t width = 0, height = 0, components = 0;
};
// "" and *frame set, or why the bytes are no JPEG whose frame header can be read ("no JPEG
// start-of-image marker", "no frame header before the data ends", "a frame header of 65535x65535
// pixels, more than max_image_side 16384 a side", ...). Reads the markers only: allocates
// nothing.
std::string ReadJpegFrame(const uint8_t* data, size_t n, uint32_t max_side, JpegFrame* frame);

class JpegImageDecoder {
 public:
  // One decoder, its libjpeg decompressor made (Unsupported where libjpeg-turbo cannot make one).
  static Result<std::unique_ptr<JpegImageDecoder>> Create(const ImageDecodeSpec& spec);
  ~JpegImageDecoder();

  // Decodes the JPEG at data[0, n) as sample `index` of `epoch` into `out`
  // (spec.OutputSampleBytes(), aligned to its element). "" on success, else why the
  // record is bad (out is then partly written or not at all).
  std::string Decode(const uint8_t* data, size_t n, uint64_t epoch, uint64_t index, void* out);

  // The DCT scale denominator the last Decode used (1, 2, 4 or 8; 0 before any): for tests.
  uint32_t last_scale() const { return last_scale_; }

 private:
  explicit JpegImageDecoder(const ImageDecodeSpec& spec);

  // Decodes rows [row_lo, row_hi) and columns [col_lo, col_hi) (and more: an iMCU's margin,
  // whole iMCU columns) of the JPEG at data[0, n) at DCT scale 1/denom into pixels_: *row0 and
  // *col0 the first row and column decoded, *pitch the bytes a row. False with jpeg_'s message
  // set where libjpeg-turbo fails.
  bool ReadRegion(const uint8_t* data, size_t n, const JpegFrame& frame, uint32_t denom,
                  uint32_t channels, int32_t row_lo, int32_t row_hi, int32_t col_lo, int32_t col_hi,
                  int32_t* row0, int32_t* col0, size_t* pitch);

  ImageDecodeSpec spec_;
  // libjpeg's decompressor and error manager (decode/jpeg_errors.h): created with the decoder,
  // destroyed with it; its one owner.
  std::unique_ptr<JpegDecompressor> jpeg_;
  std::vector<uint8_t> pixels_;  // the decoded region
  std::vector<uint8_t> lut_;     // 3 x 256 output elements: lut[c][x]
  decode::ResampleScratch scratch_;
  uint32_t last_scale_ = 0;
};

// The output elements of pixel value x in channel c (3 x 256 of DTypeSize(spec.output) bytes):
// (x - mean[c]) / std[c] in float32 (a true division), rounded to nearest even into bfloat16 or
// float16; x itself without normalize (as float, or as the uint8 pixel).
std::vector<uint8_t> ImageOutputTable(const ImageDecodeSpec& spec);

}  // namespace rf
