// Reads Debian's dataset-fashion-mnist (gzipped IDX files) for tests and benchmarks that need real
// images: 28x28 uint8 pixels and uint8 labels in [0, 10).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tests/testing/temp_dir.h"  // FashionMnistDir

namespace rf::testing {

struct FashionMnist {
  uint32_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count x rows x cols
  std::vector<uint8_t> labels;  // count
};

// The first `limit` samples (all if 0) of <dir>/<prefix>-images-idx3-ubyte.gz and
// <prefix>-labels-idx1-ubyte.gz, prefix "train" or "t10k". NotFound when a file is missing;
// Corruption, naming the file, when a header or length is wrong.
Result<FashionMnist> LoadFashionMnist(const std::string& dir, const std::string& prefix,
                                      uint32_t limit);

}  // namespace rf::testing
