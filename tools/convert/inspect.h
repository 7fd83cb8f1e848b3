// inspect and verify: a dataset's header in words, and a full read of every chunk against its
// checksum.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "io/dataset.h"

namespace rf::convert {

// Several lines: files and sizes, shape, dtypes, classes (or "no labels"), samples, chunks,
// shards, chunk size, per-channel mean and std (or why there are none: ids).
std::string DescribeDataset(const Dataset& dataset);

struct VerifyReport {
  uint64_t chunks = 0;
  uint64_t samples = 0;
  double seconds = 0;
};
// Reads every chunk; the first bad one is the error (file, chunk, offset).
Result<VerifyReport> VerifyDataset(const Dataset& dataset, bool progress);

}  // namespace rf::convert
