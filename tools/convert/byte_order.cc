#include "tools/convert/byte_order.h"

#include <cstring>

namespace rf::convert {

void SwapBytes(void* data, size_t elem_size, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  switch (elem_size) {
    case 2:
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        v = __builtin_bswap16(v);
        std::memcpy(p + 2 * i, &v, 2);
      }
      return;
    case 4:
      for (size_t i = 0; i < n; ++i) {
        uint32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        v = __builtin_bswap32(v);
        std::memcpy(p + 4 * i, &v, 4);
      }
      return;
    case 8:
      for (size_t i = 0; i < n; ++i) {
        uint64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        v = __builtin_bswap64(v);
        std::memcpy(p + 8 * i, &v, 8);
      }
      return;
    default:
      return;
  }
}

}  // namespace rf::convert
