// Small, fast, seedable generators: SplitMix64 (a 64-bit mixer, also used to seed and to hash)
// and xoshiro256** (the per-sample stream of the synthetic generator). Both are deterministic
// on every platform, which is what makes generated datasets reproducible from their seed.
#pragma once

#include <cstdint>

namespace rf::convert {

constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Xoshiro256 {
 public:
  // Seeds from (seed, stream): different streams of one seed are independent.
  Xoshiro256(uint64_t seed, uint64_t stream) {
    uint64_t x = SplitMix64(seed) ^ SplitMix64(stream * 0xd1b54a32d192ed03ull + 1);
    for (uint64_t& w : s_) {
      x += 0x9e3779b97f4a7c15ull;
      w = SplitMix64(x);
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1p-53; }

 private:
  static constexpr uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace rf::convert
