// The tests' random numbers: a SplitMix64 stream (the converter's SplitMix64, tools/convert/
// splitmix.h, which is also the sequence model/model.cc draws initial parameters from), so
// the same seed gives the same draws on every platform and compiler, unlike <random>'s
// distributions.
#pragma once

#include <cstdint>

#include "tools/convert/splitmix.h"

namespace rf::testing {

class TestRng {
 public:
  explicit TestRng(uint64_t seed) : s_(seed) {}
  // The state advances by SplitMix64's increment; each draw mixes the new state.
  uint64_t Next() {
    const uint64_t z = convert::SplitMix64(s_);
    s_ += kIncrement;
    return z;
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(Next() % n); }

 private:
  static constexpr uint64_t kIncrement = 0x9e3779b97f4a7c15ull;
  uint64_t s_;
};

}  // namespace rf::testing
