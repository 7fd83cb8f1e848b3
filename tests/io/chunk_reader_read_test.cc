// ChunkReader reads every chunk exactly: with io_uring (O_DIRECT and buffered) and with pread,
// whole-chunk reads waited for many at once, on a thread other than its creator, and Wait
// returning fewer chunks than asked when fewer are outstanding.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "io/chunk_reader.h"
#include "tests/io/chunk_reader_testing.h"

namespace rf::testing {
namespace {

TEST_F(ChunkReaderTest, ReadsEveryChunkExactlyWithIoUringDirect) {
  RF_REQUIRE_IO_URING();
  AlignedBuffers bufs(8, kChunkBytes);
  ReaderOptions o = Buffered(4);  // 8 chunks of 4 reads outstanding: 32 reads for 4 places
  o.mode = IoMode::kDirect;
  auto r = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_STREQ((*r)->backend(), "io_uring");
  if (DirectIoWorksIn(dir_.path())) {
    EXPECT_EQ((*r)->mode(), IoMode::kDirect);
  }
  EXPECT_EQ(ReadAndCheckAll(**r, *dataset_, bufs), "");
}

TEST_F(ChunkReaderTest, ReadsEveryChunkExactlyWithIoUringBuffered) {
  RF_REQUIRE_IO_URING();
  AlignedBuffers bufs(8, kChunkBytes);
  auto r = ChunkReader::Create(*dataset_, bufs.iovecs(), Buffered(4));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_STREQ((*r)->backend(), "io_uring");
  EXPECT_EQ((*r)->mode(), IoMode::kBuffered);
  EXPECT_EQ(ReadAndCheckAll(**r, *dataset_, bufs), "");
}

TEST_F(ChunkReaderTest, ReadsEveryChunkExactlyWithPread) {
  AlignedBuffers bufs(5, kChunkBytes);
  ReaderOptions o = Buffered(3);
  o.mode = IoMode::kPread;
  auto r = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_STREQ((*r)->backend(), "pread");
  EXPECT_EQ((*r)->mode(), IoMode::kPread);
  EXPECT_EQ(ReadAndCheckAll(**r, *dataset_, bufs), "");
}

TEST_F(ChunkReaderTest, ReadsEveryChunkWhenWaitingForManyAtOnceWithWholeChunkReads) {
  RF_REQUIRE_IO_URING();
  AlignedBuffers bufs(6, kChunkBytes);
  ReaderOptions o = Buffered(16);
  o.mode = IoMode::kDirect;
  o.read_bytes = 1 << 20;  // larger than a chunk: one read each
  auto r = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadAndCheckAll(**r, *dataset_, bufs, /*wait_min=*/6), "");
}

TEST_F(ChunkReaderTest, ReadsOnAnIoThreadOtherThanItsCreator) {
  RF_REQUIRE_IO_URING();
  AlignedBuffers bufs(4, kChunkBytes);
  ReaderOptions o = Buffered(8);
  o.mode = IoMode::kDirect;
  auto r = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string err = "not run";
  std::thread io([&] { err = ReadAndCheckAll(**r, *dataset_, bufs); });
  io.join();
  EXPECT_EQ(err, "");
}

TEST_F(ChunkReaderTest, WaitReturnsFewerWhenFewerAreOutstanding) {
  AlignedBuffers bufs(4, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered());
  std::vector<ChunkDone> done;
  ASSERT_TRUE(r->Wait(done, 0).ok());
  ASSERT_TRUE(r->Wait(done, 3).ok());  // nothing outstanding: returns at once
  EXPECT_TRUE(done.empty());
  ASSERT_TRUE(r->Submit(7, 2).ok());
  ASSERT_TRUE(r->Submit(8, 0).ok());
  EXPECT_EQ(r->outstanding(), 2u);
  ASSERT_TRUE(r->Wait(done, 4).ok());
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(r->outstanding(), 0u);
  for (const ChunkDone& c : done) {
    EXPECT_EQ(c.slot, c.chunk == 7 ? 2u : 0u);
    EXPECT_EQ(CheckChunk(*dataset_, c.chunk, bufs.data(c.slot)), "");
  }
}

}  // namespace
}  // namespace rf::testing
