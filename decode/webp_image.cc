#include "decode/webp_image.h"

#include <webp/decode.h>

#include <algorithm>
#include <cstring>

namespace rf {
namespace {

uint32_t Le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

std::string Side(uint32_t h, uint32_t w) { return std::to_string(w) + "x" + std::to_string(h); }

const char* StatusName(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OK:
      return "VP8_STATUS_OK";
    case VP8_STATUS_OUT_OF_MEMORY:
      return "VP8_STATUS_OUT_OF_MEMORY";
    case VP8_STATUS_INVALID_PARAM:
      return "VP8_STATUS_INVALID_PARAM";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "VP8_STATUS_BITSTREAM_ERROR";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "VP8_STATUS_UNSUPPORTED_FEATURE";
    case VP8_STATUS_SUSPENDED:
      return "VP8_STATUS_SUSPENDED";
    case VP8_STATUS_USER_ABORT:
      return "VP8_STATUS_USER_ABORT";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "VP8_STATUS_NOT_ENOUGH_DATA";
  }
  return "an unknown status";
}

}  // namespace

std::string ReadWebpHeader(const uint8_t* data, size_t n, uint32_t max_side, WebpHeader* h) {
  if (n < 12 || std::memcmp(data, "RIFF", 4) != 0 || std::memcmp(data + 8, "WEBP", 4) != 0)
    return "no RIFF WEBP signature";
  // The RIFF size counts the bytes after its own field; a file may hold padding after it.
  const uint64_t riff = uint64_t{Le32(data + 4)} + 8;
  if (riff > n) {
    return "a RIFF size of " + std::to_string(riff) + " bytes, past the data's " +
           std::to_string(n) + " (truncated?)";
  }
  WebPBitstreamFeatures f;
  const VP8StatusCode s = WebPGetFeatures(data, n, &f);
  if (s != VP8_STATUS_OK)
    return std::string("libwebp: its header is not a WebP's (") + StatusName(s) + ")";
  if (f.has_animation) return "an animated WebP: only still images are decoded";
  if (f.width <= 0 || f.height <= 0) return "a WebP of " + Side(f.height, f.width) + " pixels";
  h->width = static_cast<uint32_t>(f.width);
  h->height = static_cast<uint32_t>(f.height);
  if (h->width > max_side || h->height > max_side) {
    return "a WebP of " + Side(h->height, h->width) + " pixels, more than max_image_side " +
           std::to_string(max_side) + " a side";
  }
  h->alpha = f.has_alpha != 0;
  h->lossless = f.format == 2;
  return "";
}

std::string ReadWebpRegion(const uint8_t* data, size_t n, const WebpHeader& h, uint32_t row_lo,
                           uint32_t row_hi, uint32_t col_lo, uint32_t col_hi,
                           std::vector<uint8_t>* pixels, uint32_t* row0, uint32_t* col0,
                           size_t* pitch, uint32_t channels) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return "libwebp: WebPInitDecoderConfig failed";
  // libwebp crops from even coordinates (it rounds a start down itself; here it is done first,
  // so that the region is known).
  *row0 = row_lo & ~1u;
  *col0 = col_lo & ~1u;
  const uint32_t w = col_hi - *col0, rows = row_hi - *row0;
  if (*row0 != 0 || *col0 != 0 || w != h.width || rows != h.height) {
    config.options.use_cropping = 1;
    config.options.crop_left = static_cast<int>(*col0);
    config.options.crop_top = static_cast<int>(*row0);
    config.options.crop_width = static_cast<int>(w);
    config.options.crop_height = static_cast<int>(rows);
  }
  *pitch = size_t{w} * (channels == 4 ? 4 : 3);
  const size_t bytes = *pitch * rows;
  if (pixels->size() < bytes) pixels->resize(bytes);
  config.output.colorspace = channels == 4 ? MODE_RGBA : MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = pixels->data();
  config.output.u.RGBA.stride = static_cast<int>(*pitch);
  config.output.u.RGBA.size = bytes;
  const VP8StatusCode s = WebPDecode(data, n, &config);
  WebPFreeDecBuffer(&config.output);  // external memory: frees nothing of ours
  if (s != VP8_STATUS_OK) return std::string("libwebp: its decode failed (") + StatusName(s) + ")";
  return "";
}

Result<std::unique_ptr<WebpImageDecoder>> WebpImageDecoder::Create(const ImageDecodeSpec& spec) {
  RF_RETURN_IF_ERROR(spec.Validate());
  return std::unique_ptr<WebpImageDecoder>(new WebpImageDecoder(spec));
}

std::string WebpImageDecoder::Decode(const uint8_t* data, size_t n, uint64_t epoch, uint64_t index,
                                     void* out) {
  WebpHeader h;
  if (std::string why = ReadWebpHeader(data, n, spec_.max_side, &h); !why.empty()) return why;
  writer_.Plan(epoch, index, h.height, h.width, 1);
  const decode::ResampleAxis &rows = writer_.rows(), &cols = writer_.cols();
  const auto widen = [](int32_t lo, int32_t hi, uint32_t extent, uint32_t* a, uint32_t* b) {
    *a = static_cast<uint32_t>(std::max<int32_t>(0, lo - static_cast<int32_t>(kWebpMargin)));
    *b = std::min(extent, static_cast<uint32_t>(hi) + kWebpMargin);
  };
  uint32_t r_lo, r_hi, c_lo, c_hi, row0, col0;
  widen(rows.lo, rows.hi, h.height, &r_lo, &r_hi);
  widen(cols.lo, cols.hi, h.width, &c_lo, &c_hi);
  size_t pitch = 0;
  // The alpha kept where the image has one (else RGB, and the writer's alpha opaque).
  const uint32_t channels = spec_.channels == 4 && h.alpha ? 4 : 3;
  if (std::string why = ReadWebpRegion(data, n, h, r_lo, r_hi, c_lo, c_hi, &pixels_, &row0, &col0,
                                       &pitch, channels);
      !why.empty()) {
    return why;
  }
  writer_.Write(pixels_.data() + size_t(static_cast<uint32_t>(rows.lo) - row0) * pitch, pitch,
                static_cast<int32_t>(col0), channels, out);
  return "";
}

}  // namespace rf
