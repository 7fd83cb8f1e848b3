#include "decode/image_record.h"

#include <cstdio>
#include <cstring>

#include "decode/jpeg_image.h"
#include "decode/png_image.h"
#include "decode/webp_image.h"

namespace rf {
namespace {

std::string Named(ImageCodec c, const std::string& why) {
  return std::string(ImageCodecName(c)) + ": " + why;
}

// What bytes of no codec the decoders take are, where their first bytes say.
std::string NotAnImage(const uint8_t* d, size_t n) {
  if (n == 0) return "an empty record";
  const auto starts = [&](const char* magic) {
    const size_t m = std::strlen(magic);
    return n >= m && std::memcmp(d, magic, m) == 0;
  };
  const char* what = starts("GIF8")                  ? "GIF"
                     : starts("BM")                  ? "BMP"
                     : starts("II*") || starts("MM") ? "TIFF"
                                                     : nullptr;
  if (what != nullptr) return std::string(what) + " data: JPEG, PNG and WebP are decoded";
  char b[96];
  std::snprintf(b, sizeof b, "not an image: it starts with bytes");
  std::string s = b;
  for (size_t i = 0; i < n && i < 4; ++i) {
    std::snprintf(b, sizeof b, " %02x", d[i]);
    s += b;
  }
  return s;
}

}  // namespace

const char* ImageCodecName(ImageCodec c) {
  switch (c) {
    case ImageCodec::kJpeg:
      return "JPEG";
    case ImageCodec::kPng:
      return "PNG";
    case ImageCodec::kWebp:
      return "WebP";
    case ImageCodec::kUnknown:
      break;
  }
  return "unknown";
}

ImageCodec SniffImageCodec(const uint8_t* data, size_t n) {
  if (n >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return ImageCodec::kJpeg;
  if (n >= 8 && std::memcmp(data, kPngSignature, 8) == 0) return ImageCodec::kPng;
  if (n >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WEBP", 4) == 0)
    return ImageCodec::kWebp;
  return ImageCodec::kUnknown;
}

std::string ReadImageHeader(const uint8_t* data, size_t n, uint32_t max_side, ImageHeader* h) {
  h->codec = SniffImageCodec(data, n);
  switch (h->codec) {
    case ImageCodec::kJpeg: {
      JpegFrame f;
      if (std::string why = ReadJpegFrame(data, n, max_side, &f); !why.empty())
        return Named(h->codec, why);
      h->width = f.width;
      h->height = f.height;
      h->kind = f.components == 4 ? "CMYK " : f.components == 1 ? "grey " : "";
      h->kind += f.marker == 0xc0   ? "baseline"
                 : f.marker == 0xc1 ? "extended"
                 : f.marker == 0xc2 ? "progressive"
                 : f.marker == 0xc9 ? "arithmetic-coded"
                                    : "progressive arithmetic-coded";
      return "";
    }
    case ImageCodec::kPng: {
      PngHeader p;
      if (std::string why = ReadPngHeader(data, n, max_side, &p); !why.empty())
        return Named(h->codec, why);
      h->width = p.width;
      h->height = p.height;
      h->kind = std::to_string(p.bit_depth) + "-bit " + PngColorTypeName(p.color_type);
      if (p.interlaced) h->kind += " interlaced";
      return "";
    }
    case ImageCodec::kWebp: {
      WebpHeader w;
      if (std::string why = ReadWebpHeader(data, n, max_side, &w); !why.empty())
        return Named(h->codec, why);
      h->width = w.width;
      h->height = w.height;
      h->kind = w.lossless ? "lossless" : "lossy";
      if (w.alpha) h->kind += " with alpha";
      return "";
    }
    case ImageCodec::kUnknown:
      break;
  }
  return NotAnImage(data, n);
}

ImageRecordDecoder::ImageRecordDecoder(const ImageDecodeSpec& spec) : spec_(spec) {}

ImageRecordDecoder::~ImageRecordDecoder() = default;

Result<std::unique_ptr<ImageRecordDecoder>> ImageRecordDecoder::Create(
    const ImageDecodeSpec& spec) {
  RF_RETURN_IF_ERROR(spec.Validate());
  std::unique_ptr<ImageRecordDecoder> d(new ImageRecordDecoder(spec));
  RF_ASSIGN_OR_RETURN(d->jpeg_, JpegImageDecoder::Create(spec));
  RF_ASSIGN_OR_RETURN(d->png_, PngImageDecoder::Create(spec));
  RF_ASSIGN_OR_RETURN(d->webp_, WebpImageDecoder::Create(spec));
  return d;
}

std::string ImageRecordDecoder::Decode(const uint8_t* data, size_t n, uint64_t epoch,
                                       uint64_t index, void* out) {
  const ImageCodec codec = SniffImageCodec(data, n);
  std::string why;
  switch (codec) {
    case ImageCodec::kJpeg:
      why = jpeg_->Decode(data, n, epoch, index, out);
      break;
    case ImageCodec::kPng:
      why = png_->Decode(data, n, epoch, index, out);
      break;
    case ImageCodec::kWebp:
      why = webp_->Decode(data, n, epoch, index, out);
      break;
    case ImageCodec::kUnknown:
      return NotAnImage(data, n);
  }
  return why.empty() ? why : Named(codec, why);
}

uint32_t ImageRecordDecoder::last_jpeg_scale() const { return jpeg_->last_scale(); }

}  // namespace rf
