// ForEachChunk: reads a dataset's chunks in order and hands each one's data (its samples and
// labels) to a callback. Each chunk is checked before the callback sees it: its checksum over the
// stored extent, then, where it is stored compressed, its frame decompressed to exactly the data
// size its index entry declares, then its labels against the class count; the first failure is
// the error, naming file, chunk and offset. Memory is one chunk's data and, where the dataset has
// compressed chunks, one stored extent, whatever the dataset's size; each shard file is opened
// once.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "io/codec.h"
#include "io/dataset.h"
#include "tools/convert/elem_type.h"

namespace rf::convert {

struct ChunkView {
  uint64_t index = 0;         // global chunk number (a directory's: over all its parts)
  uint64_t first_sample = 0;  // global index of its first sample (likewise)
  uint32_t count = 0;
  uint64_t stored_bytes = 0;         // on disk (compressed or not)
  Codec codec = Codec::kNone;        // how it was stored
  const uint8_t* samples = nullptr;  // count x SampleBytes(), stored dtype
  const uint8_t* labels = nullptr;   // count x LabelBytes(), label dtype
  // Records of any size: `samples` is the chunk's record table (count + 1 uint64 byte offsets
  // into `records`, checked), and `records` the records back to back. Null for tensors.
  const uint8_t* records = nullptr;
};

// The n labels of a chunk (stored label dtype `from`) as elements of type `to`, in *out.
void LabelsAs(DType from, const uint8_t* labels, uint32_t n, Elem to, std::vector<uint8_t>* out);

// Every chunk's stored extent, in bytes (compressed or not, padding included): what the chunks
// occupy on disk, beside Dataset::data_bytes(), what they hold.
uint64_t StoredChunkBytes(const Dataset& dataset);

// The view's pointers are valid during the callback only.
Status ForEachChunk(const Dataset& dataset, const std::function<Status(const ChunkView&)>& fn);

}  // namespace rf::convert
