#include "tests/testing/image_encoding.h"

#include <gtest/gtest.h>
#include <png.h>
#include <webp/encode.h>

#include <csetjmp>

namespace rf::testing {
namespace {

void OnWrite(png_structp png, png_bytep data, size_t n) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

void OnFlush(png_structp) {}

int Channels(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
      return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      return 4;
    default:
      return 1;
  }
}

// The packed row libpng writes: samples of `depth` bits, big-endian, MSB first.
std::vector<uint8_t> PackRow(const uint16_t* s, size_t count, int depth) {
  std::vector<uint8_t> row;
  if (depth == 16) {
    for (size_t i = 0; i < count; ++i) {
      row.push_back(static_cast<uint8_t>(s[i] >> 8));
      row.push_back(static_cast<uint8_t>(s[i]));
    }
    return row;
  }
  if (depth == 8) return std::vector<uint8_t>(s, s + count);
  row.assign((count * depth + 7) / 8, 0);
  for (size_t i = 0; i < count; ++i) {
    const size_t bit = i * depth;
    row[bit / 8] |= static_cast<uint8_t>(s[i] << (8 - depth - bit % 8));
  }
  return row;
}

}  // namespace

std::vector<uint8_t> EncodePng(const PngLayout& l, const std::vector<uint16_t>& samples,
                               const std::vector<std::array<uint8_t, 3>>& palette,
                               const std::vector<uint16_t>& trns) {
  const size_t per_row = size_t{l.width} * Channels(l.color_type);
  EXPECT_EQ(samples.size(), per_row * l.height);
  std::vector<std::vector<uint8_t>> rows;
  for (uint32_t y = 0; y < l.height; ++y)
    rows.push_back(PackRow(samples.data() + y * per_row, per_row, l.bit_depth));
  std::vector<png_bytep> pointers;
  for (auto& r : rows) pointers.push_back(r.data());
  std::vector<png_color> colours;
  for (const auto& p : palette) colours.push_back({p[0], p[1], p[2]});

  std::vector<uint8_t> out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr || setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_write_struct(&png, &info);
    ADD_FAILURE() << "libpng could not write the test's PNG";
    return {};
  }
  png_set_write_fn(png, &out, OnWrite, OnFlush);
  png_set_IHDR(png, info, l.width, l.height, l.bit_depth, l.color_type,
               l.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (l.color_type == PNG_COLOR_TYPE_PALETTE)
    png_set_PLTE(png, info, colours.data(), static_cast<int>(colours.size()));
  std::vector<png_byte> alphas(trns.begin(), trns.end());
  png_color_16 colour{};
  if (!trns.empty() && l.color_type == PNG_COLOR_TYPE_PALETTE) {
    png_set_tRNS(png, info, alphas.data(), static_cast<int>(alphas.size()), nullptr);
  } else if (!trns.empty()) {
    colour.gray = trns[0];
    if (trns.size() == 3) colour.red = trns[0], colour.green = trns[1], colour.blue = trns[2];
    png_set_tRNS(png, info, nullptr, 0, &colour);
  }
  png_set_rows(png, info, pointers.data());
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

std::vector<uint8_t> EncodeWebp(const std::vector<uint8_t>& rgb, uint32_t width, uint32_t height,
                                bool lossless, float quality, const std::vector<uint8_t>& alpha) {
  std::vector<uint8_t> px = rgb;
  int stride = static_cast<int>(width) * 3;
  if (!alpha.empty()) {
    px.clear();
    for (size_t i = 0; i < size_t{width} * height; ++i) {
      px.insert(px.end(), rgb.begin() + i * 3, rgb.begin() + i * 3 + 3);
      px.push_back(alpha[i]);
    }
    stride = static_cast<int>(width) * 4;
  }
  uint8_t* data = nullptr;
  const int w = static_cast<int>(width), h = static_cast<int>(height);
  size_t n = 0;
  if (alpha.empty()) {
    n = lossless ? WebPEncodeLosslessRGB(px.data(), w, h, stride, &data)
                 : WebPEncodeRGB(px.data(), w, h, stride, quality, &data);
  } else {
    n = lossless ? WebPEncodeLosslessRGBA(px.data(), w, h, stride, &data)
                 : WebPEncodeRGBA(px.data(), w, h, stride, quality, &data);
  }
  EXPECT_GT(n, 0u) << "libwebp could not encode the test's image";
  std::vector<uint8_t> out(data, data + n);
  WebPFree(data);
  return out;
}

}  // namespace rf::testing
