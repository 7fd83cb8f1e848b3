#include "io/uring_queue.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "io/file.h"
#include "io/sync_queue.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

// A file of `pages` 4 KiB pages whose every 8-byte word holds its own byte offset.
std::string WritePositionFile(const TempDir& t, uint32_t pages) {
  std::vector<uint64_t> words(pages * 4096 / 8);
  for (size_t i = 0; i < words.size(); ++i) words[i] = i * 8;
  std::string path = t.File("pos.bin");
  testing::WriteAll(path, words.data(), words.size() * 8);
  return path;
}

void ExpectPositions(const uint8_t* buf, uint32_t len, uint64_t offset) {
  for (uint32_t i = 0; i < len; i += 8) {
    uint64_t v;
    std::memcpy(&v, buf + i, 8);
    ASSERT_EQ(v, offset + i) << "at byte " << offset + i;
  }
}

struct Free {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuf = std::unique_ptr<uint8_t, Free>;
AlignedBuf Aligned(size_t n) {
  return AlignedBuf(static_cast<uint8_t*>(std::aligned_alloc(4096, n)));
}

std::unique_ptr<UringQueue> MakeQueue(uint32_t depth) {
  auto q = UringQueue::Create(depth);
  if (!q.ok()) return nullptr;
  return std::move(q).value();
}

#define SKIP_WITHOUT_IO_URING(q) \
  if (!(q)) GTEST_SKIP() << "io_uring unavailable: " << UringQueue::Create(1).status().ToString()

TEST(UringQueue, ReadsIntoRegisteredBuffersThroughRegisteredFilesWithODirect) {
  auto q = MakeQueue(8);
  SKIP_WITHOUT_IO_URING(q);
  TempDir t;
  std::string path = WritePositionFile(t, 16);
  auto f = File::Open(path, O_RDONLY | O_DIRECT);
  if (!f.ok()) f = File::Open(path, O_RDONLY);  // a file system without O_DIRECT
  ASSERT_TRUE(f.ok());
  int fd = f->fd();
  ASSERT_TRUE(q->RegisterFiles({&fd, 1}).ok());
  AlignedBuf mem = Aligned(16 * 4096);
  iovec iov{mem.get(), 16 * 4096};
  Status reg = q->RegisterBuffers({&iov, 1});
  EXPECT_EQ(reg.ok(), q->buffers_registered());
  // Eight reads of two pages each, in reverse file order.
  for (uint32_t i = 0; i < 8; ++i) {
    IoRequest r;
    r.buf = mem.get() + i * 8192;
    r.len = 8192;
    r.offset = (7 - i) * 8192;
    r.buf_index = reg.ok() ? 0 : -1;
    r.user_data = 100 + i;
    q->Prepare(r);
  }
  ASSERT_TRUE(q->Submit().ok());
  std::vector<IoCompletion> out;
  ASSERT_TRUE(q->Wait(out, 8).ok());
  ASSERT_EQ(out.size(), 8u);
  std::sort(out.begin(), out.end(),
            [](const IoCompletion& a, const IoCompletion& b) { return a.user_data < b.user_data; });
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(out[i].user_data, 100 + i);
    EXPECT_EQ(out[i].res, 8192);
    ExpectPositions(mem.get() + i * 8192, 8192, (7 - i) * 8192);
  }
}

TEST(UringQueue, ReportsNegativeErrnoInTheCompletionWhenAReadFails) {
  auto q = MakeQueue(2);
  SKIP_WITHOUT_IO_URING(q);
  TempDir t;
  std::string path = WritePositionFile(t, 1);
  auto f = File::Open(path, O_WRONLY);  // reading a write-only fd: EBADF
  ASSERT_TRUE(f.ok());
  int fd = f->fd();
  ASSERT_TRUE(q->RegisterFiles({&fd, 1}).ok());
  std::vector<uint8_t> buf(4096);
  q->Prepare(IoRequest{0, buf.data(), 4096, 0, -1, 7});
  ASSERT_TRUE(q->Submit().ok());
  std::vector<IoCompletion> out;
  ASSERT_TRUE(q->Wait(out, 1).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].user_data, 7u);
  EXPECT_EQ(out[0].res, -EBADF);
}

TEST(UringQueue, ReturnsShortCountAtEndOfFile) {
  auto q = MakeQueue(2);
  SKIP_WITHOUT_IO_URING(q);
  TempDir t;
  std::string path = WritePositionFile(t, 2);
  auto f = File::Open(path, O_RDONLY);
  ASSERT_TRUE(f.ok());
  int fd = f->fd();
  ASSERT_TRUE(q->RegisterFiles({&fd, 1}).ok());
  std::vector<uint8_t> buf(8192);
  q->Prepare(IoRequest{0, buf.data(), 8192, 4096, -1, 1});  // one page left
  q->Prepare(IoRequest{0, buf.data(), 4096, 8192, -1, 2});  // none left
  ASSERT_TRUE(q->Submit().ok());
  std::vector<IoCompletion> out;
  ASSERT_TRUE(q->Wait(out, 2).ok());
  ASSERT_EQ(out.size(), 2u);
  for (const IoCompletion& c : out) EXPECT_EQ(c.res, c.user_data == 1 ? 4096 : 0);
}

TEST(UringQueue, WorksFromAThreadOtherThanItsCreator) {
  auto q = MakeQueue(4);
  SKIP_WITHOUT_IO_URING(q);
  TempDir t;
  std::string path = WritePositionFile(t, 4);
  auto f = File::Open(path, O_RDONLY);
  ASSERT_TRUE(f.ok());
  int fd = f->fd();
  ASSERT_TRUE(q->RegisterFiles({&fd, 1}).ok());
  std::vector<uint8_t> buf(4 * 4096);
  Status st;
  std::vector<IoCompletion> out;
  // With SINGLE_ISSUER the ring belongs to the thread that first submits, not its creator.
  std::thread io([&] {
    for (uint32_t i = 0; i < 4; ++i)
      q->Prepare(IoRequest{0, &buf[i * 4096], 4096, i * 4096, -1, i});
    st = q->Submit();
    if (st.ok()) st = q->Wait(out, 4);
  });
  io.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(out.size(), 4u);
  ExpectPositions(buf.data(), 4 * 4096, 0);
}

TEST(UringQueue, WaitWithMinZeroCollectsFinishedReadsWithoutBlocking) {
  auto q = MakeQueue(4);
  SKIP_WITHOUT_IO_URING(q);
  TempDir t;
  std::string path = WritePositionFile(t, 4);
  auto f = File::Open(path, O_RDONLY);
  ASSERT_TRUE(f.ok());
  int fd = f->fd();
  ASSERT_TRUE(q->RegisterFiles({&fd, 1}).ok());
  std::vector<IoCompletion> out;
  ASSERT_TRUE(q->Wait(out, 0).ok());  // nothing in flight, nothing to wait for
  EXPECT_TRUE(out.empty());
  std::vector<uint8_t> buf(4 * 4096);
  for (uint32_t i = 0; i < 4; ++i) q->Prepare(IoRequest{0, &buf[i * 4096], 4096, i * 4096, -1, i});
  ASSERT_TRUE(q->Submit().ok());
  // Polling must make progress even where completions are posted only on entering the kernel
  // (DEFER_TASKRUN).
  for (int spin = 0; out.size() < 4 && spin < 100000; ++spin) ASSERT_TRUE(q->Wait(out, 0).ok());
  EXPECT_EQ(out.size(), 4u);
}

// Rings made and closed one after another on threads that never synchronize (a finished feeder
// nobody joined yet, and the next feeder): the kernel tends to map the second ring where the
// first was. Under ThreadSanitizer this fails unless the queue tells TSan a new ring's memory is
// new (liburing maps it out of TSan's sight): TSan took the first thread's writes to the old
// ring's completion head for a race with the second thread's reads of the new one's. Elsewhere
// it checks that both read right.
TEST(UringQueue, RingsOfThreadsThatNeverSynchronizeAreEachTheirOwn) {
  auto probe = MakeQueue(1);
  SKIP_WITHOUT_IO_URING(probe);
  probe.reset();
  TempDir t;
  const std::string path = WritePositionFile(t, 2);
  auto f = File::Open(path, O_RDONLY);
  ASSERT_TRUE(f.ok());
  const int fd = f->fd();
  // One ring, one read of page `page`, the ring closed; on the calling thread.
  auto read_page = [fd](uint32_t page, std::vector<uint8_t>& buf, Status& st) {
    auto q = MakeQueue(2);
    if (!q) {
      st = Status::IOError("", "io_uring setup failed");
      return;
    }
    int fds[] = {fd};
    st = q->RegisterFiles(fds);
    q->Prepare(IoRequest{0, buf.data(), 4096, page * 4096ull, -1, page});
    if (st.ok()) st = q->Submit();
    std::vector<IoCompletion> out;
    if (st.ok()) st = q->Wait(out, 1);
    if (st.ok() && (out.size() != 1 || out[0].res != 4096)) st = Status::IOError("", "short");
  };
  std::vector<uint8_t> first(4096), second(4096);
  Status first_st, second_st;
  // Relaxed: no happens-before between the threads, as between two feeders' threads.
  std::atomic<bool> first_done{false};
  std::thread a([&] {
    read_page(0, first, first_st);
    first_done.store(true, std::memory_order_relaxed);
  });
  while (!first_done.load(std::memory_order_relaxed)) std::this_thread::yield();
  std::thread b([&] { read_page(1, second, second_st); });
  b.join();
  a.join();
  ASSERT_TRUE(first_st.ok()) << first_st.ToString();
  ASSERT_TRUE(second_st.ok()) << second_st.ToString();
  ExpectPositions(first.data(), 4096, 0);
  ExpectPositions(second.data(), 4096, 4096);
}

TEST(SyncQueue, CompletesEveryReadAtSubmitInOrder) {
  TempDir t;
  std::string path = WritePositionFile(t, 3);
  auto f = File::Open(path, O_RDONLY);
  ASSERT_TRUE(f.ok());
  int fd = f->fd();
  SyncQueue q(4);
  EXPECT_STREQ(q.name(), "pread");
  ASSERT_TRUE(q.RegisterFiles({&fd, 1}).ok());
  iovec iov{nullptr, 0};
  EXPECT_FALSE(q.RegisterBuffers({&iov, 1}).ok());
  std::vector<uint8_t> buf(3 * 4096);
  q.Prepare(IoRequest{0, &buf[0], 4096, 8192, -1, 1});
  q.Prepare(IoRequest{0, &buf[4096], 8192, 8192, -1, 2});  // short: one page left
  ASSERT_TRUE(q.Submit().ok());
  std::vector<IoCompletion> out;
  ASSERT_TRUE(q.Wait(out, 2).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].user_data, 1u);
  EXPECT_EQ(out[0].res, 4096);
  EXPECT_EQ(out[1].res, 4096);
  ExpectPositions(buf.data(), 4096, 8192);
}

TEST(SyncQueue, ReportsNegativeErrnoAndRefusesToWaitForReadsNeverSubmitted) {
  TempDir t;
  std::string path = WritePositionFile(t, 1);
  auto f = File::Open(path, O_WRONLY);
  ASSERT_TRUE(f.ok());
  int fd = f->fd();
  SyncQueue q(2);
  ASSERT_TRUE(q.RegisterFiles({&fd, 1}).ok());
  std::vector<uint8_t> buf(4096);
  q.Prepare(IoRequest{0, buf.data(), 4096, 0, -1, 9});
  ASSERT_TRUE(q.Submit().ok());
  std::vector<IoCompletion> out;
  Status st = q.Wait(out, 2);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.ToString(), "pread queue: waiting for 2 completions with 1 requests submitted");
  ASSERT_TRUE(q.Wait(out, 1).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].res, -EBADF);
}

}  // namespace
}  // namespace rf
