// What a decoded image record becomes, and the part of every codec's host decode that does not
// depend on the codec: the spec (ImageDecodeSpec: the output's size, crop, dtype, layout and
// statistics, the largest side taken), a sample's crop (CropFor: core/resized_crop.h's, keyed by
// seed, epoch and sample index), the crop's window on each axis of the image (CropAxisWindow),
// and CropWriter, which writes a decoded region's crop into the output: the resize, flip,
// normalization, dtype and layout of decode/image_resample.h in one pass.
//
// A codec's decoder (decode/jpeg_image.h, png_image.h, webp_image.h) reads its header, asks
// CropWriter::Plan which source rows and columns the sample's crop reads (at the scale it will
// decode at), decodes those (and whatever more its codec needs), and hands them to Write. So every
// codec gives the same crop of the same pixels: two records of the same pixels in two lossless
// codecs give the same output bits.
//
// Memory: a CropWriter's taps and row buffers grow to the largest image met and are reused.
// Thread safety: the spec is plain data, shared read-only; one CropWriter a thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/resized_crop.h"
#include "core/status.h"
#include "decode/image_resample.h"

namespace rf {

// The largest image side a decode takes by default: ringfeed-convert images' --max-image-side
// default (16384: 805 MB as 8-bit RGB), which is also where a crafted 65535 x 65535 header is
// refused.
inline constexpr uint32_t kDefaultMaxImageSide = 16384;
// The most memory a decoder's library may take for one image (a progressive JPEG's coefficients,
// a lossless WebP's whole image at 4 bytes a pixel): 4 GiB, a backstop behind max_side (a
// 16384 x 16384 progressive 4:4:4 JPEG takes 2.4 GiB).
inline constexpr uint64_t kMaxImageDecodeBytes = uint64_t{4} << 30;

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
  // 3 (RGB: an image's alpha dropped) or 4 (RGBA: a PNG's or WebP's alpha kept, a PNG's tRNS
  // transparency applied; 255, opaque, for an image without alpha: every JPEG).
  uint32_t channels = 3;
  bool normalize = true;  // (x - mean[c]) / std[c], x in 0..255; float outputs only
  // ImageNet's statistics in pixel units (torchvision's 0.485, 0.456, 0.406 and 0.229, 0.224,
  // 0.225, times 255); the alpha's (channels 4) 0 and 255: alpha / 255, ToTensor's 0 to 1.
  std::array<float, 4> mean = {123.675f, 116.28f, 103.53f, 0.f};
  std::array<float, 4> stddev = {58.395f, 57.12f, 57.375f, 255.f};
  uint32_t max_side = kDefaultMaxImageSide;  // a larger image is refused (1 to 65535)
  uint64_t seed = 0;                         // the training crops' key, with epoch and index

  // Usage naming the option to change: a size of 0 or above 65535, an output dtype the decode
  // does not write, channels other than 3 or 4, normalize with uint8, a std of 0 or a non-finite
  // statistic, a max_side of 0.
  Status Validate() const;
  size_t OutputSampleBytes() const { return size_t{channels} * size * size * DTypeSize(output); }
  // A sample's shape: (size, size, channels) channels last, else (channels, size, size).
  std::vector<int64_t> SampleShape() const {
    const int64_t s = size, c = channels;
    return channels_last ? std::vector<int64_t>{s, s, c} : std::vector<int64_t>{c, s, s};
  }
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

// The output elements of pixel value x in channel c (spec.channels x 256 of DTypeSize(spec.output)
// bytes):
// (x - mean[c]) / std[c] in float32 (a true division), rounded to nearest even into bfloat16 or
// float16; x itself without normalize (as float, or as the uint8 pixel).
std::vector<uint8_t> ImageOutputTable(const ImageDecodeSpec& spec);

// Writes sample crops of decoded regions into outputs under one spec.
class CropWriter {
 public:
  explicit CropWriter(const ImageDecodeSpec& spec);

  // Plans sample `index` of `epoch` of a height x width image: its crop box, and the taps that
  // read it from the image decoded at 1/d of its size (ceil(height / d) x ceil(width / d), as
  // libjpeg scales), d the coarsest power of two up to max_denom (1: the image's own size; a
  // JPEG's DCT scale: 8) at which the crop keeps at least `size` pixels both ways. Returns d; then
  // rows() and cols() name the decoded pixels the crop reads.
  uint32_t Plan(uint64_t epoch, uint64_t index, uint32_t height, uint32_t width,
                uint32_t max_denom);
  // The decoded rows and columns [lo, hi) the planned crop reads.
  const decode::ResampleAxis& rows() const { return scratch_.rows; }
  const decode::ResampleAxis& cols() const { return scratch_.cols; }
  const CropBox& box() const { return box_; }
  // Writes the planned crop into `out` (the spec's OutputSampleBytes(), aligned to its element)
  // from a region whose first row is decoded row rows().lo, `pitch` bytes a row, its first column
  // decoded column col0 (<= cols().lo, and its columns reaching cols().hi), `channels` 1 (grey), 3
  // (interleaved RGB) or 4 (interleaved RGBA, under a spec of 4 channels) bytes a pixel.
  void Write(const uint8_t* region, size_t pitch, int32_t col0, uint32_t channels, void* out);

 private:
  const ImageDecodeSpec spec_;
  std::vector<uint8_t> lut_;  // channels x 256 output elements: lut[c][x]
  decode::ResampleScratch scratch_;
  CropBox box_;
};

}  // namespace rf
