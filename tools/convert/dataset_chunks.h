// ForEachChunk: reads a dataset's chunks in order (each verified against its checksum) and hands
// each one's samples and labels to a callback; one chunk in memory at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "io/dataset.h"
#include "tools/convert/elem_type.h"

namespace rf::convert {

struct ChunkView {
  uint64_t index = 0;         // global chunk number
  uint64_t first_sample = 0;  // global index of its first sample
  uint32_t count = 0;
  uint64_t stored_bytes = 0;
  const uint8_t* samples = nullptr;  // count x SampleBytes(), stored dtype
  const uint8_t* labels = nullptr;   // count x LabelBytes(), label dtype
};

// The n labels of a chunk (stored label dtype `from`) as elements of type `to`, in *out.
void LabelsAs(DType from, const uint8_t* labels, uint32_t n, Elem to, std::vector<uint8_t>* out);

Status ForEachChunk(const Dataset& dataset, const std::function<Status(const ChunkView&)>& fn);

}  // namespace rf::convert
