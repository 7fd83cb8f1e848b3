// inspect and verify: a dataset's header in words, and a full read of every chunk: its checksum,
// and where it is stored compressed, its frame decompressed to the size its index declares.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "io/dataset.h"

namespace rf::convert {

// Several lines: files and sizes, format version, record kind, codec (and how many chunks are
// stored compressed), the chunks' data and stored bytes and their ratio, shape, dtypes, classes
// (or "no labels"), samples, chunks, shards, chunk size, per-channel mean and std (or why there
// are none: ids). A directory's lines start with its parts, in order, each with its samples,
// chunks, files, version and codec; its header's lines are the combined dataset's.
std::string DescribeDataset(const Dataset& dataset);

struct VerifyReport {
  uint64_t chunks = 0;
  uint64_t samples = 0;
  uint64_t compressed = 0;  // chunks decompressed (stored compressed)
  double seconds = 0;
};
// Reads every chunk (dataset_chunks.h's checks); the first bad one is the error (file, chunk,
// offset).
Result<VerifyReport> VerifyDataset(const Dataset& dataset, bool progress);

}  // namespace rf::convert
