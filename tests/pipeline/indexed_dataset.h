// A dataset whose every sample encodes its own index, for the pipeline's tests: each sample is 64
// bytes of uint64 words all equal to the sample's global index, and its label is index % 10, so
// a misplaced, repeated or lost sample shows.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "io/dataset_writer.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {

constexpr uint32_t kSampleWords = 8;

// `n` samples of 1x8x8 uint8 (64 bytes) in chunks of `chunk_bytes`, written to t/name.
inline std::string MakeIndexedDataset(const TempDir& t, uint64_t n, uint32_t shards,
                                      uint64_t chunk_bytes = 8192,
                                      const std::string& name = "f.rfd") {
  DatasetSpec spec;
  spec.channels = 1;
  spec.height = 8;
  spec.width = 8;
  spec.num_classes = 10;
  WriterOptions o;
  o.shards = shards;
  o.chunk_bytes = chunk_bytes;
  auto w = DatasetWriter::Create(t.File(name), spec, o);
  EXPECT_TRUE(w.ok());
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t s[kSampleWords];
    for (auto& v : s) v = i;
    uint8_t l = static_cast<uint8_t>(i % 10);
    EXPECT_TRUE((*w)->Append(s, &l, 1).ok());
  }
  EXPECT_TRUE((*w)->Finish().ok());
  return t.File(name);
}

// The index a sample of that dataset encodes (its first word).
inline uint64_t SampleIndex(const uint8_t* sample) {
  uint64_t v;
  std::memcpy(&v, sample, sizeof v);
  return v;
}

}  // namespace rf::testing
