#include "pipeline/stage/chunk_feeder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <thread>

#include "io/sync_queue.h"
#include "tests/io/fake_io_queue.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

// The samples of testing::WritePositionalDataset's default shape: 1x8x8 uint8.
constexpr uint32_t kSampleBytes = 64;

// Checks a delivered chunk holds exactly its own samples.
void ExpectChunkContents(const Dataset& d, uint64_t chunk, const uint8_t* data) {
  const auto& e = d.chunk(chunk).entry;
  for (uint32_t j = 0; j < e.sample_count; ++j) {
    ASSERT_EQ(testing::SampleIndex(data + j * kSampleBytes), e.first_sample + j)
        << "chunk " << chunk;
    ASSERT_EQ(d.Label(chunk, data, j), testing::PositionalLabel(e.first_sample + j));
  }
}

struct Consumed {
  std::vector<uint64_t> chunks;
  Status status;
};

Consumed Consume(const Dataset& d, SlotRing& ring, std::chrono::microseconds per_chunk = {}) {
  Consumed c;
  while (auto f = ring.AcquireReady()) {
    ExpectChunkContents(d, f->chunk, ring.data(f->slot));
    c.chunks.push_back(f->chunk);
    if (per_chunk.count()) std::this_thread::sleep_for(per_chunk);
    ring.Release(f->slot);
  }
  c.status = ring.status();
  return c;
}

std::unique_ptr<SlotRing> Ring(uint32_t slots, const Dataset& d) {
  auto r = SlotRing::Create(slots, d.max_chunk_bytes(), PinMode::kOff);
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

std::vector<uint64_t> InOrder(const Dataset& d) {
  std::vector<uint64_t> o(d.chunk_count());
  std::iota(o.begin(), o.end(), 0);
  return o;
}

class FeederModes : public ::testing::TestWithParam<IoMode> {};

TEST_P(FeederModes, DeliversEveryChunkInScheduledOrderWithEverySampleInPlace) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 3000, {.shards = 3}));
  ASSERT_TRUE(d.ok());
  auto ring = Ring(4, *d);
  std::vector<uint64_t> order = InOrder(*d);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  FeederOptions fo;
  fo.reader.mode = GetParam();
  fo.reader.queue_depth = 3;
  fo.reader.read_bytes = 4096;  // chunks split into several reads
  auto feeder = ChunkFeeder::Start(*d, *ring, order, fo);
  ASSERT_TRUE(feeder.ok()) << feeder.status().ToString();
  Consumed c = Consume(*d, *ring);
  EXPECT_TRUE((*feeder)->Join().ok());
  EXPECT_TRUE(c.status.ok()) << c.status.ToString();
  EXPECT_EQ(c.chunks, order);
  uint64_t bytes = 0;
  for (uint64_t ch : order) bytes += d->chunk(ch).entry.stored_bytes;
  EXPECT_EQ((*feeder)->bytes_read(), bytes);
}

INSTANTIATE_TEST_SUITE_P(AllModes, FeederModes,
                         ::testing::Values(IoMode::kDirect, IoMode::kBuffered, IoMode::kPread));

TEST(ChunkFeeder, CorruptChunkStopsTheConsumerWithFileChunkAndOffset) {
  TempDir t;
  const std::string path = testing::WritePositionalDataset(t.File("f.rfd"), 2000);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  const auto& bad = d->chunk(5).entry;
  testing::FlipBit(path, bad.offset + 100, 2);
  auto ring = Ring(3, *d);
  auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), {});
  ASSERT_TRUE(feeder.ok());
  Consumed c = Consume(*d, *ring);
  Status st = (*feeder)->Join();
  // The chunks before the bad one, in order and intact (Consume checks every sample), and never
  // the bad one or any after it. Not necessarily all of 0..4: chunk 4 may still be in its
  // checksum on the other verify thread when chunk 5 fails the ring, and a failed ring hands out
  // nothing more (once in about 20 runs under load).
  // At least 0..2: with 3 ring slots, chunk 5 is read only into the slot chunk 2 was released
  // from.
  std::vector<uint64_t> before_bad = {0, 1, 2, 3, 4};
  ASSERT_GE(c.chunks.size(), 3u);
  ASSERT_LE(c.chunks.size(), before_bad.size());
  before_bad.resize(c.chunks.size());
  EXPECT_EQ(c.chunks, before_bad);
  ASSERT_TRUE(c.status.IsCorruption());
  EXPECT_EQ(
      c.status.ToString().rfind(
          path + ": chunk 5 at byte " + std::to_string(bad.offset) + ": checksum mismatch", 0),
      0u)
      << c.status.ToString();
  EXPECT_EQ(st.ToString(), c.status.ToString());
}

TEST(ChunkFeeder, ReadErrorReachesTheConsumerNamingFileChunkOffsetAndErrno) {
  TempDir t;
  const std::string path = testing::WritePositionalDataset(t.File("f.rfd"), 2000);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  const uint64_t at = d->chunk(3).entry.offset;
  FeederOptions fo;
  fo.reader.queue_depth = 4;
  fo.queue_factory = [at] {
    auto q = std::make_unique<testing::FakeIoQueue>(4);
    q->ErrorAtOffset(0, at, EIO, testing::FakeIoQueue::kAlways);
    return q;
  };
  auto ring = Ring(3, *d);
  auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), fo);
  ASSERT_TRUE(feeder.ok());
  Consumed c = Consume(*d, *ring);
  (void)(*feeder)->Join();
  EXPECT_LE(c.chunks.size(), 3u);
  EXPECT_EQ(c.status.ToString(), path + ": chunk 3 at byte " + std::to_string(at) +
                                     ": read failed after 4 attempts: Input/output error "
                                     "(errno 5)");
}

TEST(ChunkFeeder, ConsumerFailureStopsTheFeeder) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 3000, {.shards = 2}));
  ASSERT_TRUE(d.ok());
  auto ring = Ring(3, *d);
  auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), {});
  ASSERT_TRUE(feeder.ok());
  int taken = 0;
  while (auto f = ring->AcquireReady()) {
    ring->Release(f->slot);
    if (++taken == 3) ring->Fail(Status::Aborted("training failed"));
  }
  Status st = (*feeder)->Join();  // must return, not hang
  EXPECT_EQ(st.message(), "training failed");
  EXPECT_EQ(taken, 3);
}

TEST(ChunkFeeder, SlowConsumerHoldsTheReaderBack) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1500));
  ASSERT_TRUE(d.ok());
  ASSERT_GE(d->chunk_count(), 10u);
  constexpr uint32_t kSlots = 2;
  auto ring = Ring(kSlots, *d);
  auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), {});
  ASSERT_TRUE(feeder.ok());
  std::vector<uint64_t> chunks;
  uint64_t startup_wait_ns = 0;
  while (auto f = ring->AcquireReady()) {
    ExpectChunkContents(*d, f->chunk, ring->data(f->slot));
    chunks.push_back(f->chunk);
    // The wait for the first chunk is the feeder's start-up (its threads, the io_uring ring, the
    // first read), not the steady state the test is about; under a loaded ThreadSanitizer run it
    // alone can outlast the producer's waits.
    if (chunks.size() == 1) startup_wait_ns = ring->consumer_wait_ns();
    // Held back, whatever the timing: while the consumer holds chunk k, the reader has read at
    // most the chunks up to k + kSlots - 1 (one per slot).
    uint64_t allowed = 0;
    for (uint64_t c = 0; c <= std::min(f->chunk + kSlots - 1, d->chunk_count() - 1); ++c) {
      allowed += d->chunk(c).entry.stored_bytes;
    }
    EXPECT_LE((*feeder)->bytes_read(), allowed) << "while the consumer held chunk " << f->chunk;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ring->Release(f->slot);
  }
  EXPECT_TRUE((*feeder)->Join().ok());
  EXPECT_TRUE(ring->status().ok()) << ring->status().ToString();
  EXPECT_EQ(chunks, InOrder(*d));
  // The feeder waited for free slots; after the first chunk the consumer hardly waited for data.
  EXPECT_GT(ring->producer_wait_ns(), ring->consumer_wait_ns() - startup_wait_ns);
}

// An IoQueue that delays every completion: a disk slower than the consumer.
class SlowQueue final : public IoQueue {
 public:
  explicit SlowQueue(uint32_t depth) : inner_(depth) {}
  Status RegisterFiles(std::span<const int> fds) override { return inner_.RegisterFiles(fds); }
  Status RegisterBuffers(std::span<const iovec> b) override { return inner_.RegisterBuffers(b); }
  uint32_t capacity() const override { return inner_.capacity(); }
  void Prepare(const IoRequest& r) override { inner_.Prepare(r); }
  Status Submit() override { return inner_.Submit(); }
  Status Wait(std::vector<IoCompletion>& out, uint32_t min) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return inner_.Wait(out, min);
  }
  const char* name() const override { return "slow"; }

 private:
  SyncQueue inner_;
};

TEST(ChunkFeeder, SlowReaderMakesTheConsumerWaitAndLosesNothing) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1500));
  ASSERT_TRUE(d.ok());
  FeederOptions fo;
  fo.queue_factory = [] { return std::make_unique<SlowQueue>(4); };
  auto ring = Ring(4, *d);
  auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), fo);
  ASSERT_TRUE(feeder.ok());
  Consumed c = Consume(*d, *ring);
  EXPECT_TRUE((*feeder)->Join().ok());
  EXPECT_EQ(c.chunks, InOrder(*d));
  EXPECT_GT(ring->consumer_wait_ns(), ring->producer_wait_ns());
}

TEST(ChunkFeeder, DestroyingARunningFeederDoesNotHang) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 3000));
  ASSERT_TRUE(d.ok());
  auto ring = Ring(2, *d);
  {
    auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), {});
    ASSERT_TRUE(feeder.ok());
    auto f = ring->AcquireReady();  // take one and never release it
    ASSERT_TRUE(f);
  }
  EXPECT_EQ(ring->status().message(), "reader stopped");
}

TEST(ChunkFeeder, ChunksLargerThanASlotAreRefused) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1000));
  ASSERT_TRUE(d.ok());
  auto ring = SlotRing::Create(2, 4096, PinMode::kOff);
  ASSERT_TRUE(ring.ok());
  auto feeder = ChunkFeeder::Start(*d, **ring, InOrder(*d), {});
  ASSERT_FALSE(feeder.ok());
  EXPECT_TRUE(feeder.status().IsInvalidArgument());
  EXPECT_NE(feeder.status().message().find("cannot hold chunks of 8192 bytes"), std::string::npos)
      << feeder.status().message();
}

TEST(ChunkFeeder, AnEndlessPlanIsAskedOnlyAsFarAsTheFreeSlotsReach) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1500));
  ASSERT_TRUE(d.ok());
  auto ring = Ring(3, *d);
  uint64_t asked = 0;  // the feeder thread's; read after Join
  ChunkPlan endless = [&asked, n = d->chunk_count()]() -> std::optional<uint64_t> {
    return (asked++ * 7) % n;
  };
  auto feeder = ChunkFeeder::Start(*d, *ring, std::move(endless), {});
  ASSERT_TRUE(feeder.ok()) << feeder.status().ToString();
  std::vector<uint64_t> got;
  while (got.size() < 40) {
    auto f = ring->AcquireReady();
    ASSERT_TRUE(f);
    ExpectChunkContents(*d, f->chunk, ring->data(f->slot));
    got.push_back(f->chunk);
    ring->Release(f->slot);
  }
  ring->Fail(Status::Aborted("enough"));
  EXPECT_EQ((*feeder)->Join().message(), "enough");
  for (uint64_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], (i * 7) % d->chunk_count());
  // The 40 handed out, at most one per ring slot beyond them, and the one taken but not read.
  EXPECT_LE(asked, 40u + 3 + 1);
}

TEST(ChunkFeeder, APlanChunkNotInTheDatasetFailsTheRingNamingIt) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1500));
  ASSERT_TRUE(d.ok());
  auto ring = Ring(3, *d);
  const uint64_t bad = d->chunk_count();
  ChunkPlan plan = [next = uint64_t{0}, bad]() mutable -> std::optional<uint64_t> {
    return next < 2 ? next++ : bad;
  };
  auto feeder = ChunkFeeder::Start(*d, *ring, std::move(plan), {});
  ASSERT_TRUE(feeder.ok());
  Consumed c = Consume(*d, *ring);
  EXPECT_LE(c.chunks.size(), 2u);
  ASSERT_TRUE(c.status.IsInvalidArgument()) << c.status.ToString();
  EXPECT_EQ(c.status.message(), "chunk " + std::to_string(bad) + " is not in the dataset");
  EXPECT_EQ((*feeder)->Join().ToString(), c.status.ToString());
}

}  // namespace
}  // namespace rf
