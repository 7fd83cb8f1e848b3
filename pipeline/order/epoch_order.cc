#include "pipeline/order/epoch_order.h"

#include <numeric>
#include <random>
#include <utility>

namespace rf {
namespace {

// Uniform in [0, bound) (bound >= 1): rejects the top partial range so every value is equally
// likely.
uint64_t Below(std::mt19937_64& g, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;  // a multiple of bound
  uint64_t v;
  do {
    v = g();
  } while (v >= limit);
  return v % bound;
}

}  // namespace

std::vector<uint64_t> EpochOrder(uint64_t n, uint64_t seed, uint64_t epoch) {
  return SeededPermutation(n, {seed, epoch});
}

std::vector<uint64_t> SeededPermutation(uint64_t n, std::initializer_list<uint64_t> words) {
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::vector<uint32_t> halves;
  for (uint64_t w : words) {
    halves.push_back(static_cast<uint32_t>(w));
    halves.push_back(static_cast<uint32_t>(w >> 32));
  }
  std::seed_seq seq(halves.begin(), halves.end());
  std::mt19937_64 g(seq);
  for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[Below(g, i)]);
  return order;
}

}  // namespace rf
