#include "io/checksum.h"

#include <xxhash.h>

namespace rf {

#if defined(__x86_64__)
uint64_t ChecksumAvx2(const void* data, size_t n);  // io/checksum_avx2.cc, built with -mavx2
#endif

namespace {

using Fn = uint64_t (*)(const void*, size_t);

Fn Pick() {
#if defined(__x86_64__)
  __builtin_cpu_init();  // may run before libgcc's own constructor has
  if (__builtin_cpu_supports("avx2")) return ChecksumAvx2;
#endif
  return ChecksumBaseline;
}

Fn Chosen() {
  static const Fn fn = Pick();
  return fn;
}

}  // namespace

uint64_t ChecksumBaseline(const void* data, size_t n) { return XXH3_64bits(data, n); }

uint64_t Checksum(const void* data, size_t n) { return Chosen()(data, n); }

const char* ChecksumVariant() { return Chosen() == ChecksumBaseline ? "baseline" : "avx2"; }

}  // namespace rf
