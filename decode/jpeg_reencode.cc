#include "decode/jpeg_reencode.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>

#include "decode/jpeg_errors.h"

namespace rf {
namespace {

// A buffer above this is given back after its image instead of kept for the next one.
constexpr size_t kKeepBytes = size_t{64} << 20;

void Trim(std::vector<uint8_t>& v) {
  if (v.capacity() > kKeepBytes) std::vector<uint8_t>().swap(v);
}

// count CMYK pixels at p (4 bytes each) to RGB at p (3 bytes each), front to back: pixel i's RGB
// lands on bytes [3i, 3i + 3), which no pixel after i reads.
void CmykToRgb(uint8_t* p, size_t count, bool inverted) {
  for (size_t i = 0; i < count; ++i) {
    uint32_t c = p[4 * i], m = p[4 * i + 1], y = p[4 * i + 2], k = p[4 * i + 3];
    if (!inverted) {
      c = 255 - c;
      m = 255 - m;
      y = 255 - y;
      k = 255 - k;
    }
    p[3 * i] = static_cast<uint8_t>((c * k + 127) / 255);
    p[3 * i + 1] = static_cast<uint8_t>((m * k + 127) / 255);
    p[3 * i + 2] = static_cast<uint8_t>((y * k + 127) / 255);
  }
}

std::string Megabytes(uint64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

}  // namespace

ImageSize FitWithin(uint32_t height, uint32_t width, uint32_t max_side) {
  if (height <= max_side && width <= max_side) return {height, width};
  const bool tall = height > width;
  const uint64_t longer = tall ? height : width, shorter = tall ? width : height;
  // round(shorter * max_side / longer), halves up, in integers.
  const uint32_t scaled = static_cast<uint32_t>(
      std::max<uint64_t>(1, (2 * shorter * max_side + longer) / (2 * longer)));
  return tall ? ImageSize{max_side, scaled} : ImageSize{scaled, max_side};
}

JpegReencoder::~JpegReencoder() = default;

Result<std::unique_ptr<JpegReencoder>> JpegReencoder::Create() {
  std::unique_ptr<JpegReencoder> r(new JpegReencoder());
  RF_ASSIGN_OR_RETURN(r->encoder_, JpegEncoder::Create());
  r->jpeg_ = std::make_unique<JpegDecompressor>();
  if (!r->jpeg_->Create()) {
    return Status::Unsupported(std::string("libjpeg-turbo: jpeg_create_decompress: ") +
                               r->jpeg_->errors.message);
  }
  // A backstop behind the check in Decode: libjpeg's own buffers (a progressive JPEG's
  // coefficients) fail with its error past this instead of being allocated.
  r->jpeg_->cinfo.mem->max_memory_to_use = static_cast<long>(kMaxReencodeDecodeBytes);
  return r;
}

std::string JpegReencoder::Decode(const uint8_t* data, size_t n, ImageSize size, ImageSize* decoded,
                                  uint32_t* channels) {
  jpeg_decompress_struct* c = &jpeg_->cinfo;
  JpegErrors& e = jpeg_->errors;
  e.ResetWarning();
  // Between setjmp and a longjmp only libjpeg's C frames run, and this function's locals are
  // not read after one: nothing is skipped that needed destroying.
  if (setjmp(e.jump) != 0) {
    jpeg_abort_decompress(c);
    return std::string("libjpeg-turbo: ") + e.message;
  }
  jpeg_mem_src(c, data, static_cast<unsigned long>(n));
  jpeg_read_header(c, TRUE);
  uint32_t denom = 8;
  const auto scaled = [](uint32_t side, uint32_t d) { return (side + d - 1) / d; };
  while (denom > 1 && (scaled(c->image_height, denom) < size.height ||
                       scaled(c->image_width, denom) < size.width))
    denom /= 2;
  c->scale_num = 1;
  c->scale_denom = denom;
  c->dct_method = JDCT_ISLOW;
  const bool cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
  const bool grey = c->jpeg_color_space == JCS_GRAYSCALE;
  c->out_color_space = cmyk ? JCS_CMYK : grey ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_calc_output_dimensions(c);
  const uint32_t out_channels = cmyk ? 4 : grey ? 1 : 3;
  const size_t pitch = size_t{c->output_width} * out_channels;
  uint64_t need = uint64_t{pitch} * c->output_height;
  if (jpeg_has_multiple_scans(c)) {  // libjpeg holds every coefficient until the last scan
    for (int i = 0; i < c->num_components; ++i)
      need += uint64_t{c->comp_info[i].width_in_blocks} * c->comp_info[i].height_in_blocks *
              DCTSIZE2 * sizeof(JCOEF);
  }
  if (need > kMaxReencodeDecodeBytes) {
    std::snprintf(e.message, sizeof e.message,
                  "a %ux%u image whose decode needs %s, more than the %s an image may take",
                  c->image_width, c->image_height, Megabytes(need).c_str(),
                  Megabytes(kMaxReencodeDecodeBytes).c_str());
    jpeg_abort_decompress(c);
    return e.message;
  }
  if (pixels_.size() < pitch * c->output_height) pixels_.resize(pitch * c->output_height);
  last_scale_ = denom;
  jpeg_start_decompress(c);
  while (c->output_scanline < c->output_height) {
    JSAMPROW rows[4];
    const JDIMENSION at = c->output_scanline;
    const JDIMENSION count = std::min<JDIMENSION>(4, c->output_height - at);
    for (JDIMENSION i = 0; i < count; ++i) rows[i] = pixels_.data() + size_t{at + i} * pitch;
    jpeg_read_scanlines(c, rows, count);
  }
  jpeg_finish_decompress(c);  // the rest of the file, to its end-of-image marker
  if (e.warning_code >= 0) return std::string("libjpeg-turbo: ") + e.warning;
  *decoded = {c->output_height, c->output_width};
  *channels = grey ? 1 : 3;
  if (cmyk)
    CmykToRgb(pixels_.data(), size_t{decoded->height} * decoded->width, c->saw_Adobe_marker);
  return "";
}

std::string JpegReencoder::Reencode(const uint8_t* data, size_t n, ImageSize size, int quality,
                                    std::vector<uint8_t>* out) {
  ImageSize decoded;
  uint32_t channels = 0;
  std::string why = Decode(data, n, size, &decoded, &channels);
  if (why.empty() && (size.height > decoded.height || size.width > decoded.width)) {
    why = "a target of " + std::to_string(size.width) + "x" + std::to_string(size.height) +
          " pixels, larger than the image";
  }
  if (!why.empty()) {
    Trim(pixels_);
    return why;
  }
  // The source's whole extent (its full-size pixels over the DCT scale) onto the target's.
  const double denom = last_scale_;
  why = ResizeAndEncode(pixels_.data(), decoded, jpeg_->cinfo.image_height / denom,
                        jpeg_->cinfo.image_width / denom, channels, size, quality, out);
  Trim(pixels_);
  return why;
}

std::string JpegReencoder::ReencodePixels(const uint8_t* pixels, ImageSize decoded,
                                          uint32_t channels, ImageSize size, int quality,
                                          std::vector<uint8_t>* out) {
  if (size.height > decoded.height || size.width > decoded.width) {
    return "a target of " + std::to_string(size.width) + "x" + std::to_string(size.height) +
           " pixels, larger than the image";
  }
  return ResizeAndEncode(pixels, decoded, decoded.height, decoded.width, channels, size, quality,
                         out);
}

std::string JpegReencoder::ResizeAndEncode(const uint8_t* pixels, ImageSize decoded, double full_h,
                                           double full_w, uint32_t channels, ImageSize size,
                                           int quality, std::vector<uint8_t>* out) {
  const size_t pitch = size_t{decoded.width} * channels;
  if (!(decoded == size)) {
    scratch_.rows.Build(0, full_h / size.height, size.height, 0,
                        static_cast<int32_t>(decoded.height));
    scratch_.cols.Build(0, full_w / size.width, size.width, 0, static_cast<int32_t>(decoded.width));
    const size_t bytes = size_t{size.height} * size.width * channels;
    if (resized_.size() < bytes) resized_.resize(bytes);
    decode::ResampleOutput o;
    o.out = resized_.data();
    o.element_bytes = 1;
    o.normalize = false;
    o.height = size.height;
    o.width = size.width;
    o.channels_last = true;
    o.keep_grey = true;
    decode::ResampleInto(pixels + size_t(scratch_.rows.lo) * pitch, pitch, 0, channels, scratch_,
                         o);
    pixels = resized_.data();
  }
  const std::string why = encoder_->Encode(pixels, size_t{size.width} * channels, size.height,
                                           size.width, channels, quality, out);
  Trim(resized_);
  return why;
}

}  // namespace rf
