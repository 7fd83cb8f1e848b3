// Bit-for-bit comparison of model tensors (parameters, momentum, gradients), for the tests that
// claim determinism or exact round trips: equal floats are not enough there (-0.f == 0.f, and a
// NaN is not equal to itself).
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include "model/model.h"

namespace rf::testing {

// Success where a and b hold the same tensors of the same sizes with the same bits; otherwise
// the first difference (use as EXPECT_TRUE(BitIdentical(a, b)) or EXPECT_FALSE).
inline ::testing::AssertionResult BitIdentical(const Tensors& a, const Tensors& b) {
  if (a.t.size() != b.t.size()) {
    return ::testing::AssertionFailure() << a.t.size() << " tensors against " << b.t.size();
  }
  for (size_t i = 0; i < a.t.size(); ++i) {
    if (a.t[i].size() != b.t[i].size()) {
      return ::testing::AssertionFailure()
             << "tensor " << i << " has " << a.t[i].size() << " values against " << b.t[i].size();
    }
    for (size_t j = 0; j < a.t[i].size(); ++j) {
      if (std::memcmp(&a.t[i][j], &b.t[i][j], sizeof(float)) != 0) {
        return ::testing::AssertionFailure() << "tensor " << i << " differs first at value " << j
                                             << ": " << a.t[i][j] << " against " << b.t[i][j];
      }
    }
  }
  return ::testing::AssertionSuccess() << "the " << a.t.size() << " tensors are bit-identical";
}

}  // namespace rf::testing
