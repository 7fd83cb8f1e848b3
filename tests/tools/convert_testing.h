// Helpers for the ringfeed-convert tests: input files in each input format (of positional data,
// tests/testing/positional_data.h, so every sample encodes its own index), and a way to run a
// subcommand in-process.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {

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

// Runs `ringfeed-convert args...` in-process (the library's RunCommand): its Status, a command
// line that cannot be run a Usage one.
Status Convert(const std::vector<std::string>& args, std::string* out = nullptr);
// `ringfeed-convert ARGS` (the built program, through the shell), under `timeout` where
// timeout_s is not 0 (so a hang fails the test): its exit code, and stdout and stderr together.
struct ProgramOutcome {
  int rc;
  std::string out;
};
ProgramOutcome RunConverter(const std::string& args, int timeout_s = 0);

// A program run as a child of its own, and what it took: its exit code (128 + the signal where
// one ended it), stdout and stderr together, and its peak resident memory (wait4's ru_maxrss, of
// that child alone, its peak reset at fork: still, what this process holds at the fork counts,
// so a test writes large inputs in pieces, WritePieces). Killed after `timeout_s` seconds
// (SIGKILL).
struct MeasuredRun {
  int rc = -1;
  std::string output;
  uint64_t max_rss_kib = 0;
};
MeasuredRun RunMeasured(const std::vector<std::string>& argv, int timeout_s = 60);
// Writes `path` as the pieces in order, each piece's text `count` times: an input of hundreds of
// megabytes without holding it.
struct Piece {
  std::string text;
  size_t count = 1;
};
void WritePieces(const std::string& path, const std::vector<Piece>& pieces);

// The status failed and its one-line message contains `fragment`.
::testing::AssertionResult FailsWith(const Status& st, const std::string& fragment);
// The same, and the failure is a usage error (exit 2).
::testing::AssertionResult FailsWithUsage(const Status& st, const std::string& fragment);

// The datasets `a` and `b` open and hold the same chunks, however each is stored: the same dtypes,
// shape, classes, sample count, chunk_samples and per-chunk sample counts (so the same order for
// every seed), the same channel statistics bit for bit, and every chunk's data (Dataset::ReadChunk:
// decompressed, samples and labels) byte for byte.
::testing::AssertionResult SameChunks(const std::string& a, const std::string& b);

// What a dataset's chunks take on disk (their stored extents, padding included), and the ratio of
// their data to that as the reports print it, with two decimals ("1.77").
struct StoredSize {
  uint64_t bytes = 0;
  std::string ratio;
};
StoredSize StoredSizeOf(const std::string& dataset);

// Every record of a dataset of records of any size (tokens), in order, its ids widened to int64,
// and, where labels is not null, each record's label.
std::vector<std::vector<int64_t>> TokenRecords(const std::string& dataset,
                                               std::vector<int64_t>* labels = nullptr);

}  // namespace rf::testing
