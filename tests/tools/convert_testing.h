// Helpers for the ringfeed-convert tests: input files whose every sample encodes its own index,
// in each input format, and a way to run a subcommand in-process.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/status.h"

namespace rf::testing {

// n samples of `sample_bytes` bytes: sample i holds i (little-endian, 4 bytes) and then
// (i * 7 + k) & 0xff at byte k, so any misplaced or reordered sample shows.
std::vector<uint8_t> PositionalBytes(uint64_t n, uint64_t sample_bytes);
// n samples of `elems` floats: element k of sample i is i * 1000 + k (exact in float32).
std::vector<float> PositionalFloats(uint64_t n, uint64_t elems);
// Label of sample i in the test inputs.
inline uint8_t PositionalLabel(uint64_t i) { return static_cast<uint8_t>(i % 10); }
std::vector<uint8_t> PositionalLabels(uint64_t n);

// An IDX file: header (type code, big-endian dims) then payload, which must already be
// big-endian for multi-byte types.
std::vector<uint8_t> IdxBytes(uint8_t type, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& payload);
// float32 values in IDX's big-endian byte order.
std::vector<uint8_t> BigEndianFloats(const std::vector<float>& v);
void WriteGzip(const std::string& path, const std::vector<uint8_t>& bytes);
// An .npy file exactly as numpy 1.x/2.x np.save writes it (format 1.0).
std::vector<uint8_t> NpyBytes(const std::string& descr, const std::vector<uint64_t>& shape,
                              const void* data, size_t bytes);

// Runs `ringfeed-convert args...` in-process (the library's RunCommand); usage errors become an
// InvalidArgument Status starting "usage: ".
Status Convert(const std::vector<std::string>& args, std::string* out = nullptr);
// The status failed and its one-line message contains `fragment`.
::testing::AssertionResult FailsWith(const Status& st, const std::string& fragment);

// The names in a directory, sorted.
std::vector<std::string> FilesIn(const std::string& dir);

}  // namespace rf::testing
