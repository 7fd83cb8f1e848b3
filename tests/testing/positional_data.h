// Test data that encodes its own position, so a sample or label that is misplaced, repeated or
// lost shows (llm.c's data loader test writes shards this way). One pattern for every suite:
//
//   sample i (uint8 bytes): bytes 0-7 hold i as a little-endian uint64 (fewer where the sample is
//   shorter), byte k >= 8 holds (i * 31 + k) & 0xff, so a byte read from the wrong place shows
//   too; its label is i % classes (PositionalLabel).
//
// WritePositionalDataset writes a ringfeed dataset of such samples; PositionalSamples gives the
// same bytes for input files (ringfeed-convert's tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/codec.h"

namespace rf::testing {

// Fills `bytes` bytes at `out` with sample i.
void PositionalSample(uint64_t i, uint8_t* out, size_t bytes);
// n samples of `sample_bytes` bytes each, back to back.
std::vector<uint8_t> PositionalSamples(uint64_t n, uint64_t sample_bytes);
// The index a sample encodes (its first 8 bytes; the sample must hold at least 8).
inline uint64_t SampleIndex(const uint8_t* sample) {
  uint64_t v;
  std::memcpy(&v, sample, sizeof v);
  return v;
}

// The label of sample i: i % classes.
inline int64_t PositionalLabel(uint64_t i, uint32_t classes = 10) {
  return static_cast<int64_t>(i % classes);
}
// The labels of samples 0..n-1 as uint8 (classes at most 256).
std::vector<uint8_t> PositionalLabels(uint64_t n, uint32_t classes = 10);

// n samples of `elems` floats: element k of sample i is i * 1000 + k (exact in float32 while
// i * 1000 + k < 2^24).
std::vector<float> PositionalFloats(uint64_t n, uint64_t elems);

// The bytes [offset, offset + n) of a positional object (a file served over HTTP): its 8-byte
// word w (little-endian) is w * 0x9E3779B97F4A7C15, so bytes from any other offset differ.
void PositionalObjectBytes(uint64_t offset, uint8_t* out, size_t n);
std::vector<uint8_t> PositionalObject(uint64_t offset, size_t n);

// The shape and layout of a positional dataset (uint8 samples of channels x height x width).
struct PositionalDatasetOptions {
  uint32_t channels = 1, height = 8, width = 8;
  uint32_t classes = 10;              // labels are i % classes; the header's num_classes
  DType label_dtype = DType::kUInt8;  // uint8, uint16 or int32
  uint32_t shards = 1;
  uint64_t chunk_bytes = 8192;
  CodecSpec codec = {};  // where it saves a 4096-byte block, a chunk is stored compressed
  uint32_t version = 0;  // the format version written (WriterOptions::version)
  // The samples written are first_sample .. first_sample + n - 1 (a directory's later part
  // holds the samples after the parts before it: each encodes its global index).
  uint64_t first_sample = 0;
  // The classes' names (DatasetSpec::class_names: `classes` of them, or none).
  std::vector<std::string> class_names = {};
};

// Writes n positional samples (o.first_sample on) to `path` and returns `path`; `files`, where
// given, gets the files written in shard order. Append is called with 11 samples at a time, so its
// many-sample path is used and appends straddle chunk boundaries. A failure adds a test failure.
std::string WritePositionalDataset(const std::string& path, uint64_t n,
                                   const PositionalDatasetOptions& o = {},
                                   std::vector<std::string>* files = nullptr);

}  // namespace rf::testing
