// XXH3-64 compiled for AVX2: libxxhash's header in its inline mode, built with -mavx2 (see
// io/CMakeLists.txt). Only called where the CPU has AVX2 (io/checksum.cc checks).
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

#include <cstddef>
#include <cstdint>

namespace rf {

uint64_t ChecksumAvx2(const void* data, size_t n) { return XXH3_64bits(data, n); }

}  // namespace rf
