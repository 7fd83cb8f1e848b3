// The checksum of the dataset format: XXH3-64 (libxxhash), with the widest vector code the CPU
// runs. Debian's libxxhash is built for baseline x86-64 (SSE2, about 8 GB/s on one core here);
// the AVX2 build of the same function runs about twice as fast, and every chunk of every epoch
// is checksummed, so the reader picks it at run time where the CPU has AVX2. Every variant
// computes the same XXH3-64 value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rf {

uint64_t Checksum(const void* data, size_t n);

// The variants, for tests: the library's own, and "avx2" (present where the CPU has AVX2).
uint64_t ChecksumBaseline(const void* data, size_t n);
const char* ChecksumVariant();  // "avx2" or "baseline": what Checksum uses

}  // namespace rf
