#include "tools/convert/transpose.h"

#include <algorithm>
#include <cstring>

namespace rf::convert {
namespace {

// GCC and clang vector extensions: SSE on x86-64, NEON on aarch64, from the same source.
typedef uint32_t U32x4 __attribute__((vector_size(16)));

inline U32x4 Load(const uint32_t* p) {
  U32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store(uint32_t* p, U32x4 v) { std::memcpy(p, &v, sizeof v); }

// The 4x4 tile at in (row stride is) to out (row stride os), transposed.
inline void Tile4x4(const uint32_t* in, uint64_t is, uint32_t* out, uint64_t os) {
  const U32x4 a = Load(in), b = Load(in + is), c = Load(in + 2 * is), d = Load(in + 3 * is);
  const U32x4 ab_lo = __builtin_shufflevector(a, b, 0, 4, 1, 5);
  const U32x4 ab_hi = __builtin_shufflevector(a, b, 2, 6, 3, 7);
  const U32x4 cd_lo = __builtin_shufflevector(c, d, 0, 4, 1, 5);
  const U32x4 cd_hi = __builtin_shufflevector(c, d, 2, 6, 3, 7);
  Store(out, __builtin_shufflevector(ab_lo, cd_lo, 0, 1, 4, 5));
  Store(out + os, __builtin_shufflevector(ab_lo, cd_lo, 2, 3, 6, 7));
  Store(out + 2 * os, __builtin_shufflevector(ab_hi, cd_hi, 0, 1, 4, 5));
  Store(out + 3 * os, __builtin_shufflevector(ab_hi, cd_hi, 2, 3, 6, 7));
}

}  // namespace

void Transpose4(const void* in_v, uint64_t in_stride, void* out_v, uint64_t out_stride,
                uint64_t rows, uint64_t cols) {
  // Bands of kBand rows, each walked in stripes of kStripe columns (a 64-byte line of each input
  // row): a band's input lines and the stripe's output rows stay in L1 and the TLB, so every
  // line is read once and written once, whatever the strides.
  constexpr uint64_t kBand = 64, kStripe = 16;
  const auto* in = static_cast<const uint32_t*>(in_v);
  auto* out = static_cast<uint32_t*>(out_v);
  for (uint64_t r0 = 0; r0 < rows; r0 += kBand) {
    const uint64_t r1 = std::min(rows, r0 + kBand);
    const uint64_t r4 = r0 + (r1 - r0) / 4 * 4;
    for (uint64_t c0 = 0; c0 < cols; c0 += kStripe) {
      const uint64_t c1 = std::min(cols, c0 + kStripe);
      const uint64_t c4 = c0 + (c1 - c0) / 4 * 4;
      for (uint64_t r = r0; r < r4; r += 4) {
        for (uint64_t c = c0; c < c4; c += 4) {
          Tile4x4(in + r * in_stride + c, in_stride, out + c * out_stride + r, out_stride);
        }
        for (uint64_t c = c4; c < c1; ++c) {
          for (uint64_t k = r; k < r + 4; ++k) out[c * out_stride + k] = in[k * in_stride + c];
        }
      }
      for (uint64_t r = r4; r < r1; ++r) {
        for (uint64_t c = c0; c < c1; ++c) out[c * out_stride + r] = in[r * in_stride + c];
      }
    }
  }
}

}  // namespace rf::convert
