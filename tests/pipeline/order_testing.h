// The epoch order's settings as the order tests write them: the shuffle on or off, the window W,
// the first window, the seed, and this rank of world_size (the rest OrderSettings's defaults).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/order_settings.h"

namespace rf::testing {

inline OrderSettings Order(bool shuffle, uint32_t window, uint32_t first_window, uint64_t seed,
                           uint32_t rank = 0, uint32_t world_size = 1) {
  OrderSettings o;
  o.shuffle = shuffle ? ShuffleMode::kWindow : ShuffleMode::kNone;
  o.shuffle_window = window;
  o.first_window_chunks = first_window;
  o.seed = seed;
  o.rank = rank;
  o.world_size = world_size;
  return o;
}

// `chunks` chunk sample counts drawn uniformly from [lo, hi] (records of any size: chunks filled
// to a byte size hold varied counts).
inline std::vector<uint32_t> Varied(uint32_t chunks, uint32_t lo, uint32_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> count(lo, hi);
  std::vector<uint32_t> l(chunks);
  for (uint32_t& c : l) c = count(rng);
  return l;
}

}  // namespace rf::testing
