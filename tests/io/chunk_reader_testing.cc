#include "tests/io/chunk_reader_testing.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "tests/testing/positional_data.h"

namespace rf::testing {

void WriteReaderDataset(const std::string& path, uint64_t n, uint32_t shards, CodecSpec codec) {
  WritePositionalDataset(
      path, n,
      {.height = 32, .width = 32, .shards = shards, .chunk_bytes = kChunkBytes, .codec = codec});
}

AlignedBuffers::AlignedBuffers(size_t count, size_t bytes) {
  for (size_t i = 0; i < count; ++i) {
    void* p = std::aligned_alloc(4096, bytes);
    std::memset(p, 0xee, bytes);
    owned_.emplace_back(static_cast<uint8_t*>(p));
    iov_.push_back(iovec{p, bytes});
  }
}

void AlignedBuffers::Free::operator()(uint8_t* p) const { std::free(p); }

namespace {

// A compressed chunk's stored extent, as read: its checksum, then its data.
std::string CheckCompressedChunk(const Dataset& d, uint64_t chunk, const uint8_t* stored) {
  const auto& e = d.chunk(chunk).entry;
  if (Status st = d.VerifyStored(chunk, stored); !st.ok()) return st.ToString();
  std::vector<uint8_t> got(e.data_bytes), want(e.data_bytes);
  Decompressor decompressor;
  if (Status st = d.DecodeChunk(chunk, stored, got.data(), decompressor); !st.ok())
    return st.ToString();
  if (Status st = d.ReadChunk(chunk, want.data()); !st.ok()) return st.ToString();
  if (got != want) return "chunk " + std::to_string(chunk) + " differs from its pread copy";
  for (uint32_t j = 0; j < e.sample_count; ++j) {
    if (SampleIndex(got.data() + j * kSampleBytes) != e.first_sample + j) {
      return "chunk " + std::to_string(chunk) + " sample misplaced";
    }
  }
  return "";
}

}  // namespace

std::string CheckChunk(const Dataset& d, uint64_t chunk, const uint8_t* got) {
  const auto& e = d.chunk(chunk).entry;
  if (e.compressed()) return CheckCompressedChunk(d, chunk, got);
  std::vector<uint8_t> want(e.stored_bytes);
  Status st = d.ReadChunk(chunk, want.data());
  if (!st.ok()) return st.ToString();
  if (std::memcmp(got, want.data(), want.size()) != 0) {
    return "chunk " + std::to_string(chunk) + " differs from its pread copy";
  }
  if (!d.VerifyChunk(chunk, got).ok()) return d.VerifyChunk(chunk, got).ToString();
  for (uint32_t j = 0; j < e.sample_count; ++j) {
    if (SampleIndex(got + j * kSampleBytes) != e.first_sample + j) {
      return "chunk " + std::to_string(chunk) + " sample misplaced";
    }
  }
  return "";
}

std::string ReadAndCheckAll(ChunkReader& r, const Dataset& d, const AlignedBuffers& bufs,
                            uint32_t wait_min) {
  const uint32_t slots = static_cast<uint32_t>(bufs.iovecs().size());
  std::vector<uint32_t> free_slots;
  for (uint32_t s = slots; s-- > 0;) free_slots.push_back(s);
  std::vector<int> seen(d.chunk_count(), 0);
  std::vector<ChunkDone> done;
  uint64_t next = 0, finished = 0;
  while (finished < d.chunk_count()) {
    while (next < d.chunk_count() && !free_slots.empty()) {
      Status st = r.Submit(next++, free_slots.back());
      if (!st.ok()) return st.ToString();
      free_slots.pop_back();
    }
    done.clear();
    Status st = r.Wait(done, wait_min);
    if (!st.ok()) return st.ToString();
    if (done.empty()) return "Wait returned no chunk";
    for (const ChunkDone& c : done) {
      if (++seen[c.chunk] != 1) return "chunk " + std::to_string(c.chunk) + " returned twice";
      std::string err = CheckChunk(d, c.chunk, bufs.data(c.slot));
      if (!err.empty()) return err;
      free_slots.push_back(c.slot);
      ++finished;
    }
  }
  if (r.outstanding() != 0) return "chunks still outstanding at the end";
  return "";
}

bool DirectIoWorksIn(const std::string& dir) {
  std::string p = dir + "/direct-probe";
  WriteAll(p, std::vector<uint8_t>(4096, 1));
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) ::close(fd);
  std::filesystem::remove(p);
  return fd >= 0;
}

void ChunkReaderTest::SetUp() {
  WriteReaderDataset(dir_.File("d.rfd"), 2500, 3, codec_);
  auto d = Dataset::Open(dir_.File("d.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  dataset_ = std::make_unique<Dataset>(std::move(d).value());
  ASSERT_EQ(dataset_->shard_count(), 3u);
  ASSERT_GT(dataset_->chunk_count(), 30u);
  ASSERT_EQ(dataset_->max_chunk_bytes(), kChunkBytes);
}

uint64_t ChunkReaderTest::PlainReadCount(uint32_t read_bytes) const {
  uint64_t n = 0;
  for (size_t c = 0; c < dataset_->chunk_count(); ++c) {
    n += (dataset_->chunk(c).entry.stored_bytes + read_bytes - 1) / read_bytes;
  }
  return n;
}

std::unique_ptr<ChunkReader> ChunkReaderTest::WithFake(FakeIoQueue** fake,
                                                       const AlignedBuffers& bufs, ReaderOptions o,
                                                       uint32_t capacity) {
  auto q = std::make_unique<FakeIoQueue>(capacity);
  *fake = q.get();
  auto r = ChunkReader::CreateWithQueue(*dataset_, bufs.iovecs(), o, std::move(q));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

ReaderOptions ChunkReaderTest::Buffered(uint32_t depth) {
  ReaderOptions o;
  o.mode = IoMode::kBuffered;
  o.queue_depth = depth;
  o.read_bytes = kReadBytes;
  return o;
}

}  // namespace rf::testing
