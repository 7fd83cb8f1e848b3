#include "tools/convert/sample_layout.h"

#include <cstring>

namespace rf::convert {
namespace {

// One transpose of a (rows x cols) matrix of elements per sample, for each of n samples.
template <size_t kSize>
void TransposeEach(const uint8_t* src, uint8_t* dst, uint64_t n, uint64_t rows, uint64_t cols) {
  const uint64_t per = rows * cols * kSize;
  for (uint64_t s = 0; s < n; ++s) {
    const uint8_t* in = src + s * per;
    uint8_t* out = dst + s * per;
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint64_t c = 0; c < cols; ++c) {
        std::memcpy(out + (c * rows + r) * kSize, in + (r * cols + c) * kSize, kSize);
      }
    }
  }
}

void Transpose(const void* src, void* dst, uint64_t n, uint64_t rows, uint64_t cols,
               size_t elem_size) {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  switch (elem_size) {
    case 1:
      return TransposeEach<1>(s, d, n, rows, cols);
    case 2:
      return TransposeEach<2>(s, d, n, rows, cols);
    case 4:
      return TransposeEach<4>(s, d, n, rows, cols);
    default:
      return TransposeEach<8>(s, d, n, rows, cols);
  }
}

}  // namespace

// H x W x C is a (H*W) x C matrix; its transpose C x (H*W) is C x H x W.
void HwcToChw(const void* src, void* dst, uint64_t n, uint32_t c, uint32_t h, uint32_t w,
              size_t elem_size) {
  Transpose(src, dst, n, uint64_t{h} * w, c, elem_size);
}

void ChwToHwc(const void* src, void* dst, uint64_t n, uint32_t c, uint32_t h, uint32_t w,
              size_t elem_size) {
  Transpose(src, dst, n, c, uint64_t{h} * w, elem_size);
}

}  // namespace rf::convert
