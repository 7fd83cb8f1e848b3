#include "decode/jpeg_image.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <utility>

#include "decode/jpeg_errors.h"

namespace rf {
namespace {

bool IsFrameMarker(uint8_t m) {
  // SOF0 to SOF15 but DHT (C4), JPG (C8) and DAC (CC).
  return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
}

std::string Side(uint32_t h, uint32_t w) { return std::to_string(w) + "x" + std::to_string(h); }

// The window in an image scaled to `scaled` pixels of `image` (the DCT scale).
AxisWindow Scaled(const AxisWindow& a, uint32_t image, uint32_t scaled) {
  if (scaled == image) return a;
  const double f = static_cast<double>(scaled) / image;
  AxisWindow s;
  s.origin = a.origin * f;
  s.step = a.step * f;
  const auto at = [&](int32_t v) {
    return std::clamp(static_cast<int32_t>(std::floor(v * f + 0.5)), 0,
                      static_cast<int32_t>(scaled));
  };
  s.lo = std::min(at(a.lo), static_cast<int32_t>(scaled) - 1);
  s.hi = std::max(at(a.hi), s.lo + 1);
  return s;
}

}  // namespace

AxisWindow CropAxisWindow(uint32_t start, uint32_t extent, uint32_t resized, uint32_t image,
                          uint32_t size) {
  AxisWindow a;
  if (resized != 0) {  // evaluation: the whole image resized, then the crop of it
    a.step = static_cast<double>(image) / resized;
    a.origin = start * a.step;
    a.lo = 0;
    a.hi = static_cast<int32_t>(image);
  } else {  // training: the crop box, resized
    a.step = static_cast<double>(extent) / size;
    a.origin = start;
    a.lo = static_cast<int32_t>(start);
    a.hi = static_cast<int32_t>(start + extent);
  }
  return a;
}

Status ImageDecodeSpec::Validate() const {
  if (size == 0 || size > 65535)
    return Status::Usage("image_size must be 1 to 65535, got " + std::to_string(size));
  if (output != DType::kFloat32 && output != DType::kBFloat16 && output != DType::kFloat16 &&
      output != DType::kUInt8) {
    return Status::Usage("dtype " + std::string(DTypeName(output)) +
                         ": decoded images come out as float32, bfloat16, float16 or uint8");
  }
  if (max_side == 0 || max_side > 65535)
    return Status::Usage("max_image_side must be 1 to 65535, got " + std::to_string(max_side));
  if (!normalize) return Status::Ok();
  if (output == DType::kUInt8)
    return Status::Usage("normalize needs a float dtype, not uint8: turn normalize off");
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(mean[c]) || !std::isfinite(stddev[c]) || !(stddev[c] > 0)) {
      return Status::Usage("mean and std: each channel's must be finite, std above 0 (channel " +
                           std::to_string(c) + ": " + std::to_string(mean[c]) + ", " +
                           std::to_string(stddev[c]) + ")");
    }
  }
  return Status::Ok();
}

CropBox CropFor(const ImageDecodeSpec& spec, uint64_t epoch, uint64_t index, uint32_t height,
                uint32_t width) {
  if (spec.crop == ImageCrop::kCenter) return CenterCropOf(height, width, spec.size);
  return RandomResizedCropOf(spec.seed, epoch, index, height, width);
}

std::string ReadJpegFrame(const uint8_t* data, size_t n, uint32_t max_side, JpegFrame* frame) {
  if (n < 4 || data[0] != 0xff || data[1] != 0xd8) return "no JPEG start-of-image marker";
  size_t p = 2;
  for (;;) {
    if (p >= n) return "no frame header before the data ends";
    if (data[p] != 0xff) return "no marker at byte " + std::to_string(p) + " (damaged headers)";
    while (p < n && data[p] == 0xff) ++p;  // fill bytes
    if (p >= n) return "no frame header before the data ends";
    const uint8_t m = data[p++];
    if (m == 0x01 || (m >= 0xd0 && m <= 0xd8)) continue;  // markers without a segment
    if (m == 0xd9) return "an end-of-image marker before any frame header";
    if (m == 0xda) return "a scan before any frame header";
    if (n - p < 2) return "no frame header before the data ends";
    const size_t length = size_t{data[p]} << 8 | data[p + 1];
    if (length < 2) return "a marker segment of length " + std::to_string(length);
    if (IsFrameMarker(m)) {
      if (length < 8 || n - p < 8) return "a truncated frame header";
      frame->height = uint32_t{data[p + 3]} << 8 | data[p + 4];
      frame->width = uint32_t{data[p + 5]} << 8 | data[p + 6];
      frame->components = data[p + 7];
      if (frame->height == 0 || frame->width == 0)
        return "a frame header of " + Side(frame->height, frame->width) + " pixels";
      if (frame->height > max_side || frame->width > max_side) {
        return "a frame header of " + Side(frame->height, frame->width) +
               " pixels, more than max_image_side " + std::to_string(max_side) + " a side";
      }
      if (frame->components != 1 && frame->components != 3) {
        return "a JPEG of " + std::to_string(frame->components) +
               " components (CMYK?): only grey and colour (3) are decoded";
      }
      return "";
    }
    p += length;
  }
}

std::vector<uint8_t> ImageOutputTable(const ImageDecodeSpec& spec) {
  const size_t e = DTypeSize(spec.output);
  std::vector<uint8_t> lut(3 * 256 * e);
  for (int c = 0; c < 3; ++c) {
    for (int x = 0; x < 256; ++x) {
      uint8_t* at = &lut[(c * 256 + x) * e];
      if (spec.output == DType::kUInt8) {
        *at = static_cast<uint8_t>(x);
        continue;
      }
      // A true division in float32, as every decode of the project normalizes
      // (decode/element.h).
      const float v = spec.normalize ? (static_cast<float>(x) - spec.mean[c]) / spec.stddev[c]
                                     : static_cast<float>(x);
      if (spec.output == DType::kFloat32) {
        std::memcpy(at, &v, 4);
      } else {
        const uint16_t h = spec.output == DType::kBFloat16 ? FloatToBFloat16(v) : FloatToHalf(v);
        std::memcpy(at, &h, 2);
      }
    }
  }
  return lut;
}

// The decoder's libjpeg decompressor (decode/jpeg_errors.h): errors longjmp back to the setjmp in
// JpegDecompressor::Create or ReadRegion, which returns normally; warnings are recorded, never
// printed.
JpegImageDecoder::JpegImageDecoder(const ImageDecodeSpec& spec)
    : spec_(spec), lut_(ImageOutputTable(spec)) {}

JpegImageDecoder::~JpegImageDecoder() = default;

Result<std::unique_ptr<JpegImageDecoder>> JpegImageDecoder::Create(const ImageDecodeSpec& spec) {
  RF_RETURN_IF_ERROR(spec.Validate());
  std::unique_ptr<JpegImageDecoder> d(new JpegImageDecoder(spec));
  d->jpeg_ = std::make_unique<JpegDecompressor>();
  if (!d->jpeg_->Create()) {
    return Status::Unsupported(std::string("libjpeg-turbo: jpeg_create_decompress: ") +
                               d->jpeg_->errors.message);
  }
  return d;
}

bool JpegImageDecoder::ReadRegion(const uint8_t* data, size_t n, const JpegFrame& frame,
                                  uint32_t denom, uint32_t channels, int32_t row_lo, int32_t row_hi,
                                  int32_t col_lo, int32_t col_hi, int32_t* row0, int32_t* col0,
                                  size_t* pitch) {
  // Between setjmp and a longjmp only libjpeg's C frames run, and this function's locals are
  // not read after one: nothing is skipped that needed destroying.
  jpeg_decompress_struct* c = &jpeg_->cinfo;
  JpegErrors& e = jpeg_->errors;
  e.ResetWarning();
  if (setjmp(e.jump) != 0) {
    jpeg_abort_decompress(c);
    return false;
  }
  jpeg_mem_src(c, data, static_cast<unsigned long>(n));
  jpeg_read_header(c, TRUE);
  // The frame libjpeg read is the one ReadJpegFrame checked (its first).
  if (c->image_width != frame.width || c->image_height != frame.height ||
      c->num_components != static_cast<int>(frame.components)) {
    std::snprintf(e.message, sizeof e.message, "libjpeg read a frame of %ux%u, %d components",
                  c->image_width, c->image_height, c->num_components);
    jpeg_abort_decompress(c);
    return false;
  }
  c->scale_num = 1;
  c->scale_denom = denom;
  c->out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_EXT_RGB;
  jpeg_start_decompress(c);
  // A region's chroma is upsampled as if its first and last columns (and its first row) were
  // the image's edges, replicated where the full decode reads their neighbours (measured: up to
  // 13 levels off in the crop's edge columns of real photos). So the region is widened by one
  // iMCU (16 pixels of a 4:2:0 image, scaled) on either side and above, within the image: the
  // pixels the resample reads are then the full decode's.
#if JPEG_LIB_VERSION >= \
    70  // the libjpeg 7 and 8 ABIs (Ubuntu's libjpeg-turbo8) scale each way apart
  const int32_t imcu_w = c->max_h_samp_factor * c->min_DCT_h_scaled_size;
  const int32_t imcu_h = c->max_v_samp_factor * c->min_DCT_v_scaled_size;
#else  // the libjpeg 6.2 ABI (Debian's libjpeg62-turbo)
  const int32_t imcu_w = c->max_h_samp_factor * c->min_DCT_scaled_size;
  const int32_t imcu_h = c->max_v_samp_factor * c->min_DCT_scaled_size;
#endif
  const int32_t first_row = std::max(0, row_lo - imcu_h);
  const int32_t wide_lo = std::max(0, col_lo - imcu_w);
  const int32_t wide_hi = std::min(static_cast<int32_t>(c->output_width), col_hi + imcu_w);
  JDIMENSION x = static_cast<JDIMENSION>(wide_lo), w = static_cast<JDIMENSION>(wide_hi - wide_lo);
  if (w < c->output_width) {
    jpeg_crop_scanline(c, &x, &w);  // x down and w up to whole iMCU columns
  } else {
    x = 0;
  }
  *col0 = static_cast<int32_t>(x);
  *row0 = first_row;
  *pitch = size_t{c->output_width} * channels;
  const size_t bytes = size_t(row_hi - first_row) * *pitch;
  if (pixels_.size() < bytes) pixels_.resize(bytes);
  if (first_row > 0) jpeg_skip_scanlines(c, static_cast<JDIMENSION>(first_row));
  while (c->output_scanline < static_cast<JDIMENSION>(row_hi)) {
    JSAMPROW rows[4];
    const JDIMENSION at = c->output_scanline;
    const JDIMENSION count = std::min<JDIMENSION>(4, static_cast<JDIMENSION>(row_hi) - at);
    for (JDIMENSION i = 0; i < count; ++i) {
      rows[i] = pixels_.data() + size_t(at + i - first_row) * *pitch;
    }
    jpeg_read_scanlines(c, rows, count);
  }
  // The rows below the crop are never decoded.
  jpeg_abort_decompress(c);
  return true;
}

std::string JpegImageDecoder::Decode(const uint8_t* data, size_t n, uint64_t epoch, uint64_t index,
                                     void* out) {
  JpegFrame f;
  if (std::string why = ReadJpegFrame(data, n, spec_.max_side, &f); !why.empty()) return why;
  const CropBox box = CropFor(spec_, epoch, index, f.height, f.width);
  const uint32_t size = spec_.size;
  const AxisWindow ry = CropAxisWindow(box.top, box.height, box.resized_height, f.height, size);
  const AxisWindow rx = CropAxisWindow(box.left, box.width, box.resized_width, f.width, size);
  // The coarsest DCT scale that leaves the crop at least `size` pixels both ways.
  uint32_t d = 8;
  while (d > 1 && (ry.step * size / d < size || rx.step * size / d < size)) d /= 2;
  last_scale_ = d;
  const uint32_t sh = (f.height + d - 1) / d, sw = (f.width + d - 1) / d;  // libjpeg's 1/d size
  const AxisWindow sy = Scaled(ry, f.height, sh), sx = Scaled(rx, f.width, sw);
  scratch_.rows.Build(sy.origin, sy.step, size, sy.lo, sy.hi);
  scratch_.cols.Build(sx.origin, sx.step, size, sx.lo, sx.hi);
  const uint32_t channels = f.components == 1 ? 1 : 3;
  int32_t row0 = 0, col0 = 0;
  size_t pitch = 0;
  if (!ReadRegion(data, n, f, d, channels, scratch_.rows.lo, scratch_.rows.hi, scratch_.cols.lo,
                  scratch_.cols.hi, &row0, &col0, &pitch)) {
    return std::string("libjpeg-turbo: ") + jpeg_->errors.message;
  }
  if (jpeg_->errors.warning_code >= 0)
    return std::string("libjpeg-turbo: ") + jpeg_->errors.warning;
  decode::ResampleOutput o;
  o.out = out;
  o.lut = lut_.data();
  o.element_bytes = static_cast<uint32_t>(DTypeSize(spec_.output));
  o.normalize = spec_.normalize;
  for (int c = 0; c < 3; ++c) {
    o.mean[c] = spec_.mean[c];
    o.stddev[c] = spec_.stddev[c];
  }
  o.height = size;
  o.width = size;
  o.channels_last = spec_.channels_last;
  o.flip = box.flip;
  decode::ResampleInto(pixels_.data() + size_t(scratch_.rows.lo - row0) * pitch, pitch, col0,
                       channels, scratch_, o);
  return "";
}

}  // namespace rf
