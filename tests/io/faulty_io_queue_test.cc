// The read faults of issue 15 through the shipped fault layer (FaultyIoQueue, io/faulty_io_queue.h)
// over each real queue, io_uring and pread: a short read is continued; EAGAIN and EINTR are
// retried; a transient EIO (the destination scribbled on each time) is retried and the chunk holds
// the file's bytes; a persistent EIO stops the reader naming file, chunk, byte offset, errno and
// the attempts made; reordered completions and a delayed read lose nothing and change no byte.
// Every chunk is checked against pread's copy, its checksum and its samples' own indices.
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

  // One read a chunk, so a chunk's requests are one read's attempts.
  static ReaderOptions WholeChunkReads() {
    ReaderOptions o = Buffered();
    o.read_bytes = kChunkBytes;
    return o;
  }
};

TEST_P(FaultyIoQueueTest, ShortReadsAreContinued) {
  AlignedBuffers bufs(4, kChunkBytes);
  FaultyIoQueue* q;
  auto r = WithFaults(
      "read:short=100@chunk=3;read:short=4096@chunk=5,times=3;read:short=1@chunk=9,"
      "attempt=2",
      bufs, Buffered(), &q);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_EQ(q->faults_fired(), 5u);
}

TEST_P(FaultyIoQueueTest, EAgainAndEIntrAreRetried) {
  AlignedBuffers bufs(4, kChunkBytes);
  FaultyIoQueue* q;
  auto r = WithFaults("read:eagain@chunk=2,times=5;read:eintr@chunk=11,times=3", bufs,
                      WholeChunkReads(), &q);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_EQ(q->faults_fired(), 8u);
}

// Each failed attempt fills the destination with 0xa5 first; the chunk must still come out as
// the file's bytes, so nothing of a failed attempt survives into a batch.
TEST_P(FaultyIoQueueTest, TransientEioIsRetriedAndTheChunkHoldsTheFilesBytes) {
  AlignedBuffers bufs(4, kChunkBytes);
  FaultyIoQueue* q;
  auto r =
      WithFaults("read:eio@chunk=4,times=2;read:eio@chunk=30,times=3", bufs, WholeChunkReads(), &q);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_EQ(q->faults_fired(), 5u);
}

TEST_P(FaultyIoQueueTest, PersistentEioStopsNamingFileChunkOffsetAndAttempts) {
  AlignedBuffers bufs(4, kChunkBytes);
  FaultyIoQueue* q;
  auto r = WithFaults("read:eio@chunk=5,times=always", bufs, WholeChunkReads(), &q);
  ASSERT_NE(r, nullptr);
  const auto& c5 = dataset_->chunk(5);
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs),
            dataset_->shard_path(c5.shard) + ": chunk 5 at byte " +
                std::to_string(c5.entry.offset) +
                ": read failed after 4 attempts: Input/output error (errno 5)");
  EXPECT_EQ(q->faults_fired(), 4u);  // the read and its 3 retries, then no more
  // The reader stays failed.
  std::vector<ChunkDone> done;
  EXPECT_TRUE(r->Wait(done, 1).IsIOError());
  EXPECT_TRUE(r->Submit(0, 0).IsIOError());
}

TEST_P(FaultyIoQueueTest, ReorderedCompletionsLoseNothing) {
  AlignedBuffers bufs(4, kChunkBytes);
  FaultyIoQueue* q;
  auto r = WithFaults("read:reorder", bufs, WholeChunkReads(), &q);
  ASSERT_NE(r, nullptr);
  // Four chunks in flight come back out of their submission order, each whole.
  for (uint32_t s = 0; s < 4; ++s) ASSERT_TRUE(r->Submit(s, s).ok());
  std::vector<ChunkDone> done;
  ASSERT_TRUE(r->Wait(done, 4).ok());
  std::vector<uint64_t> order;
  for (const ChunkDone& d : done) {
    order.push_back(d.chunk);
    EXPECT_EQ(CheckChunk(*dataset_, d.chunk, bufs.data(d.slot)), "");
  }
  EXPECT_NE(order, (std::vector<uint64_t>{0, 1, 2, 3}));
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, (std::vector<uint64_t>{0, 1, 2, 3}));
  // And the whole dataset, with chunks cut into several reads.
  AlignedBuffers more(4, kChunkBytes);
  auto all = WithFaults("read:reorder", more, Buffered(), &q);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(ReadAndCheckAll(*all, *dataset_, more), "");
}

// A slow read holds back its own chunk only: the chunks submitted with it come first, and then
// it comes, whole. (The order, not the time, is checked: the delay only has to outlast reads
// from the page cache.)
TEST_P(FaultyIoQueueTest, ADelayedReadHoldsBackOnlyItsChunk) {
  AlignedBuffers bufs(4, kChunkBytes);
  FaultyIoQueue* q;
  auto r = WithFaults("read:delay=300ms@chunk=1", bufs, WholeChunkReads(), &q);
  ASSERT_NE(r, nullptr);
  for (uint32_t s = 0; s < 4; ++s) ASSERT_TRUE(r->Submit(s, s).ok());
  std::vector<ChunkDone> done;
  while (done.size() < 4) ASSERT_TRUE(r->Wait(done, 1).ok());
  EXPECT_EQ(done.back().chunk, 1u);
  for (const ChunkDone& d : done) EXPECT_EQ(CheckChunk(*dataset_, d.chunk, bufs.data(d.slot)), "");
  EXPECT_EQ(q->faults_fired(), 1u);
}

INSTANTIATE_TEST_SUITE_P(OverEachQueue, FaultyIoQueueTest,
                         ::testing::Values(Inner::kUring, Inner::kPread), [](const auto& info) {
                           return std::string(info.param == Inner::kUring ? "io_uring" : "pread");
                         });

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
