// StreamingSource with host staging (the CPU backend's streaming mode): every epoch delivers the
// WindowOrder exactly, whatever the ring, queue and read settings; a resumed source continues the
// same order from the same position; drop_last; errors reach Next() naming file and chunk; slow
// consumers and slow readers only slow it down; nothing hangs.
#include "pipeline/sources/streaming_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "io/sync_queue.h"
#include "pipeline/stage/trace.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

StagingFactory HostStaging() {
  return [](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
    RF_ASSIGN_OR_RETURN(auto s, HostChunkStaging::Create(l));
    return std::unique_ptr<ChunkStaging>(std::move(s));
  };
}

StreamingOptions Options(uint32_t batch, uint32_t window, uint64_t epochs) {
  StreamingOptions o;
  o.order.batch_size = batch;
  o.order.shuffle_window = window;
  o.order.seed = 7;
  o.epochs = epochs;
  o.ring_slots = 4;
  o.pin = PinMode::kOff;
  o.feeder.reader.mode = IoMode::kBuffered;  // temp directories may be on tmpfs (no O_DIRECT)
  return o;
}

std::unique_ptr<StreamingSource> Source(const Dataset& d, const StreamingOptions& o) {
  auto s = StreamingSource::Create(d, o, HostStaging());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// Drains the current epoch; checks each sample against its label and the source's own record.
std::vector<uint64_t> DrainEpoch(StreamingSource& s, Status* error = nullptr,
                                 std::chrono::microseconds per_batch = {}) {
  std::vector<uint64_t> seen;
  for (;;) {
    Result<Batch> b = s.Next();
    if (!b.ok()) {
      if (error != nullptr) *error = b.status();
      if (error == nullptr) ADD_FAILURE() << b.status().ToString();
      break;
    }
    if (b->n == 0) break;
    for (uint32_t i = 0; i < b->n; ++i) {
      const uint64_t index = testing::SampleIndex(static_cast<const uint8_t*>(b->samples) + i * 64);
      EXPECT_EQ(static_cast<const uint8_t*>(b->labels)[i], index % 10);
      EXPECT_EQ(s.batch_samples()[i], index);
      seen.push_back(index);
    }
    if (per_batch.count()) std::this_thread::sleep_for(per_batch);
  }
  return seen;
}

TEST(StreamingSource, EveryEpochDeliversItsWindowOrderExactly) {
  TempDir t;
  auto d = Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 3001,
                                                         {.chunk_bytes = 4096}));  // 63 per chunk
  ASSERT_TRUE(d.ok());
  for (uint32_t window : {1u, 4u, 64u}) {
    auto s = Source(*d, Options(50, window, 3));
    ASSERT_NE(s, nullptr);
    for (uint64_t e = 0; e < 3; ++e) {
      ASSERT_TRUE(s->StartEpoch(e, 0).ok());
      EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(e)) << "W " << window << " epoch " << e;
    }
  }
}

TEST(StreamingSource, OrderDoesNotDependOnRingQueueOrReadSettings) {
  TempDir t;
  auto d = Dataset::Open(
      testing::WritePositionalDataset(t.File("f.rfd"), 2000, {.shards = 2, .chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  std::vector<std::vector<uint64_t>> runs;
  for (auto [slots, depth, read] :
       {std::tuple{2u, 1u, 4096u}, std::tuple{16u, 8u, 4096u * 8}, std::tuple{5u, 3u, 8192u}}) {
    StreamingOptions o = Options(64, 3, 2);
    o.ring_slots = slots;
    o.feeder.reader.queue_depth = depth;
    o.feeder.reader.read_bytes = read;
    auto s = Source(*d, o);
    ASSERT_NE(s, nullptr);
    std::vector<uint64_t> all;
    for (uint64_t e = 0; e < 2; ++e) {
      ASSERT_TRUE(s->StartEpoch(e, 0).ok());
      const auto seen = DrainEpoch(*s);
      all.insert(all.end(), seen.begin(), seen.end());
    }
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

TEST(StreamingSource, ResumedSourceContinuesTheSameOrderFromTheSamePosition) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1500, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  auto whole = Source(*d, Options(32, 3, 3));
  ASSERT_TRUE(whole->StartEpoch(1, 0).ok());
  const std::vector<uint64_t> epoch1 = DrainEpoch(*whole);
  ASSERT_TRUE(whole->StartEpoch(2, 0).ok());
  const std::vector<uint64_t> epoch2 = DrainEpoch(*whole);
  // Positions inside a window, at a window's start (3 chunks of 63 = 189) and at a batch edge.
  for (uint64_t at : {0u, 1u, 189u, 500u, 1499u, 1500u}) {
    auto resumed = Source(*d, Options(32, 3, 3));
    ASSERT_TRUE(resumed->StartEpoch(1, at).ok()) << at;
    const std::vector<uint64_t> rest = DrainEpoch(*resumed);
    EXPECT_EQ(rest, std::vector<uint64_t>(epoch1.begin() + at, epoch1.end())) << "at " << at;
    ASSERT_TRUE(resumed->StartEpoch(2, 0).ok());
    EXPECT_EQ(DrainEpoch(*resumed), epoch2) << "after resuming at " << at;
  }
}

TEST(StreamingSource, DropLastSkipsThePartialBatchAndTheNextEpochStartsClean) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1000, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  StreamingOptions o = Options(96, 2, 3);
  o.order.drop_last = true;
  auto s = Source(*d, o);
  EXPECT_EQ(s->epoch_samples(), 960u);
  for (uint64_t e = 0; e < 3; ++e) {
    ASSERT_TRUE(s->StartEpoch(e, 0).ok());
    const std::vector<uint64_t> seen = DrainEpoch(*s);
    const std::vector<uint64_t> order = s->order().EpochSamples(e);
    EXPECT_EQ(seen, std::vector<uint64_t>(order.begin(), order.begin() + 960)) << "epoch " << e;
  }
}

TEST(StreamingSource, ACorruptChunkStopsTheEpochNamingFileAndChunk) {
  TempDir t;
  const std::string path =
      testing::WritePositionalDataset(t.File("f.rfd"), 2000, {.chunk_bytes = 4096});
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  const auto& c5 = d->chunk(5).entry;
  testing::FlipBit(path, c5.offset + 100, 3);
  auto s = Source(*d, Options(64, 2, 1));
  Status error;  // it may surface at the start of the epoch or in Next()
  if (Status st = s->StartEpoch(0, 0); !st.ok()) {
    error = st;
  } else {
    DrainEpoch(*s, &error);
  }
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.ToString().find(path), std::string::npos) << error.ToString();
  EXPECT_NE(error.ToString().find("chunk 5"), std::string::npos) << error.ToString();
}

TEST(StreamingSource, ASlowConsumerOnlySlowsItDownAndHoldsTheReaderBack) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1200, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  auto s = Source(*d, Options(100, 2, 1));
  ASSERT_TRUE(s->StartEpoch(0, 0).ok());
  EXPECT_EQ(DrainEpoch(*s, nullptr, std::chrono::milliseconds(3)), s->order().EpochSamples(0));
  // 12 batches, 3 ms each, and 4 ring slots and 9 staging slots for 19 chunks: the reader,
  // done with what fits, sits idle until windows retire.
  EXPECT_GT(s->reader_held_seconds(), 0.005);
}

// A queue that takes its time: every completion waits `delay` (2 ms unless told).
class SlowQueue final : public IoQueue {
 public:
  explicit SlowQueue(uint32_t capacity,
                     std::chrono::milliseconds delay = std::chrono::milliseconds(2))
      : inner_(capacity), delay_(delay) {}
  const char* name() const override { return "slow"; }
  uint32_t capacity() const override { return inner_.capacity(); }
  Status RegisterFiles(std::span<const int> fds) override { return inner_.RegisterFiles(fds); }
  Status RegisterBuffers(std::span<const iovec> b) override { return inner_.RegisterBuffers(b); }
  void Prepare(const IoRequest& r) override { inner_.Prepare(r); }
  Status Submit() override { return inner_.Submit(); }
  Status Wait(std::vector<IoCompletion>& out, uint32_t min) override {
    std::this_thread::sleep_for(delay_);
    return inner_.Wait(out, min);
  }

 private:
  SyncQueue inner_;
  std::chrono::milliseconds delay_;
};

TEST(StreamingSource, ASlowReaderOnlySlowsItDownAndTheWaitIsCounted) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1200, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  StreamingOptions o = Options(100, 2, 1);
  o.feeder.queue_factory = [] { return std::make_unique<SlowQueue>(4); };
  // More ring slots than the dataset's 19 chunks: a free slot is always there, so the reader is
  // never held back however its completions bunch up. (With 4 slots, each burst of 4
  // completions leaves it idle until the consumer frees one.)
  o.ring_slots = 24;
  auto s = Source(*d, o);
  ASSERT_TRUE(s->StartEpoch(0, 0).ok());
  EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(0));
  EXPECT_GT(s->wait_seconds(), 0.0);
  EXPECT_GT(s->bytes_read(), 0u);
  EXPECT_EQ(s->reader_held_seconds(), 0.0);
}

TEST(StreamingSource, APollThatInterruptsEndsTheWaitAndAStartEpochRecovers) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 400, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  StreamingOptions o = Options(100, 2, 1);
  // 300 ms a completion: the first window is still being read at the first poll (100 ms).
  o.feeder.queue_factory = [] {
    return std::make_unique<SlowQueue>(4, std::chrono::milliseconds(300));
  };
  int polls = 0;
  o.poll = [&polls] { return ++polls == 1 ? Status::Aborted("interrupted") : Status::Ok(); };
  auto s = Source(*d, o);
  const Status interrupted = s->StartEpoch(0, 0);
  EXPECT_EQ(interrupted.ToString(), Status::Aborted("interrupted").ToString());
  EXPECT_EQ(polls, 1);
  Result<Batch> after = s->Next();  // stopped where it was: nothing but the interruption
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().ToString(), interrupted.ToString());
  ASSERT_TRUE(s->StartEpoch(0, 0).ok());  // polls from here on let it go on
  EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(0));
}

// A queue whose completions wait until `open` is set: a disk that answers only once told to.
class GatedQueue final : public IoQueue {
 public:
  GatedQueue(uint32_t capacity, const std::atomic<bool>& open) : inner_(capacity), open_(open) {}
  const char* name() const override { return "gated"; }
  uint32_t capacity() const override { return inner_.capacity(); }
  Status RegisterFiles(std::span<const int> fds) override { return inner_.RegisterFiles(fds); }
  Status RegisterBuffers(std::span<const iovec> b) override { return inner_.RegisterBuffers(b); }
  void Prepare(const IoRequest& r) override { inner_.Prepare(r); }
  Status Submit() override { return inner_.Submit(); }
  Status Wait(std::vector<IoCompletion>& out, uint32_t min) override {
    while (!open_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return inner_.Wait(out, min);
  }

 private:
  SyncQueue inner_;
  const std::atomic<bool>& open_;
};

// The compute side's wait for data is counted and traced as a "wait for data" span on the
// "compute" row. Not left to timing: no read completes until the first poll, and the source
// polls only while it waits for a window, so it waits at least one poll interval.
TEST(StreamingSource, TheWaitForDataIsCountedAndTracedOnTheComputeRow) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 400, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  std::atomic<bool> open{false};
  StreamingOptions o = Options(100, 2, 1);
  o.feeder.queue_factory = [&open] { return std::make_unique<GatedQueue>(4, open); };
  o.poll = [&open] {
    open.store(true);
    return Status::Ok();
  };
  Trace trace;
  Trace::Activate(&trace);
  auto s = Source(*d, o);
  ASSERT_NE(s, nullptr);
  const Status started = s->StartEpoch(0, 0);
  EXPECT_TRUE(started.ok()) << started.ToString();
  if (started.ok()) {
    EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(0));
  }
  const double waited = s->wait_seconds();
  s.reset();
  Trace::Activate(nullptr);
  EXPECT_GE(waited, 0.1);  // ChunkCopier::kPollInterval
  ASSERT_TRUE(trace.Write(t.File("trace.json")).ok());
  std::ifstream in(t.File("trace.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  int waits = 0;
  double waited_us = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["name"] != "wait for data") continue;
    EXPECT_EQ(e["cat"], "compute");
    ++waits;
    waited_us += e["dur"].get<double>();
  }
  EXPECT_GE(waits, 1);
  EXPECT_NEAR(waited_us * 1e-6, waited, 1e-6);  // the spans are the waits counted
}

TEST(StreamingSource, DestroyingItMidEpochDoesNotHang) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 3000, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  for (int batches : {0, 1, 5}) {
    auto s = Source(*d, Options(64, 2, 5));
    ASSERT_TRUE(s->StartEpoch(0, 0).ok());
    for (int i = 0; i < batches; ++i) ASSERT_TRUE(s->Next().ok());
  }  // each destructor returns: the test finishing is the assertion
}

TEST(StreamingSource, EachRankDeliversItsOwnPartAndReadsOnlyItsChunks) {
  TempDir t;
  // 47 chunks of 63 samples and one of 40: 23 dealt to each of 2 ranks, 1 full one and the
  // short one shared (103 samples: 52 each, one padded).
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 3001, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<uint64_t> all;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      StreamingOptions o = Options(50, 4, epoch + 1);
      o.order.rank = rank;
      o.order.world_size = 2;
      auto s = Source(*d, o);
      ASSERT_NE(s, nullptr);
      EXPECT_EQ(s->sample_count(), 3001u);
      EXPECT_EQ(s->epoch_samples(), 23u * 63 + 52);
      ASSERT_TRUE(s->StartEpoch(epoch, 0).ok());
      const std::vector<uint64_t> seen = DrainEpoch(*s);
      EXPECT_EQ(seen, s->order().EpochSamples(epoch)) << "rank " << rank << " epoch " << epoch;
      all.insert(all.end(), seen.begin(), seen.end());
      // The plan ends with this epoch: what was read is this rank's chunks, each once.
      uint64_t bytes = 0;
      for (uint64_t c : s->order().EpochChunks(epoch)) bytes += d->chunk(c).entry.stored_bytes;
      EXPECT_EQ(s->bytes_read(), bytes) << "rank " << rank << " epoch " << epoch;
      EXPECT_LT(bytes, d->total_bytes() * 6 / 10);
    }
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), 3002u);
    all.erase(std::unique(all.begin(), all.end()), all.end());
    EXPECT_EQ(all.size(), 3001u) << "epoch " << epoch;
  }
}

TEST(StreamingSource, DropLastCutsEveryRanksEpochToTheSameWholeBatches) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 3001, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  for (uint32_t rank = 0; rank < 3; ++rank) {
    StreamingOptions o = Options(64, 4, 2);
    o.order.drop_last = true;
    o.order.rank = rank;
    o.order.world_size = 3;
    auto s = Source(*d, o);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->order().EpochSampleCount(), 1001u);  // ceil(3001 / 3)
    EXPECT_EQ(s->epoch_samples(), 960u);
    for (uint64_t e = 0; e < 2; ++e) {
      ASSERT_TRUE(s->StartEpoch(e, 0).ok());
      const std::vector<uint64_t> order = s->order().EpochSamples(e);
      EXPECT_EQ(DrainEpoch(*s), std::vector<uint64_t>(order.begin(), order.begin() + 960))
          << "rank " << rank << " epoch " << e;
    }
  }
}

TEST(StreamingSource, OpenEndedEpochsRunOnWithoutAFixedCount) {
  TempDir t;
  auto d =
      Dataset::Open(testing::WritePositionalDataset(t.File("f.rfd"), 1000, {.chunk_bytes = 4096}));
  ASSERT_TRUE(d.ok());
  for (uint32_t world : {1u, 3u}) {
    StreamingOptions o = Options(64, 2, 0);
    o.order.rank = world - 1;
    o.order.world_size = world;
    auto s = Source(*d, o);
    ASSERT_NE(s, nullptr);
    for (uint64_t e = 0; e < 5; ++e) {
      ASSERT_TRUE(s->StartEpoch(e, 0).ok()) << e;
      EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(e)) << "world " << world << " epoch " << e;
    }
    // A jump (a resumed run) restarts the plan there, and it runs on from it.
    ASSERT_TRUE(s->StartEpoch(9, 100).ok());
    const std::vector<uint64_t> epoch9 = s->order().EpochSamples(9);
    EXPECT_EQ(DrainEpoch(*s), std::vector<uint64_t>(epoch9.begin() + 100, epoch9.end()));
    ASSERT_TRUE(s->StartEpoch(10, 0).ok());
    EXPECT_EQ(DrainEpoch(*s), s->order().EpochSamples(10)) << "world " << world;
  }
  // A fixed count still ends the plan: an epoch past it is refused.
  auto fixed = Source(*d, Options(64, 2, 2));
  Status st = fixed->StartEpoch(2, 0);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "epoch 3 is past the streaming plan's 2");
}

// The host staging's copy split over its threads (a chunk of several MiB, not a whole number of
// pages) lands byte for byte where one thread's would, and releases the ring slot once.
TEST(HostChunkStaging, ACopySplitOverThreadsIsTheOneThreadCopy) {
  StagingLayout l;
  l.slots = 2;
  l.slot_bytes = (5 << 20) + 8192;
  l.max_batch = 1;
  l.sample_bytes = 16;
  l.label_bytes = 1;
  std::vector<uint8_t> chunk((5 << 20) + 4321);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<uint8_t>(i * 2654435761u >> 7);
  for (uint32_t threads : {1u, 3u, 4u}) {
    auto s = HostChunkStaging::Create(l, threads);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    std::atomic<int> released{0};
    ASSERT_TRUE((*s)->CopyIn(
                        1, chunk.data(), chunk.size(),
                        [](void* a) { ++*static_cast<std::atomic<int>*>(a); }, &released)
                    .ok());
    EXPECT_EQ(released.load(), 1);
    EXPECT_EQ(std::memcmp((*s)->host_area() + l.slot_bytes, chunk.data(), chunk.size()), 0)
        << threads << " threads";
  }
}

}  // namespace
}  // namespace rf
