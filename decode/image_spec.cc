#include "decode/image_spec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rf {
namespace {

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
  if (channels != 3 && channels != 4) {
    return Status::Usage("decoded images have 3 channels (RGB) or 4 (RGBA), not " +
                         std::to_string(channels));
  }
  if (!normalize) return Status::Ok();
  if (output == DType::kUInt8)
    return Status::Usage("normalize needs a float dtype, not uint8: turn normalize off");
  for (uint32_t c = 0; c < channels; ++c) {
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

std::vector<uint8_t> ImageOutputTable(const ImageDecodeSpec& spec) {
  const size_t e = DTypeSize(spec.output);
  std::vector<uint8_t> lut(size_t{spec.channels} * 256 * e);
  for (uint32_t c = 0; c < spec.channels; ++c) {
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

CropWriter::CropWriter(const ImageDecodeSpec& spec) : spec_(spec), lut_(ImageOutputTable(spec)) {}

uint32_t CropWriter::Plan(uint64_t epoch, uint64_t index, uint32_t height, uint32_t width,
                          uint32_t max_denom) {
  box_ = CropFor(spec_, epoch, index, height, width);
  const uint32_t size = spec_.size;
  const AxisWindow ry = CropAxisWindow(box_.top, box_.height, box_.resized_height, height, size);
  const AxisWindow rx = CropAxisWindow(box_.left, box_.width, box_.resized_width, width, size);
  uint32_t d = max_denom;
  while (d > 1 && (ry.step * size / d < size || rx.step * size / d < size)) d /= 2;
  const uint32_t sh = (height + d - 1) / d, sw = (width + d - 1) / d;
  const AxisWindow sy = Scaled(ry, height, sh), sx = Scaled(rx, width, sw);
  scratch_.rows.Build(sy.origin, sy.step, size, sy.lo, sy.hi);
  scratch_.cols.Build(sx.origin, sx.step, size, sx.lo, sx.hi);
  return d;
}

void CropWriter::Write(const uint8_t* region, size_t pitch, int32_t col0, uint32_t channels,
                       void* out) {
  decode::ResampleOutput o;
  o.out = out;
  o.lut = lut_.data();
  o.element_bytes = static_cast<uint32_t>(DTypeSize(spec_.output));
  o.channels = spec_.channels;
  o.normalize = spec_.normalize;
  for (uint32_t c = 0; c < spec_.channels; ++c) {
    o.mean[c] = spec_.mean[c];
    o.stddev[c] = spec_.stddev[c];
  }
  o.height = spec_.size;
  o.width = spec_.size;
  o.channels_last = spec_.channels_last;
  o.flip = box_.flip;
  decode::ResampleInto(region, pitch, col0, channels, scratch_, o);
}

}  // namespace rf
