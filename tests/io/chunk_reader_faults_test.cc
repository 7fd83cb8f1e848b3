// ChunkReader under planted faults: short reads are completed by resubmitting the rest, -EAGAIN
// and -EINTR are retried up to max_retries, -EIO up to max_eio_retries, and anything else (EAGAIN
// or EIO beyond the limit, EBADF, a file shrunk underneath) fails with a message naming the
// shard, chunk, byte offset and errno. (The same faults through the shipped fault layer, over
// real queues: faulty_io_queue_test.cc.)
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "io/chunk_reader.h"
#include "tests/io/chunk_reader_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {
namespace {

TEST_F(ChunkReaderTest, CompletesShortReadsByResubmittingTheRest) {
  AlignedBuffers bufs(4, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered());
  fake->ShortReadAtRequest(0, 100);   // mid-page
  fake->ShortReadAtRequest(5, 4096);  // a page
  const auto& c3 = dataset_->chunk(3);
  // One read cut short twice in a row: 1 byte, then 4095 more, then the rest.
  const uint64_t at = c3.entry.offset + kReadBytes;
  fake->ShortReadAtOffset(c3.shard, at, 1);
  fake->ShortReadAtOffset(c3.shard, at + 1, 4095);
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_EQ(fake->faults_fired(), 4u);
  EXPECT_EQ(fake->requests(), PlainReadCount(kReadBytes) + 4);
}

TEST_F(ChunkReaderTest, RetriesEAgainEIntrAndEioUpToTheirLimits) {
  AlignedBuffers bufs(4, kChunkBytes);
  FakeIoQueue* fake;
  ReaderOptions o = Buffered();
  o.max_retries = 4;
  o.max_eio_retries = 2;
  auto r = WithFake(&fake, bufs, o);
  fake->ErrorAtRequest(0, EAGAIN);
  fake->ErrorAtRequest(2, EINTR);
  fake->ErrorAtRequest(3, EIO);
  const auto& c5 = dataset_->chunk(5);
  fake->ErrorAtOffset(c5.shard, c5.entry.offset, EAGAIN, /*times=*/4);  // exactly the limit
  const auto& c7 = dataset_->chunk(7);
  fake->ErrorAtOffset(c7.shard, c7.entry.offset, EIO, /*times=*/2);  // exactly the limit
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_EQ(fake->faults_fired(), 9u);
}

TEST_F(ChunkReaderTest, FailsWithClearMessageWhenEAgainOutlastsMaxRetries) {
  AlignedBuffers bufs(4, kChunkBytes);
  FakeIoQueue* fake;
  ReaderOptions o = Buffered();
  o.max_retries = 3;
  auto r = WithFake(&fake, bufs, o);
  const auto& c2 = dataset_->chunk(2);
  const uint64_t at = c2.entry.offset + 2 * kReadBytes;
  fake->ErrorAtOffset(c2.shard, at, EAGAIN, FakeIoQueue::kAlways);
  std::string err = ReadAndCheckAll(*r, *dataset_, bufs);
  EXPECT_EQ(err, dataset_->shard_path(2) + ": chunk 2 at byte " + std::to_string(at) +
                     ": read still failing after 3 retries: Resource temporarily unavailable "
                     "(errno 11)");
  EXPECT_EQ(fake->faults_fired(), 4u);  // the read and its 3 retries
}

TEST_F(ChunkReaderTest, ReportsEioWithShardPathChunkOffsetAndErrno) {
  AlignedBuffers bufs(4, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered());
  const auto& c5 = dataset_->chunk(5);
  ASSERT_EQ(c5.shard, 2u);
  const uint64_t at = c5.entry.offset + kReadBytes;
  fake->ErrorAtOffset(c5.shard, at, EIO, FakeIoQueue::kAlways);
  for (uint32_t s = 0; s < 4; ++s) ASSERT_TRUE(r->Submit(4 + s, s).ok());
  std::vector<ChunkDone> done;
  Status st = r->Wait(done, 4);
  ASSERT_TRUE(st.IsIOError());
  EXPECT_EQ(st.path(), dataset_->shard_path(2));
  EXPECT_EQ(st.chunk(), 5u);
  EXPECT_EQ(st.offset(), at);
  EXPECT_EQ(st.err(), EIO);
  EXPECT_EQ(st.ToString(), dataset_->shard_path(2) + ": chunk 5 at byte " + std::to_string(at) +
                               ": read failed after 4 attempts: Input/output error (errno 5)");
  EXPECT_EQ(fake->faults_fired(), 4u);  // the read and its 3 retries
  // The failure is sticky: the reader does not pretend to go on.
  EXPECT_EQ(r->Submit(0, 0).ToString(), st.ToString());
  EXPECT_EQ(r->Wait(done, 1).ToString(), st.ToString());
}

// EBADF (like EINVAL or EFAULT) is no device hiccup: retrying cannot help, so it fails at once.
TEST_F(ChunkReaderTest, FailsAtOnceOnAnErrorARetryCannotFix) {
  AlignedBuffers bufs(4, kChunkBytes);
  FakeIoQueue* fake;
  auto r = WithFake(&fake, bufs, Buffered());
  const auto& c1 = dataset_->chunk(1);
  fake->ErrorAtOffset(c1.shard, c1.entry.offset, EBADF);  // once: a retry would succeed
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs),
            dataset_->shard_path(c1.shard) + ": chunk 1 at byte " +
                std::to_string(c1.entry.offset) + ": read failed: Bad file descriptor (errno 9)");
  EXPECT_EQ(fake->faults_fired(), 1u);
}

TEST_F(ChunkReaderTest, ReportsFileShrunkUnderneathAsUnexpectedEndOfFile) {
  const auto& c4 = dataset_->chunk(4);
  const uint64_t cut = c4.entry.offset + 8192;  // inside chunk 4
  Truncate(dataset_->shard_path(c4.shard), cut);
  for (IoMode mode : {IoMode::kBuffered, IoMode::kPread}) {
    SCOPED_TRACE(IoModeName(mode));
    AlignedBuffers bufs(2, kChunkBytes);
    ReaderOptions o = Buffered();
    o.mode = mode;
    o.read_bytes = kChunkBytes;  // one read: short at the cut, then nothing
    auto r = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE((*r)->Submit(4, 1).ok());
    std::vector<ChunkDone> done;
    Status st = (*r)->Wait(done, 1);
    EXPECT_TRUE(st.IsCorruption());
    EXPECT_EQ(st.ToString(), dataset_->shard_path(c4.shard) + ": chunk 4 at byte " +
                                 std::to_string(cut) + ": unexpected end of file");
  }
}

// A directory's chunks are numbered over all its parts; an error names the part's file and the
// chunk as that file's index numbers it, as the file's own checks do.
TEST(ChunkReaderDirectory, ReadErrorsNameThePartsFileAndItsOwnChunkNumber) {
  TempDir dir;
  WriteReaderDataset(dir.File("a.rfd"), 2500, 3);  // 40 chunks in 3 files
  WriteReaderDataset(dir.File("b.rfd"), 300, 1);   // 5 chunks
  auto d = Dataset::Open(dir.path());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->part(1).first_chunk, 40u);
  const uint64_t global = 41;  // b.rfd's chunk 1
  const ChunkLocation& c = d->chunk(global);
  ASSERT_EQ(d->shard_path(c.shard), dir.File("b.rfd"));
  ASSERT_EQ(c.entry.index, 1u);
  AlignedBuffers bufs(2, kChunkBytes);
  ReaderOptions o;
  o.mode = IoMode::kBuffered;  // temporary directories may be on tmpfs (no O_DIRECT)
  o.read_bytes = kChunkBytes;
  {
    auto q = std::make_unique<FakeIoQueue>(64);
    q->ErrorAtOffset(c.shard, c.entry.offset, EBADF);
    auto r = ChunkReader::CreateWithQueue(*d, bufs.iovecs(), o, std::move(q));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE((*r)->Submit(global, 0).ok());
    std::vector<ChunkDone> done;
    const Status st = (*r)->Wait(done, 1);
    EXPECT_EQ(st.ToString(), dir.File("b.rfd") + ": chunk 1 at byte " +
                                 std::to_string(c.entry.offset) +
                                 ": read failed: Bad file descriptor (errno 9)");
  }
  const uint64_t cut = c.entry.offset + 8192;
  Truncate(dir.File("b.rfd"), cut);
  auto r = ChunkReader::Create(*d, bufs.iovecs(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE((*r)->Submit(global, 1).ok());
  std::vector<ChunkDone> done;
  const Status st = (*r)->Wait(done, 1);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_EQ(st.ToString(), dir.File("b.rfd") + ": chunk 1 at byte " + std::to_string(cut) +
                               ": unexpected end of file");
}

}  // namespace
}  // namespace rf::testing
