// Per-sample layout changes between channel-major (C x H x W, what a dataset stores) and
// channel-last (H x W x C, what image libraries and "nhwc" .npy files hold).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rf::convert {

// Converts n samples; elem_size is 1, 2, 4 or 8. src and dst must not overlap.
void HwcToChw(const void* src, void* dst, uint64_t n, uint32_t c, uint32_t h, uint32_t w,
              size_t elem_size);
void ChwToHwc(const void* src, void* dst, uint64_t n, uint32_t c, uint32_t h, uint32_t w,
              size_t elem_size);

}  // namespace rf::convert
