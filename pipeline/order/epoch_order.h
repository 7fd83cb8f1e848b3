// EpochOrder: the order in which one epoch visits a dataset's samples. It is a function of
// (sample count, seed, epoch) alone, so a resumed run recomputes the order of the epoch it stopped
// in from a checkpoint's (seed, epoch) and continues at the stored position.
//
// The permutation is a Fisher-Yates shuffle driven by std::mt19937_64 seeded through
// std::seed_seq with (seed, epoch). Both are fully specified by the standard; the bounded draws
// use our own rejection sampling instead of std::uniform_int_distribution (whose algorithm is
// left to each standard library), so the order is the same with any compiler.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace rf {

// A permutation of [0, n) for epoch `epoch` of a run seeded with `seed`.
std::vector<uint64_t> EpochOrder(uint64_t n, uint64_t seed, uint64_t epoch);

// A permutation of [0, n) drawn the same way from any number of 64-bit seed words (EpochOrder is
// SeededPermutation(n, {seed, epoch})).
std::vector<uint64_t> SeededPermutation(uint64_t n, std::initializer_list<uint64_t> words);

}  // namespace rf
