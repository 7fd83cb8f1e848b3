// The read faults of issue 15 through the shipped fault layer (FaultyIoQueue, io/faulty_io_queue.h)
// over each real queue, io_uring and pread: a short read is continued; EAGAIN and EINTR are
// retried; a transient EIO (the destination scribbled on each time) is retried and the chunk holds
// the file's bytes; a persistent EIO stops the reader naming file, chunk, byte offset, errno and
// the attempts made; reordered completions and a delayed read lose nothing and change no byte.
// Every chunk is checked against pread's copy, its checksum and its samples' own indices. The same
// on a compressed dataset (format version 2): the stored extents read, verified and decompressed.
#include "io/faulty_io_queue.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "io/chunk_reader.h"
#include "io/sync_queue.h"
#include "io/uring_queue.h"
#include "tests/io/chunk_reader_testing.h"

namespace rf::testing {
namespace {

enum class Inner { kUring, kPread };

std::string QueueName(const ::testing::TestParamInfo<Inner>& info) {
  return info.param == Inner::kUring ? "io_uring" : "pread";
}

class FaultyIoQueueTest : public ChunkReaderTest, public ::testing::WithParamInterface<Inner> {
 protected:
  // A reader over a FaultyIoQueue following `spec` over the parameter's real queue; *faulty
  // points at the fault layer. Null after a test failure.
  std::unique_ptr<ChunkReader> WithFaults(const std::string& spec, const AlignedBuffers& bufs,
                                          const ReaderOptions& o, FaultyIoQueue** faulty) {
    std::unique_ptr<IoQueue> inner;
    if (GetParam() == Inner::kUring) {
      auto uring = UringQueue::Create(o.queue_depth);
      if (!uring.ok()) return nullptr;
      inner = std::move(uring).value();
    } else {
      inner = std::make_unique<SyncQueue>(o.queue_depth);
    }
    Result<FaultPlan> plan = ParseFaultPlan(spec);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return nullptr;
    auto q = std::make_unique<FaultyIoQueue>(std::move(inner), std::move(plan).value());
    *faulty = q.get();
    auto r = ChunkReader::CreateWithQueue(*dataset_, bufs.iovecs(), o, std::move(q));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  void SetUp() override {
    if (GetParam() == Inner::kUring) RF_REQUIRE_IO_URING();
    ChunkReaderTest::SetUp();
  }

  // Reads every chunk once through a fault layer following `spec`: "" or what went wrong
  // (ReadAndCheckAll). *fired: the requests it answered with a fault.
  std::string ReadAllThrough(const std::string& spec, const ReaderOptions& o, uint64_t* fired) {
    AlignedBuffers bufs(4, kChunkBytes);
    FaultyIoQueue* q = nullptr;
    auto r = WithFaults(spec, bufs, o, &q);  // destroyed before bufs
    if (r == nullptr) return "no reader";
    const std::string result = ReadAndCheckAll(*r, *dataset_, bufs);
    *fired = q->faults_fired();
    return result;
  }

  // Submits chunks 0 to 3, one read each, through a fault layer following `spec`, and waits
  // for them `min` at a time, checking each as it lands: the order they completed in.
  std::vector<uint64_t> CompletionOrder(const std::string& spec, uint32_t min) {
    AlignedBuffers bufs(4, kChunkBytes);
    FaultyIoQueue* q = nullptr;
    auto r = WithFaults(spec, bufs, WholeChunkReads(), &q);
    std::vector<uint64_t> order;
    if (r == nullptr) return order;
    for (uint32_t s = 0; s < 4; ++s) EXPECT_TRUE(r->Submit(s, s).ok());
    std::vector<ChunkDone> done;
    while (done.size() < 4) {
      Status st = r->Wait(done, min);
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (!st.ok()) break;
    }
    for (const ChunkDone& d : done) {
      order.push_back(d.chunk);
      EXPECT_EQ(CheckChunk(*dataset_, d.chunk, bufs.data(d.slot)), "");
    }
    return order;
  }

  // One read a chunk, so a chunk's requests are one read's attempts.
  static ReaderOptions WholeChunkReads() {
    ReaderOptions o = Buffered();
    o.read_bytes = kChunkBytes;
    return o;
  }
};

TEST_P(FaultyIoQueueTest, ShortReadsAreContinued) {
  uint64_t fired = 0;
  EXPECT_EQ(ReadAllThrough("read:short=100@chunk=3;read:short=4096@chunk=5,times=3;"
                           "read:short=1@chunk=9,attempt=2",
                           Buffered(), &fired),
            "");
  EXPECT_EQ(fired, 5u);
}

TEST_P(FaultyIoQueueTest, EAgainAndEIntrAreRetried) {
  uint64_t fired = 0;
  EXPECT_EQ(ReadAllThrough("read:eagain@chunk=2,times=5;read:eintr@chunk=11,times=3",
                           WholeChunkReads(), &fired),
            "");
  EXPECT_EQ(fired, 8u);
}

// Each failed attempt fills the destination with 0xa5 first; the chunk must still come out as
// the file's bytes, so nothing of a failed attempt survives into a batch.
TEST_P(FaultyIoQueueTest, TransientEioIsRetriedAndTheChunkHoldsTheFilesBytes) {
  uint64_t fired = 0;
  EXPECT_EQ(ReadAllThrough("read:eio@chunk=4,times=2;read:eio@chunk=30,times=3", WholeChunkReads(),
                           &fired),
            "");
  EXPECT_EQ(fired, 5u);
}

// (That the reader then stays failed: chunk_reader_faults_test.cc.)
TEST_P(FaultyIoQueueTest, PersistentEioStopsNamingFileChunkOffsetAndAttempts) {
  uint64_t fired = 0;
  const auto& c5 = dataset_->chunk(5);
  EXPECT_EQ(ReadAllThrough("read:eio@chunk=5,times=always", WholeChunkReads(), &fired),
            dataset_->shard_path(c5.shard) + ": chunk 5 at byte " +
                std::to_string(c5.entry.offset) +
                ": read failed after 4 attempts: Input/output error (errno 5)");
  EXPECT_EQ(fired, 4u);  // the read and its 3 retries, then no more
}

TEST_P(FaultyIoQueueTest, ReorderedCompletionsLoseNothing) {
  // Four chunks in flight come back out of their submission order, each whole.
  std::vector<uint64_t> order = CompletionOrder("read:reorder", 4);
  EXPECT_NE(order, (std::vector<uint64_t>{0, 1, 2, 3}));
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, (std::vector<uint64_t>{0, 1, 2, 3}));
  // And the whole dataset, with chunks cut into several reads.
  uint64_t fired = 0;
  EXPECT_EQ(ReadAllThrough("read:reorder", Buffered(), &fired), "");
}

// A slow read holds back its own chunk only: the chunks submitted with it come first, and then
// it comes, whole. (The order, not the time, is checked: the delay only has to outlast reads
// from the page cache.)
TEST_P(FaultyIoQueueTest, ADelayedReadHoldsBackOnlyItsChunk) {
  const std::vector<uint64_t> order = CompletionOrder("read:delay=300ms@chunk=1", 1);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order.back(), 1u);
}

// The same faults on a compressed dataset (format version 2, zstd): a chunk's stored extent is
// what is read, a few KiB where its data is 64 KiB, and it must come out exactly as on disk, so
// that it verifies and decompresses to the chunk's data (CheckChunk).
class CompressedFaultyIoQueueTest : public FaultyIoQueueTest {
 protected:
  CompressedFaultyIoQueueTest() { codec_ = {Codec::kZstd, 3}; }
};

TEST_P(CompressedFaultyIoQueueTest, TheDatasetIsCompressed) {
  EXPECT_EQ(dataset_->compressed_chunks(), dataset_->chunk_count());
  EXPECT_LT(dataset_->max_stored_bytes(), kChunkBytes);
  uint64_t fired = 0;
  EXPECT_EQ(ReadAllThrough("", Buffered(), &fired), "");
  EXPECT_EQ(fired, 0u);
}

TEST_P(CompressedFaultyIoQueueTest, ShortReadsAreContinuedAndTheFramesDecompress) {
  uint64_t fired = 0;
  EXPECT_EQ(ReadAllThrough("read:short=100@chunk=3;read:short=1@chunk=5,times=3;"
                           "read:short=512@chunk=9,attempt=2;read:short=4000@times=always",
                           Buffered(), &fired),
            "");
  EXPECT_GE(fired, 5u);
}

TEST_P(CompressedFaultyIoQueueTest, EAgainEIntrAndTransientEioAreRetriedAndTheFramesDecompress) {
  uint64_t fired = 0;
  EXPECT_EQ(ReadAllThrough("read:eagain@chunk=2,times=5;read:eintr@chunk=11,times=3;"
                           "read:eio@chunk=4,times=3;read:eio@chunk=30,times=2",
                           WholeChunkReads(), &fired),
            "");
  EXPECT_EQ(fired, 13u);
}

TEST_P(CompressedFaultyIoQueueTest, PersistentEioStopsNamingFileChunkOffsetAndAttempts) {
  uint64_t fired = 0;
  const auto& c6 = dataset_->chunk(6);
  EXPECT_EQ(ReadAllThrough("read:eio@chunk=6,times=always", WholeChunkReads(), &fired),
            dataset_->shard_path(c6.shard) + ": chunk 6 at byte " +
                std::to_string(c6.entry.offset) +
                ": read failed after 4 attempts: Input/output error (errno 5)");
  EXPECT_EQ(fired, 4u);
}

TEST_P(CompressedFaultyIoQueueTest, ReorderedAndDelayedCompletionsLoseNothing) {
  uint64_t fired = 0;
  EXPECT_EQ(ReadAllThrough("read:delay=50ms@chunk=1;read:reorder", Buffered(), &fired), "");
}

INSTANTIATE_TEST_SUITE_P(OverEachQueue, CompressedFaultyIoQueueTest,
                         ::testing::Values(Inner::kUring, Inner::kPread), QueueName);

INSTANTIATE_TEST_SUITE_P(OverEachQueue, FaultyIoQueueTest,
                         ::testing::Values(Inner::kUring, Inner::kPread), QueueName);

// RINGFEED_FAULTS unset: ChunkReader::Create's queue is the plain one (nothing wrapped); set, the
// shipped reader fails as the plan says; malformed, Create says what is wrong.
TEST_F(ChunkReaderTest, CreateWrapsItsQueueOnlyWhenRingfeedFaultsIsSet) {
  AlignedBuffers bufs(4, kChunkBytes);
  ReaderOptions o = Buffered();
  o.mode = IoMode::kPread;
  ::unsetenv(kFaultsEnv);
  auto plain = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(ReadAndCheckAll(**plain, *dataset_, bufs), "");

  ::setenv(kFaultsEnv, "read:eio@chunk=2,times=always", 1);
  auto faulty = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ::setenv(kFaultsEnv, "read:eio@chunk", 1);
  auto malformed = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ::unsetenv(kFaultsEnv);
  ASSERT_TRUE(faulty.ok());
  EXPECT_STREQ((*faulty)->backend(), "pread");
  const std::string err = ReadAndCheckAll(**faulty, *dataset_, bufs);
  EXPECT_NE(err.find(": chunk 2 at byte "), std::string::npos) << err;
  EXPECT_NE(err.find("read failed after 4 attempts: Input/output error (errno 5)"),
            std::string::npos)
      << err;
  ASSERT_FALSE(malformed.ok());
  EXPECT_TRUE(malformed.status().IsUsage());
  EXPECT_EQ(malformed.status().ToString(),
            "RINGFEED_FAULTS: rule \"read:eio@chunk\": unknown condition \"chunk\": expected "
            "chunk=N, attempt=N, times=N|always or after=N");
}

}  // namespace
}  // namespace rf::testing
