#include "io/chunk_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "io/uring_queue.h"
#include "tests/io/fake_io_queue.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::FakeIoQueue;
using testing::TempDir;

// Sample i is 1x32x32 uint8: its first 8 bytes hold i (little-endian), byte k >= 8 holds
// (i * 31 + k) & 0xff; its label is i % 10. A byte read from the wrong place shows.
constexpr uint32_t kSampleBytes = 32 * 32;
constexpr uint64_t kChunkBytes = 64 << 10;  // so a chunk takes 4 reads of kReadBytes
constexpr uint32_t kReadBytes = 16 << 10;

void MakeSample(uint64_t i, uint8_t* out) {
  for (uint32_t k = 0; k < kSampleBytes; ++k) out[k] = static_cast<uint8_t>(i * 31 + k);
  std::memcpy(out, &i, 8);
}

void WriteDataset(const std::string& path, uint64_t n, uint32_t shards) {
  DatasetSpec spec;
  spec.height = 32;
  spec.width = 32;
  spec.num_classes = 10;
  WriterOptions opts;
  opts.shards = shards;
  opts.chunk_bytes = kChunkBytes;
  auto w = DatasetWriter::Create(path, spec, opts);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<uint8_t> s(kSampleBytes);
  for (uint64_t i = 0; i < n; ++i) {
    MakeSample(i, s.data());
    uint8_t label = static_cast<uint8_t>(i % 10);
    ASSERT_TRUE((*w)->Append(s.data(), &label, 1).ok());
  }
  Status st = (*w)->Finish();
  ASSERT_TRUE(st.ok()) << st.ToString();
}

// `count` buffers of `bytes` each, 4096-aligned as O_DIRECT needs.
class AlignedBuffers {
 public:
  AlignedBuffers(size_t count, size_t bytes) {
    for (size_t i = 0; i < count; ++i) {
      void* p = std::aligned_alloc(4096, bytes);
      std::memset(p, 0xee, bytes);
      owned_.emplace_back(static_cast<uint8_t*>(p));
      iov_.push_back(iovec{p, bytes});
    }
  }
  std::span<const iovec> iovecs() const { return iov_; }
  const uint8_t* data(size_t i) const { return static_cast<const uint8_t*>(iov_[i].iov_base); }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<uint8_t, Free>> owned_;
  std::vector<iovec> iov_;
};

// Checks one chunk as read against pread's copy, its checksum and its samples' own numbers.
std::string CheckChunk(const Dataset& d, uint64_t chunk, const uint8_t* got) {
  const auto& e = d.chunk(chunk).entry;
  std::vector<uint8_t> want(e.stored_bytes);
  Status st = d.ReadChunk(chunk, want.data());
  if (!st.ok()) return st.ToString();
  if (std::memcmp(got, want.data(), want.size()) != 0) {
    return "chunk " + std::to_string(chunk) + " differs from its pread copy";
  }
  if (!d.VerifyChunk(chunk, got).ok()) return d.VerifyChunk(chunk, got).ToString();
  for (uint32_t j = 0; j < e.sample_count; ++j) {
    uint64_t id;
    std::memcpy(&id, got + j * kSampleBytes, 8);
    if (id != e.first_sample + j) return "chunk " + std::to_string(chunk) + " sample misplaced";
  }
  return "";
}

// Reads every chunk once, keeping every slot busy, checking each as it lands. Returns "" or
// what went wrong. Usable where gtest assertions are not (a death-test child).
std::string ReadAndCheckAll(ChunkReader& r, const Dataset& d, const AlignedBuffers& bufs,
                            uint32_t wait_min = 1) {
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
  testing::WriteAll(p, std::vector<uint8_t>(4096, 1));
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) ::close(fd);
  std::filesystem::remove(p);
  return fd >= 0;
}

// Skips the test where this kernel or sandbox has no io_uring (liburing's test habit).
#define SKIP_WITHOUT_IO_URING()                                                             \
  do {                                                                                      \
    auto probe = UringQueue::Create(1);                                                     \
    if (!probe.ok()) GTEST_SKIP() << "io_uring unavailable: " << probe.status().ToString(); \
  } while (0)

class ChunkReaderTest : public ::testing::Test {
 protected:
  // 3 shards of 2500 samples at 63 a chunk: 40 chunks of 64 KiB but the last.
  void SetUp() override {
    WriteDataset(dir_.File("d.rfd"), 2500, 3);
    auto d = Dataset::Open(dir_.File("d.rfd"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dataset_ = std::make_unique<Dataset>(std::move(d).value());
    ASSERT_EQ(dataset_->shard_count(), 3u);
    ASSERT_GT(dataset_->chunk_count(), 30u);
    ASSERT_EQ(dataset_->max_chunk_bytes(), kChunkBytes);
  }

  // Reads of every chunk when none is cut short: a chunk of n bytes takes ceil(n / read).
  uint64_t PlainReadCount(uint32_t read_bytes) const {
    uint64_t n = 0;
    for (size_t c = 0; c < dataset_->chunk_count(); ++c) {
      n += (dataset_->chunk(c).entry.stored_bytes + read_bytes - 1) / read_bytes;
    }
    return n;
  }

  std::unique_ptr<ChunkReader> WithFake(FakeIoQueue** fake, const AlignedBuffers& bufs,
                                        ReaderOptions o, uint32_t capacity = 64) {
    auto q = std::make_unique<FakeIoQueue>(capacity);
    *fake = q.get();
    auto r = ChunkReader::CreateWithQueue(*dataset_, bufs.iovecs(), o, std::move(q));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  static ReaderOptions Buffered(uint32_t depth = 4) {
    ReaderOptions o;
    o.mode = IoMode::kBuffered;
    o.queue_depth = depth;
    o.read_bytes = kReadBytes;
    return o;
  }

  TempDir dir_;
  std::unique_ptr<Dataset> dataset_;
};

TEST_F(ChunkReaderTest, ReadsEveryChunkExactlyWithIoUringDirect) {
  SKIP_WITHOUT_IO_URING();
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
  SKIP_WITHOUT_IO_URING();
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
  SKIP_WITHOUT_IO_URING();
  AlignedBuffers bufs(6, kChunkBytes);
  ReaderOptions o = Buffered(16);
  o.mode = IoMode::kDirect;
  o.read_bytes = 1 << 20;  // larger than a chunk: one read each
  auto r = ChunkReader::Create(*dataset_, bufs.iovecs(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadAndCheckAll(**r, *dataset_, bufs, /*wait_min=*/6), "");
}

TEST_F(ChunkReaderTest, ReadsOnAnIoThreadOtherThanItsCreator) {
  SKIP_WITHOUT_IO_URING();
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

TEST_F(ChunkReaderTest, RetriesEAgainAndEIntrUpToMaxRetries) {
  AlignedBuffers bufs(4, kChunkBytes);
  FakeIoQueue* fake;
  ReaderOptions o = Buffered();
  o.max_retries = 4;
  auto r = WithFake(&fake, bufs, o);
  fake->ErrorAtRequest(0, EAGAIN);
  fake->ErrorAtRequest(2, EINTR);
  const auto& c5 = dataset_->chunk(5);
  fake->ErrorAtOffset(c5.shard, c5.entry.offset, EAGAIN, /*times=*/4);  // exactly the limit
  EXPECT_EQ(ReadAndCheckAll(*r, *dataset_, bufs), "");
  EXPECT_EQ(fake->faults_fired(), 6u);
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
  fake->ErrorAtOffset(c5.shard, at, EIO);
  for (uint32_t s = 0; s < 4; ++s) ASSERT_TRUE(r->Submit(4 + s, s).ok());
  std::vector<ChunkDone> done;
  Status st = r->Wait(done, 4);
  ASSERT_TRUE(st.IsIOError());
  EXPECT_EQ(st.path(), dataset_->shard_path(2));
  EXPECT_EQ(st.chunk(), 5u);
  EXPECT_EQ(st.offset(), at);
  EXPECT_EQ(st.err(), EIO);
  EXPECT_EQ(st.ToString(), dataset_->shard_path(2) + ": chunk 5 at byte " + std::to_string(at) +
                               ": read failed: Input/output error (errno 5)");
  // The failure is sticky: the reader does not pretend to go on.
  EXPECT_EQ(r->Submit(0, 0).ToString(), st.ToString());
  EXPECT_EQ(r->Wait(done, 1).ToString(), st.ToString());
}

TEST_F(ChunkReaderTest, ReportsFileShrunkUnderneathAsUnexpectedEndOfFile) {
  const auto& c4 = dataset_->chunk(4);
  const uint64_t cut = c4.entry.offset + 8192;  // inside chunk 4
  testing::Truncate(dataset_->shard_path(c4.shard), cut);
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

// Runs in a death-test child: io_uring_setup is refused by a seccomp filter, as a hardened
// container would, and the reader must say so once and read everything with pread.
int ReadWithIoUringRefused(const Dataset& d) {
  // Only io_uring_setup is denied; the filter does not check the architecture since it runs
  // in this very process.
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog = {static_cast<unsigned short>(std::size(filter)), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    std::fprintf(stderr, "cannot install seccomp filter: %s\n", std::strerror(errno));
    return 2;
  }
  AlignedBuffers bufs(4, kChunkBytes);
  ReaderOptions o;
  o.read_bytes = kReadBytes;
  auto r = ChunkReader::Create(d, bufs.iovecs(), o);
  if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().ToString().c_str()), 3;
  if (std::strcmp((*r)->backend(), "pread") != 0 || (*r)->mode() != IoMode::kPread) return 4;
  std::string err = ReadAndCheckAll(**r, d, bufs);
  if (!err.empty()) return std::fprintf(stderr, "%s\n", err.c_str()), 5;
  return 0;
}

TEST_F(ChunkReaderTest, FallsBackToPreadAndSaysSoWhenIoUringIsRefused) {
  EXPECT_EXIT(std::exit(ReadWithIoUringRefused(*dataset_)), ::testing::ExitedWithCode(0),
              "^ringfeed: io_uring unavailable \\(io_uring_setup failed: Operation not "
              "permitted \\(errno 1\\)\\); reading with pread\n$");
}

// Mounts a ramfs (which refuses O_DIRECT) on `dir` in a mount namespace of this process's own.
// Returns "" or why not.
std::string MountRamfs(const std::string& dir) {
  if (::unshare(CLONE_NEWNS) != 0) return std::string("unshare: ") + std::strerror(errno);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("mount --make-rprivate: ") + std::strerror(errno);
  }
  if (::mount("ringfeed-test", dir.c_str(), "ramfs", 0, nullptr) != 0) {
    return std::string("mount ramfs: ") + std::strerror(errno);
  }
  if (DirectIoWorksIn(dir)) return "ramfs accepts O_DIRECT on this kernel";
  return "";
}

int ReadFromRamfs(const std::string& dir) {
  if (std::string why = MountRamfs(dir); !why.empty()) {
    return std::fprintf(stderr, "%s\n", why.c_str()), 2;
  }
  WriteDataset(dir + "/r.rfd", 700, 1);
  auto d = Dataset::Open(dir + "/r.rfd");
  if (!d.ok()) return std::fprintf(stderr, "%s\n", d.status().ToString().c_str()), 3;
  AlignedBuffers bufs(3, kChunkBytes);
  ReaderOptions o;
  o.read_bytes = kReadBytes;
  o.mode = IoMode::kDirect;
  auto r = ChunkReader::Create(*d, bufs.iovecs(), o);
  if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().ToString().c_str()), 4;
  if ((*r)->mode() != IoMode::kBuffered) return std::fprintf(stderr, "mode not buffered\n"), 5;
  std::string err = ReadAndCheckAll(**r, *d, bufs);
  if (!err.empty()) return std::fprintf(stderr, "%s\n", err.c_str()), 6;
  return 0;
}

TEST(ChunkReaderFallback, ReadsThroughPageCacheAndSaysSoWhereODirectIsRefused) {
  TempDir t;
  const std::string dir = t.File("ram");
  std::filesystem::create_directory(dir);
  // Try the mount in a throwaway child first: without CAP_SYS_ADMIN there is nothing to test.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(MountRamfs(dir).empty() ? 0 : 1);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    GTEST_SKIP() << "cannot mount a ramfs here to provoke the O_DIRECT fallback";
  }
  EXPECT_EXIT(std::exit(ReadFromRamfs(dir)), ::testing::ExitedWithCode(0),
              "^ringfeed: " + dir +
                  "/r.rfd: O_DIRECT not supported by this file system; reading through the "
                  "page cache\n$");
}

}  // namespace
}  // namespace rf
