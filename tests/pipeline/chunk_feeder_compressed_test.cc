// ChunkFeeder over compressed chunks (format version 2): the chunk stage's threads verify and
// decompress each chunk into its ring slot, and the ring hands the chunks over in sequence
// order, each exactly its data; a damaged frame on any of the stage's threads stops the consumer
// with file, chunk and offset, and the feeder with it; a feeder destroyed while the stage works
// does not hang; and the read faults of RINGFEED_FAULTS (io/fault_plan.h, through the shipped
// FaultyIoQueue) are got past, or reported, with the stored extents read into the stage's
// buffers instead of the slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "io/faulty_io_queue.h"
#include "io/sync_queue.h"
#include "pipeline/stage/chunk_feeder.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

constexpr uint32_t kSampleBytes = 32 * 32;

// 3000 positional samples of 1x32x32 in chunks of 64 KiB (63 samples: 48 chunks), every full
// chunk stored compressed with `codec`.
std::string WriteCompressed(const std::string& path, CodecSpec codec, uint32_t shards = 1) {
  return testing::WritePositionalDataset(path, 3000,
                                         {.channels = 1,
                                          .height = 32,
                                          .width = 32,
                                          .shards = shards,
                                          .chunk_bytes = 64 << 10,
                                          .codec = codec});
}

std::vector<uint64_t> InOrder(const Dataset& d) {
  std::vector<uint64_t> o(d.chunk_count());
  std::iota(o.begin(), o.end(), 0);
  return o;
}

std::unique_ptr<SlotRing> Ring(uint32_t slots, const Dataset& d) {
  auto r = SlotRing::Create(slots, d.max_chunk_bytes(), PinMode::kOff);
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

// The consumer: every chunk the ring hands over, checked byte for byte against Dataset::ReadChunk
// (its samples' own indices and labels too), in the order it came.
struct Consumed {
  std::vector<uint64_t> chunks;
  Status status;
};

Consumed Consume(const Dataset& d, SlotRing& ring) {
  Consumed c;
  std::vector<uint8_t> want(d.max_chunk_bytes());
  while (auto f = ring.AcquireReady()) {
    const format::ChunkEntry& e = d.chunk(f->chunk).entry;
    EXPECT_EQ(f->bytes, e.data_bytes) << "chunk " << f->chunk;
    EXPECT_TRUE(d.ReadChunk(f->chunk, want.data()).ok());
    EXPECT_EQ(std::memcmp(ring.data(f->slot), want.data(), e.data_bytes), 0)
        << "chunk " << f->chunk << " is not its data";
    for (uint32_t j = 0; j < e.sample_count; ++j) {
      EXPECT_EQ(testing::SampleIndex(ring.data(f->slot) + j * kSampleBytes), e.first_sample + j);
      EXPECT_EQ(d.Label(f->chunk, ring.data(f->slot), j),
                testing::PositionalLabel(e.first_sample + j));
    }
    c.chunks.push_back(f->chunk);
    ring.Release(f->slot);
  }
  c.status = ring.status();
  return c;
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

struct Case {
  CodecSpec codec;
  uint32_t threads;
  bool verify;
};

class CompressedFeeder : public ::testing::TestWithParam<Case> {
 protected:
  FeederOptions Options() const {
    FeederOptions fo;
    fo.decode_threads = GetParam().threads;
    fo.verify = GetParam().verify;
    fo.reader.queue_depth = 4;
    return fo;
  }
};

TEST_P(CompressedFeeder, DeliversEveryChunkInSequenceOrderWithTheExactData) {
  TempDir t;
  auto d = Dataset::Open(WriteCompressed(t.File("c.rfd"), GetParam().codec, 3));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->chunk_count(), 48u);
  ASSERT_GE(d->compressed_chunks(), 47u);
  auto ring = Ring(6, *d);
  std::vector<uint64_t> order = InOrder(*d);
  std::shuffle(order.begin(), order.end(), std::mt19937(11));
  order.insert(order.end(), order.begin(), order.begin() + 10);  // some chunks twice
  auto feeder = ChunkFeeder::Start(*d, *ring, order, Options());
  ASSERT_TRUE(feeder.ok()) << feeder.status().ToString();
  Consumed c = Consume(*d, *ring);
  EXPECT_TRUE((*feeder)->Join().ok());
  EXPECT_TRUE(c.status.ok()) << c.status.ToString();
  EXPECT_EQ(c.chunks, order);
  const FeederStats s = (*feeder)->stats();
  uint64_t stored = 0, data = 0;
  for (uint64_t ch : order) {
    stored += d->chunk(ch).entry.stored_bytes;
    data += d->chunk(ch).entry.data_bytes;
  }
  EXPECT_EQ(s.stored_bytes, stored);
  EXPECT_EQ(s.delivered_bytes, data);
  EXPECT_LT(s.stored_bytes, s.delivered_bytes);
  EXPECT_EQ(s.stage_threads, GetParam().threads);
}

// A frame cut short (its checksum recomputed: the frame checks alone find it), in one chunk at a
// time, early, in the middle and last: whichever stage thread decodes it, the consumer gets the
// chunks before it in order and intact, then the error naming file, chunk and offset, and Join
// returns the same; never a chunk after it.
TEST_P(CompressedFeeder, ADamagedFrameOnAnyThreadStopsTheConsumerNamingFileChunkAndOffset) {
  TempDir t;
  const std::string path = WriteCompressed(t.File("d.rfd"), GetParam().codec);
  for (const size_t bad : {size_t{0}, size_t{9}, size_t{22}, size_t{46}}) {
    SCOPED_TRACE("chunk " + std::to_string(bad));
    WriteCompressed(path, GetParam().codec);
    std::vector<uint8_t> frame = testing::ChunkFrame(path, bad);
    frame.resize(frame.size() / 2);
    testing::ForgeFrame(path, bad, GetParam().codec.codec, frame);
    auto d = Dataset::Open(path);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    auto ring = Ring(8, *d);
    auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), Options());
    ASSERT_TRUE(feeder.ok());
    Consumed c = Consume(*d, *ring);
    const Status st = (*feeder)->Join();
    ASSERT_LE(c.chunks.size(), bad);
    std::vector<uint64_t> before(c.chunks.size());
    std::iota(before.begin(), before.end(), 0);
    EXPECT_EQ(c.chunks, before);
    ASSERT_TRUE(c.status.IsCorruption()) << c.status.ToString();
    EXPECT_TRUE(
        StartsWith(c.status.ToString(), path + ": chunk " + std::to_string(bad) + " at byte " +
                                            std::to_string(d->chunk(bad).entry.offset) + ": " +
                                            CodecName(GetParam().codec.codec) + " frame of " +
                                            std::to_string(frame.size()) + " bytes "))
        << c.status.ToString();
    EXPECT_EQ(st.ToString(), c.status.ToString());
  }
}

// Every chunk from 20 on damaged: several stage threads fail at once; the first failure stands,
// and everything stops.
TEST_P(CompressedFeeder, ManyDamagedFramesAtOnceStopEverythingWithOneOfThem) {
  TempDir t;
  const std::string path = WriteCompressed(t.File("m.rfd"), GetParam().codec);
  for (size_t bad = 20; bad < 47; ++bad) {
    std::vector<uint8_t> frame = testing::ChunkFrame(path, bad);
    frame.resize(frame.size() - 1);
    testing::ForgeFrame(path, bad, GetParam().codec.codec, frame);
  }
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto ring = Ring(16, *d);
  auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), Options());
  ASSERT_TRUE(feeder.ok());
  Consumed c = Consume(*d, *ring);
  const Status st = (*feeder)->Join();
  ASSERT_LE(c.chunks.size(), 20u);
  ASSERT_TRUE(c.status.IsCorruption()) << c.status.ToString();
  EXPECT_TRUE(c.status.chunk().has_value() && *c.status.chunk() >= 20 && *c.status.chunk() < 47)
      << c.status.ToString();
  EXPECT_EQ(st.ToString(), c.status.ToString());
}

// Destroyed with chunks read and waiting for the stage, or in it: the destructor fails the ring,
// the stage drains what it holds, and everything is joined. Twenty times, for the interleavings.
TEST_P(CompressedFeeder, DestroyingTheFeederWhileTheStageIsBusyDoesNotHang) {
  TempDir t;
  auto d = Dataset::Open(WriteCompressed(t.File("x.rfd"), GetParam().codec));
  ASSERT_TRUE(d.ok());
  for (int round = 0; round < 20; ++round) {
    auto ring = Ring(8, *d);
    {
      auto feeder = ChunkFeeder::Start(*d, *ring, InOrder(*d), Options());
      ASSERT_TRUE(feeder.ok());
      if (round % 2 == 1) {
        auto f = ring->AcquireReady();  // one taken and never released
        ASSERT_TRUE(f);
      }
    }
    EXPECT_EQ(ring->status().message(), "reader stopped");
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CompressedFeeder,
                         ::testing::Values(Case{{Codec::kLz4, 0}, 4, true},
                                           Case{{Codec::kZstd, 3}, 4, true},
                                           Case{{Codec::kZstd, 3}, 3, false},
                                           Case{{Codec::kLz4, 0}, 1, false}),
                         [](const auto& info) {
                           return std::string(CodecName(info.param.codec.codec)) + "_" +
                                  std::to_string(info.param.threads) + "threads" +
                                  (info.param.verify ? "" : "_noverify");
                         });

// The read faults through the compressed path: the reader reads a compressed chunk's stored
// extent into the stage's buffer, where a failed attempt leaves 0xa5 (FaultyIoQueue) and a short
// read leaves a gap; the chunk must still decompress to exactly its data.
class CompressedFeederFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = WriteCompressed(dir_.File("f.rfd"), {Codec::kZstd, 3}, 2);
    auto d = Dataset::Open(path_);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dataset_ = std::make_unique<Dataset>(std::move(d).value());
  }

  // Reads every chunk in order through a FaultyIoQueue over pread following `spec`, with 4
  // decode threads: what the consumer got.
  Consumed ReadThrough(const std::string& spec, bool verify = true) {
    Result<FaultPlan> plan = ParseFaultPlan(spec);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    FeederOptions fo;
    fo.decode_threads = 4;
    fo.verify = verify;
    fo.reader.queue_depth = 4;
    fo.reader.mode = IoMode::kBuffered;  // short reads of any length (O_DIRECT's are 4096s)
    fo.queue_factory = [plan = *plan] {
      return std::make_unique<FaultyIoQueue>(std::make_unique<SyncQueue>(4), plan);
    };
    auto ring = Ring(6, *dataset_);
    auto feeder = ChunkFeeder::Start(*dataset_, *ring, InOrder(*dataset_), fo);
    EXPECT_TRUE(feeder.ok()) << feeder.status().ToString();
    if (!feeder.ok()) return {};
    Consumed c = Consume(*dataset_, *ring);
    const Status st = (*feeder)->Join();
    EXPECT_EQ(st.ToString(), c.status.ToString());
    return c;
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Dataset> dataset_;
};

TEST_F(CompressedFeederFaults, TransientErrorsAndShortReadsAreGotPastWithTheExactData) {
  for (const char* spec :
       {"read:eio@chunk=4,times=3;read:eio@chunk=30,times=2",
        "read:eagain@chunk=2,times=3;read:eintr@chunk=11,times=3",
        "read:short=100@chunk=3;read:short=4096@chunk=5,times=3;read:short=1@chunk=9,attempt=2",
        "read:delay=30ms@chunk=1;read:reorder", "read:short=512@times=always"}) {
    for (bool verify : {true, false}) {
      SCOPED_TRACE(std::string(spec) + (verify ? "" : ", no verify"));
      Consumed c = ReadThrough(spec, verify);
      EXPECT_TRUE(c.status.ok()) << c.status.ToString();
      EXPECT_EQ(c.chunks, InOrder(*dataset_));
    }
  }
}

TEST_F(CompressedFeederFaults, APersistentEioStopsTheConsumerNamingFileChunkOffsetAndErrno) {
  const ChunkLocation& c7 = dataset_->chunk(7);
  for (bool verify : {true, false}) {
    Consumed c = ReadThrough("read:eio@chunk=7,times=always", verify);
    EXPECT_LE(c.chunks.size(), 7u);
    EXPECT_EQ(c.status.ToString(), dataset_->shard_path(c7.shard) + ": chunk 7 at byte " +
                                       std::to_string(c7.entry.offset) +
                                       ": read failed after 4 attempts: Input/output error "
                                       "(errno 5)");
  }
}

}  // namespace
}  // namespace rf
