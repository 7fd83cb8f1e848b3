// What the ChunkReader tests share (chunk_reader_*_test.cc, one concern each): a positional
// dataset of 1x32x32 samples in 64 KiB chunks, O_DIRECT-aligned buffers, a check of every chunk
// read against pread's copy, its checksum and its samples' own indices, and the fixture most
// tests start from.
#pragma once

#include <gtest/gtest.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "io/uring_queue.h"
#include "tests/io/fake_io_queue.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {

// Samples are positional (tests/testing/positional_data.h), 1x32x32 uint8, labels i % 10.
constexpr uint32_t kSampleBytes = 32 * 32;
constexpr uint64_t kChunkBytes = 64 << 10;  // so a chunk takes 4 reads of kReadBytes
constexpr uint32_t kReadBytes = 16 << 10;

// Writes n such samples in `shards` shards of kChunkBytes chunks to `path`, compressed with
// `codec` (format version 2) where one is given.
void WriteReaderDataset(const std::string& path, uint64_t n, uint32_t shards, CodecSpec codec = {});

// `count` buffers of `bytes` each, 4096-aligned as O_DIRECT needs, filled with 0xee.
class AlignedBuffers {
 public:
  AlignedBuffers(size_t count, size_t bytes);
  std::span<const iovec> iovecs() const { return iov_; }
  const uint8_t* data(size_t i) const { return static_cast<const uint8_t*>(iov_[i].iov_base); }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::vector<std::unique_ptr<uint8_t, Free>> owned_;
  std::vector<iovec> iov_;
};

// Checks one chunk as read against pread's copy, its checksum and its samples' own indices; a
// compressed chunk (its stored extent, as read) against its checksum, then decompressed, its data
// against Dataset::ReadChunk's and its samples' indices. Returns "" or what went wrong.
std::string CheckChunk(const Dataset& d, uint64_t chunk, const uint8_t* got);

// Reads every chunk once, keeping every slot busy, checking each as it lands. Returns "" or
// what went wrong. Usable where gtest assertions are not (a death-test child).
std::string ReadAndCheckAll(ChunkReader& r, const Dataset& d, const AlignedBuffers& bufs,
                            uint32_t wait_min = 1);

// Whether a file in `dir` can be opened with O_DIRECT.
bool DirectIoWorksIn(const std::string& dir);

// Skips the test where this kernel or sandbox has no io_uring (liburing's test habit).
#define RF_REQUIRE_IO_URING()                                                               \
  do {                                                                                      \
    auto probe = ::rf::UringQueue::Create(1);                                               \
    if (!probe.ok()) GTEST_SKIP() << "io_uring unavailable: " << probe.status().ToString(); \
  } while (0)

class ChunkReaderTest : public ::testing::Test {
 protected:
  // 3 shards of 2500 samples at 63 a chunk: 40 chunks of 64 KiB but the last (of data: stored
  // compressed with codec_, where a fixture sets one).
  void SetUp() override;

  // Reads of every chunk when none is cut short: a chunk of n bytes takes ceil(n / read).
  uint64_t PlainReadCount(uint32_t read_bytes) const;

  // A reader over the fake queue (*fake points at it), or null after a test failure.
  std::unique_ptr<ChunkReader> WithFake(FakeIoQueue** fake, const AlignedBuffers& bufs,
                                        ReaderOptions o, uint32_t capacity = 64);

  static ReaderOptions Buffered(uint32_t depth = 4);

  CodecSpec codec_ = {};
  TempDir dir_;
  std::unique_ptr<Dataset> dataset_;
};

}  // namespace rf::testing
