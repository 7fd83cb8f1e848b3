// Big-endian fields (IDX headers and data) and in-place byte swapping. ringfeed runs on
// little-endian hosts only (x86-64 and aarch64 Linux), so "host order" means little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rf::convert {

inline uint32_t LoadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline void StoreBigEndian32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
inline void StoreLittleEndian16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

// Reverses the bytes of each of n elements of elem_size bytes (1, 2, 4 or 8; 1 is a no-op).
void SwapBytes(void* data, size_t elem_size, size_t n);

}  // namespace rf::convert
