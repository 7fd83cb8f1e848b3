// What ChunkReader asks of its I/O queue, watched through the fake queue: never more reads in
// flight than the queue depth or the queue's capacity, and registered buffers where the queue
// takes them (and plain addresses where told not to register).
#include <gtest/gtest.h>

#include <memory>

#include "io/chunk_reader.h"
#include "tests/io/chunk_reader_testing.h"

namespace rf::testing {
namespace {

TEST_F(ChunkReaderTest, NeverExceedsQueueDepthWhenQueueHasRoomForMore) {
  AlignedBuffers bufs(8, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered(3), /*capacity=*/64);
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_EQ(fake->max_in_flight(), 3u);
  EXPECT_EQ(fake->requests(), PlainReadCount(kReadBytes));
}

TEST_F(ChunkReaderTest, NeverExceedsQueueCapacityWhenBelowQueueDepth) {
  AlignedBuffers bufs(8, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered(16), /*capacity=*/2);
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_EQ(fake->max_in_flight(), 2u);
}

TEST_F(ChunkReaderTest, UsesRegisteredBuffersWhereTheQueueTakesThem) {
  AlignedBuffers bufs(4, kChunkBytes);
  auto q = std::make_unique<FakeIoQueue>(8, /*register_buffers=*/false);
  auto r = ChunkReader::CreateWithQueue(*dataset_, bufs.iovecs(), Buffered(), std::move(q));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadAndCheckAll(**r, *dataset_, bufs), "");  // plain addresses work as well
}

TEST_F(ChunkReaderTest, LeavesBuffersUnregisteredWhenToldTo) {
  AlignedBuffers bufs(4, kChunkBytes);
  FakeIoQueue* fake;
  {
    auto registered = WithFake(&fake, bufs, Buffered());
    EXPECT_TRUE(fake->buffers_registered());  // the default
  }
  ReaderOptions o = Buffered();
  o.register_buffers = false;
  auto r = WithFake(&fake, bufs, o);
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_FALSE(fake->buffers_registered());
}

}  // namespace
}  // namespace rf::testing
