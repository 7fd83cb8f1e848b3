// What the `ringfeed train` command tests share: a small dataset that can be learned, and the
// command line that trains it quickly on the CPU.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset_writer.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {

// 300 samples (or `samples`) of 1x12x12 in 4 classes; pixels encode the index, and the class sets
// a bright quadrant so the model has something to learn. `o` may name a codec and a format
// version (chunk_bytes is set here), `name` the file.
inline std::string MakeDataset(const TempDir& t, uint32_t samples = 300, WriterOptions o = {},
                               const std::string& name = "s.rfd") {
  DatasetSpec spec;
  spec.height = spec.width = 12;
  spec.num_classes = 4;
  o.chunk_bytes = 8192;
  auto w = DatasetWriter::Create(t.File(name), spec, o);
  EXPECT_TRUE(w.ok());
  std::vector<uint8_t> s(144);
  for (uint32_t i = 0; i < samples; ++i) {
    const uint8_t label = static_cast<uint8_t>(i % 4);
    for (uint32_t k = 0; k < 144; ++k) {
      const bool lit = (k / 12 < 6) == (label < 2) && (k % 12 < 6) == (label % 2 == 0);
      s[k] = static_cast<uint8_t>((i * 7 + k) % 64 + (lit ? 150 : 0));
    }
    EXPECT_TRUE((*w)->Append(s.data(), &label, 1).ok());
  }
  EXPECT_TRUE((*w)->Finish().ok());
  return t.File(name);
}

// The same, stored with `codec` where that saves a block (format version 2 with a codec or
// `version` 2; version 1 otherwise).
inline std::string MakeDataset(const TempDir& t, uint32_t samples, CodecSpec codec,
                               uint32_t version = 0) {
  WriterOptions o;
  o.codec = codec;
  o.version = version;
  return MakeDataset(t, samples, o);
}

inline std::string Train(const std::string& data, const std::string& extra) {
  return ProgramPath("ringfeed") + " train --data " + data +
         " --device cpu --batch-size 32 --conv 4,8 --hidden 16 --seed 9 " + extra;
}

}  // namespace rf::testing
