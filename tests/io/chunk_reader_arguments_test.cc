// What ChunkReader refuses, and the message it refuses it with: Submit of a chunk or slot out of
// range, into a slot too small or still being read; Create with buffers unaligned for O_DIRECT
// or a read size that is not a whole number of pages; an unknown I/O mode name.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "io/chunk_reader.h"
#include "tests/io/chunk_reader_testing.h"

namespace rf::testing {
namespace {

TEST_F(ChunkReaderTest, SubmitRejectsChunkOutOfRange) {
  AlignedBuffers bufs(2, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered());
  const std::string n = std::to_string(dataset_->chunk_count());
  Status st = r->Submit(dataset_->chunk_count(), 0);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.ToString(), "chunk " + n + " is out of range: the dataset has " + n + " chunks");
  EXPECT_EQ(r->outstanding(), 0u);
}

TEST_F(ChunkReaderTest, SubmitRejectsSlotOutOfRange) {
  AlignedBuffers bufs(2, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered());
  Status st = r->Submit(0, 2);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.ToString(), "slot 2 is out of range: the reader has 2 buffers");
}

TEST_F(ChunkReaderTest, SubmitRejectsSlotTooSmallForTheChunk) {
  AlignedBuffers big(1, kChunkBytes), small(1, 4096);
  std::vector<iovec> iov = {big.iovecs()[0], small.iovecs()[0]};
  auto r =
      ChunkReader::CreateWithQueue(*dataset_, iov, Buffered(), std::make_unique<FakeIoQueue>(8));
  ASSERT_TRUE(r.ok());
  Status st = (*r)->Submit(0, 1);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.ToString(), "slot 1 holds 4096 bytes; chunk 0 needs 65536");
}

TEST_F(ChunkReaderTest, SubmitRejectsSlotStillBeingRead) {
  AlignedBuffers bufs(2, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered());
  ASSERT_TRUE(r->Submit(3, 1).ok());
  Status st = r->Submit(4, 1);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.ToString(), "slot 1 is still being read (chunk 3)");
  std::vector<ChunkDone> done;
  ASSERT_TRUE(r->Wait(done, 1).ok());  // the refusal did not disturb the read under way
  EXPECT_EQ(CheckChunk(*dataset_, 3, bufs.data(1)), "");
}

TEST_F(ChunkReaderTest, CreateRejectsUnalignedBuffersForDirectIo) {
  AlignedBuffers bufs(1, 2 * kChunkBytes);
  std::vector<iovec> iov = {{const_cast<uint8_t*>(bufs.data(0)) + 512, kChunkBytes}};
  ReaderOptions o = Buffered();
  o.mode = IoMode::kDirect;
  auto r = ChunkReader::Create(*dataset_, iov, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_EQ(r.status().ToString(),
            "buffer 0 (65536 bytes) must be 4096-aligned and a multiple of 4096 long for "
            "O_DIRECT");
}

TEST_F(ChunkReaderTest, CreateRejectsReadSizeNotAMultipleOfThePage) {
  AlignedBuffers bufs(1, kChunkBytes);
  ReaderOptions o = Buffered();
  o.read_bytes = 5000;
  auto r = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(), "read size 5000 must be a multiple of 4096 and at most 1 GiB");
}

TEST(IoMode, ParsesItsNamesAndRejectsOthers) {
  for (IoMode m : {IoMode::kDirect, IoMode::kBuffered, IoMode::kPread}) {
    auto p = ParseIoMode(IoModeName(m));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, m);
  }
  auto bad = ParseIoMode("mmap");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().ToString(),
            "unknown I/O mode \"mmap\": expected direct, buffered or pread");
}

}  // namespace
}  // namespace rf::testing
