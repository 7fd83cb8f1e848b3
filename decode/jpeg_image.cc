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

// Why a frame of marker m is not decoded; "" for those libjpeg-turbo 2.1 decodes.
const char* FrameRefusal(uint8_t m) {
  switch (m) {
    case 0xc0:
    case 0xc1:
    case 0xc2:
    case 0xc9:
    case 0xca:
      return "";
    case 0xc3:
      return "a lossless JPEG (SOF3): libjpeg-turbo does not decode it";
    case 0xcb:
      return "a lossless arithmetic-coded JPEG (SOF11): libjpeg-turbo does not decode it";
    default:
      return "a hierarchical JPEG: libjpeg-turbo does not decode it";
  }
}

std::string Side(uint32_t h, uint32_t w) { return std::to_string(w) + "x" + std::to_string(h); }

// PIL's MULDIV255: a * b / 255, rounded as its CMYK to RGB conversion rounds.
inline uint8_t MulDiv255(uint32_t a, uint32_t b) {
  const uint32_t t = a * b + 128;
  return static_cast<uint8_t>((t + (t >> 8)) >> 8);
}

}  // namespace

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
      if (const char* why = FrameRefusal(m); *why != 0) return why;
      if (data[p + 2] != 8) {
        return std::to_string(data[p + 2]) + "-bit samples: only 8-bit JPEGs are decoded";
      }
      frame->marker = m;
      frame->height = uint32_t{data[p + 3]} << 8 | data[p + 4];
      frame->width = uint32_t{data[p + 5]} << 8 | data[p + 6];
      frame->components = data[p + 7];
      if (frame->height == 0 || frame->width == 0)
        return "a frame header of " + Side(frame->height, frame->width) + " pixels";
      if (frame->height > max_side || frame->width > max_side) {
        return "a frame header of " + Side(frame->height, frame->width) +
               " pixels, more than max_image_side " + std::to_string(max_side) + " a side";
      }
      if (frame->components != 1 && frame->components != 3 && frame->components != 4) {
        return "a JPEG of " + std::to_string(frame->components) +
               " components: grey (1), colour (3) and CMYK (4) are decoded";
      }
      return "";
    }
    p += length;
  }
}

// The decoder's libjpeg decompressor (decode/jpeg_errors.h): errors longjmp back to the setjmp in
// JpegDecompressor::Create or ReadRegion, which returns normally; warnings are recorded, never
// printed.
JpegImageDecoder::JpegImageDecoder(const ImageDecodeSpec& spec) : spec_(spec), writer_(spec) {}

JpegImageDecoder::~JpegImageDecoder() = default;

Result<std::unique_ptr<JpegImageDecoder>> JpegImageDecoder::Create(const ImageDecodeSpec& spec) {
  RF_RETURN_IF_ERROR(spec.Validate());
  std::unique_ptr<JpegImageDecoder> d(new JpegImageDecoder(spec));
  d->jpeg_ = std::make_unique<JpegDecompressor>();
  if (!d->jpeg_->Create()) {
    return Status::Unsupported(std::string("libjpeg-turbo: jpeg_create_decompress: ") +
                               d->jpeg_->errors.message);
  }
  // libjpeg's own buffers (a progressive JPEG's coefficients) fail with its error past this
  // instead of being allocated.
  d->jpeg_->cinfo.mem->max_memory_to_use = static_cast<long>(kMaxImageDecodeBytes);
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
  const bool cmyk = frame.components == 4;
  c->out_color_space = channels == 1 ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_EXT_RGB;
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
  if (cmyk) {
    // One row at a time through cmyk_, each converted into its row of pixels_.
    if (cmyk_.size() < size_t{c->output_width} * 4) cmyk_.resize(size_t{c->output_width} * 4);
    while (c->output_scanline < static_cast<JDIMENSION>(row_hi)) {
      uint8_t* to = pixels_.data() + size_t(c->output_scanline - first_row) * *pitch;
      JSAMPROW row = cmyk_.data();
      jpeg_read_scanlines(c, &row, 1);
      for (JDIMENSION x = 0; x < c->output_width; ++x) {
        const uint8_t* k = &cmyk_[size_t{x} * 4];
        to[3 * x] = MulDiv255(k[0], k[3]);
        to[3 * x + 1] = MulDiv255(k[1], k[3]);
        to[3 * x + 2] = MulDiv255(k[2], k[3]);
      }
    }
  }
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
  last_scale_ = writer_.Plan(epoch, index, f.height, f.width, 8);
  const uint32_t channels = f.components == 1 ? 1 : 3;
  int32_t row0 = 0, col0 = 0;
  size_t pitch = 0;
  const decode::ResampleAxis &rows = writer_.rows(), &cols = writer_.cols();
  if (!ReadRegion(data, n, f, last_scale_, channels, rows.lo, rows.hi, cols.lo, cols.hi, &row0,
                  &col0, &pitch)) {
    return std::string("libjpeg-turbo: ") + jpeg_->errors.message;
  }
  if (jpeg_->errors.warning_code >= 0)
    return std::string("libjpeg-turbo: ") + jpeg_->errors.warning;
  writer_.Write(pixels_.data() + size_t(rows.lo - row0) * pitch, pitch, col0, channels, out);
  return "";
}

}  // namespace rf
