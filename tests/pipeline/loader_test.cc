// Loader on the host (the CPU loader): decoded batches carry every sample of an epoch once, with
// the right values, shape and labels; a held batch outlives later batches and the loader; a
// restart at a position continues the uninterrupted order; a consumer holding more batches than
// the pool has never blocks the loader; errors name file and chunk. Every case runs with Next()
// on the caller's thread and with the loader's worker (LoaderOptions::worker); the worker's own
// cases follow (a restart drops what it made ahead, the consumer's place and counts, its end).
#include "pipeline/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "pipeline/sources/batch_source.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::PositionalLabel;
using testing::PositionalSample;
using testing::TempDir;

constexpr uint64_t kSamples = 1000;

std::unique_ptr<Loader> Open(const LoaderOptions& o) { return testing::OpenLoader(o); }

// The parameter: LoaderOptions::worker.
class LoaderTest : public ::testing::TestWithParam<bool> {
 protected:
  LoaderOptions HostOptions(const std::string& path, uint32_t batch) const {
    LoaderOptions o = testing::HostOptions(path, batch);
    o.worker = GetParam();
    return o;
  }
};

std::vector<uint64_t> DrainEpoch(Loader& l, size_t sample_elems) {
  return testing::DrainDecodedEpoch(l, sample_elems);
}

TEST_P(LoaderTest, AnEpochDeliversEverySampleOnceDecodedAsFloats) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), kSamples);
  auto l = Open(HostOptions(path, 32));
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->sample_shape(), (std::vector<int64_t>{1, 8, 8}));
  EXPECT_EQ(l->batches_per_epoch(), (kSamples + 31) / 32);
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    ASSERT_TRUE(l->StartEpoch(epoch, 0).ok());
    std::vector<uint64_t> seen = DrainEpoch(*l, 64);
    ASSERT_EQ(seen.size(), kSamples);
    std::sort(seen.begin(), seen.end());
    for (uint64_t i = 0; i < kSamples; ++i) ASSERT_EQ(seen[i], i);
  }
  EXPECT_EQ(l->stats().batches, 2 * l->batches_per_epoch());
  EXPECT_GT(l->stats().bytes_read, 0u);
}

TEST_P(LoaderTest, AResumedEpochHasItsOwnBatchCountAndStretchesThatCannotBeAreRefused) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), kSamples);
  LoaderOptions o = HostOptions(path, 32);
  o.pipeline.order.rank = 1;
  o.pipeline.order.world_size = 2;
  // 3 ranks of ceil(1000 / 3) = 334 trained 100 each of epoch 1.
  o.pipeline.order.resumed = {1, {{3, 100}}};
  auto l = Open(o);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->batches_per_epoch(), 16u);  // epoch 0's: 500 samples
  const WindowOrder order(l->dataset().ChunkSampleCounts(), o.pipeline.order);
  ASSERT_TRUE(l->StartEpoch(1, 0).ok());
  const uint64_t resumed = order.EpochSampleCount(1);
  // 3 * 234 left, less the padding entries among them (2 of the 3 ranks pad), over 2 ranks.
  EXPECT_GE(resumed, 350u);
  EXPECT_LE(resumed, 351u);
  EXPECT_EQ(l->epoch_samples(), resumed);
  EXPECT_EQ(l->batches_per_epoch(), (resumed + 31) / 32);
  EXPECT_EQ(DrainEpoch(*l, 64), order.EpochSamples(1));
  ASSERT_TRUE(l->StartEpoch(2, 0).ok());
  EXPECT_EQ(l->batches_per_epoch(), 16u);
  EXPECT_EQ(DrainEpoch(*l, 64), order.EpochSamples(2));
  o.pipeline.order.resumed.stretches = {{3, 335}};
  Result<std::unique_ptr<Loader>> bad = Loader::Open(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsUsage());
  EXPECT_EQ(bad.status().message(),
            "stretch 1 of epoch 2 (world size 3): position 335 is past its 334 samples per rank");
}

TEST_P(LoaderTest, NormalizedChannelsLastBFloat16IsTheFormulaRounded) {
  TempDir dir;
  testing::PositionalDatasetOptions po;
  po.channels = 3;
  po.height = 4;
  po.width = 2;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), 200, po);
  LoaderOptions o = HostOptions(path, 16);
  o.output.dtype = DType::kBFloat16;
  o.output.layout = SampleLayout::kNHWC;
  o.output.normalize = true;
  auto l = Open(o);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->sample_shape(), (std::vector<int64_t>{4, 2, 3}));
  const format::Header& h = l->dataset().header();
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  Result<std::shared_ptr<LoadedBatch>> b = l->Next();
  ASSERT_TRUE(b.ok() && *b != nullptr);
  const LoadedBatch& batch = **b;
  EXPECT_EQ(batch.dtype(), DType::kBFloat16);
  EXPECT_EQ(batch.shape(), (std::vector<int64_t>{16, 4, 2, 3}));
  const uint16_t* out = static_cast<const uint16_t*>(batch.samples());
  uint8_t stored[24];
  for (uint32_t j = 0; j < batch.size(); ++j) {
    PositionalSample(batch.indices()[j], stored, sizeof stored);
    for (uint32_t c = 0; c < 3; ++c) {
      for (uint32_t p = 0; p < 8; ++p) {  // pixel p = y * 2 + x
        const float x =
            (float(stored[c * 8 + p]) - h.mean[c]) / (h.stddev[c] == 0 ? 1 : h.stddev[c]);
        ASSERT_EQ(out[(j * 8 + p) * 3 + c], FloatToBFloat16(x)) << "sample " << j << " c " << c;
      }
    }
  }
}

TEST_P(LoaderTest, GivenStatisticsNormalizeInsteadOfTheHeaders) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), 100);
  LoaderOptions o = HostOptions(path, 10);
  o.output.normalize = true;
  o.output.mean = {100.f};
  o.output.stddev = {4.f};
  auto l = Open(o);
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  Result<std::shared_ptr<LoadedBatch>> b = l->Next();
  ASSERT_TRUE(b.ok() && *b != nullptr);
  uint8_t stored[64];
  PositionalSample((*b)->indices()[3], stored, sizeof stored);
  const float* out = static_cast<const float*>((*b)->samples()) + 3 * 64;
  for (int k = 0; k < 64; ++k) ASSERT_EQ(out[k], (float(stored[k]) - 100.f) / 4.f) << k;

  o.output.mean = {1.f, 2.f};  // two channels' statistics for a one-channel dataset
  o.output.stddev = {1.f, 1.f};
  Result<std::unique_ptr<Loader>> wrong = Loader::Open(o);
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(wrong.status().IsUsage()) << wrong.status().ToString();

  o.output.mean = {1.f};  // statistics with normalize off would do nothing
  o.output.stddev = {1.f};
  o.output.normalize = false;
  Result<std::unique_ptr<Loader>> unused = Loader::Open(o);
  ASSERT_FALSE(unused.ok());
  EXPECT_NE(unused.status().message().find("normalize off"), std::string::npos);
}

TEST_P(LoaderTest, AHeldBatchOutlivesLaterBatchesAndTheLoader) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), kSamples);
  auto l = Open(HostOptions(path, 50));
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  Result<std::shared_ptr<LoadedBatch>> first = l->Next();
  ASSERT_TRUE(first.ok() && *first != nullptr);
  const std::shared_ptr<LoadedBatch> held = *first;
  const size_t bytes = held->size() * 64 * sizeof(float);
  const std::vector<uint8_t> copy(static_cast<const uint8_t*>(held->samples()),
                                  static_cast<const uint8_t*>(held->samples()) + bytes);
  // The pool has 2 buffers: holding one while 19 more pass through reuses the other only.
  std::vector<std::shared_ptr<LoadedBatch>> more;
  for (int k = 0; k < 19; ++k) {
    Result<std::shared_ptr<LoadedBatch>> b = l->Next();
    ASSERT_TRUE(b.ok() && *b != nullptr);
    if (k < 4) more.push_back(*b);  // holding five at once: the pool grows, nothing blocks
  }
  EXPECT_EQ(std::memcmp(held->samples(), copy.data(), bytes), 0);
  l.reset();
  EXPECT_EQ(std::memcmp(held->samples(), copy.data(), bytes), 0);
  for (uint32_t j = 0; j < held->size(); ++j) {
    EXPECT_EQ(testing::FloatSampleIndex(*held, j, 64), held->indices()[j]);
  }
}

TEST_P(LoaderTest, AStartAtAPositionContinuesTheUninterruptedOrder) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), kSamples);
  auto whole = Open(HostOptions(path, 24));
  ASSERT_NE(whole, nullptr);
  ASSERT_TRUE(whole->StartEpoch(1, 0).ok());
  const std::vector<uint64_t> order = DrainEpoch(*whole, 64);
  ASSERT_EQ(order.size(), kSamples);
  for (uint64_t position : {uint64_t{24} * 7, uint64_t{24} * 30}) {
    auto resumed = Open(HostOptions(path, 24));
    ASSERT_NE(resumed, nullptr);
    ASSERT_TRUE(resumed->StartEpoch(1, position).ok());
    const std::vector<uint64_t> rest = DrainEpoch(*resumed, 64);
    ASSERT_EQ(rest.size(), kSamples - position);
    EXPECT_TRUE(std::equal(rest.begin(), rest.end(), order.begin() + position));
  }
}

// Issue 40, W4: the last epoch a loader hands out is kMaxEpoch - 1, whose end leaves an epoch
// counter at kMaxEpoch, what a state or checkpoint holds; an epoch past it is refused at its
// start, naming the bound (it was handed out, and its end left 2^32, which no state holds).
TEST_P(LoaderTest, AnEpochPastTheLastOneAStateCanFollowIsRefusedAtItsStart) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), 100);
  LoaderOptions o = HostOptions(path, 32);
  o.epochs = 0;  // the plan without end, as a Python loader's
  auto l = Open(o);
  ASSERT_NE(l, nullptr);
  const Status last = l->StartEpoch(kMaxEpoch - 1, 0);
  ASSERT_TRUE(last.ok()) << last.ToString();
  EXPECT_EQ(DrainEpoch(*l, 64).size(), 100u);
  for (uint64_t epoch : {kMaxEpoch, kMaxEpoch + 1, ~uint64_t{0}}) {
    const Status st = l->StartEpoch(epoch, 0);
    EXPECT_TRUE(st.IsUsage()) << st.ToString();
    EXPECT_EQ(st.message(), "epoch " + std::to_string(epoch) +
                                " is past the last epoch a loader hands out, 4294967294 (epochs "
                                "count from 0; a state or checkpoint holds at most 4294967295, "
                                "where the last one's end leaves it)");
  }
}

TEST_P(LoaderTest, ARawLoaderRefusesDecodedBatches) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), 100);
  LoaderOptions o = HostOptions(path, 10);
  o.output_buffers = 0;
  auto l = Open(o);
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  Result<std::shared_ptr<LoadedBatch>> b = l->Next();
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsUsage());
  EXPECT_NE(b.status().message().find("raw source only"), std::string::npos);
  Result<Batch> raw = l->source().Next();  // the raw level serves stored batches
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->n, 10u);
  EXPECT_EQ(raw->sample_dtype, DType::kUInt8);
}

TEST_P(LoaderTest, ADecodeTheDatasetCannotTakeIsAUsageError) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), 100);
  LoaderOptions o = HostOptions(path, 10);
  o.output.dtype = DType::kUInt8;
  o.output.normalize = true;  // normalized values are not bytes
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_TRUE(l.status().IsUsage()) << l.status().ToString();
  EXPECT_NE(l.status().message().find("normalize"), std::string::npos) << l.status().ToString();
}

TEST_P(LoaderTest, ACorruptChunkFailsTheBatchNamingFileAndChunk) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), kSamples);
  {
    Result<Dataset> d = Dataset::Open(path);
    ASSERT_TRUE(d.ok());
    testing::FlipBit(path, d->chunk(2).entry.offset + 10, 1);
  }
  LoaderOptions o = HostOptions(path, 32);
  o.pipeline.order.shuffle = ShuffleMode::kNone;
  auto l = Open(o);
  ASSERT_NE(l, nullptr);
  const Status error = testing::FirstErrorOfEpoch(*l);
  ASSERT_FALSE(error.ok()) << "the corrupt chunk was delivered";
  EXPECT_NE(error.ToString().find(path), std::string::npos) << error.ToString();
  EXPECT_NE(error.ToString().find("chunk 2"), std::string::npos) << error.ToString();
}

INSTANTIATE_TEST_SUITE_P(CallersThreadOrWorker, LoaderTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Worker" : "CallersThread";
                         });

LoaderOptions WorkerOptions(const std::string& path, uint32_t batch) {
  LoaderOptions o = testing::HostOptions(path, batch);
  o.worker = true;
  o.output_buffers = 6;  // the worker makes up to 4 batches ahead
  return o;
}

// Time for the worker to make batches ahead (what the cases check holds however far it got).
void LetTheWorkerRunAhead() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

TEST(LoaderWorker, ARestartDropsTheBatchesMadeAheadAndContinuesFromTheGivenPlace) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), kSamples);
  auto whole = Open(testing::HostOptions(path, 24));
  ASSERT_NE(whole, nullptr);
  ASSERT_TRUE(whole->StartEpoch(1, 0).ok());
  const std::vector<uint64_t> order = DrainEpoch(*whole, 64);
  ASSERT_EQ(order.size(), kSamples);

  auto l = Open(WorkerOptions(path, 24));
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->StartEpoch(1, 0).ok());
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(l->Next().ok());
  LetTheWorkerRunAhead();
  // Its place is the batches handed out, not the worker's.
  EXPECT_EQ(l->position(), 5u * 24);
  EXPECT_EQ(l->stats().batches, 5u);
  // Back to batch 2, forward to batch 20: the order from there, the batches made ahead dropped.
  for (uint64_t position : {uint64_t{24} * 2, uint64_t{24} * 20}) {
    ASSERT_TRUE(l->StartEpoch(1, position).ok());
    Result<std::shared_ptr<LoadedBatch>> b = l->Next();
    ASSERT_TRUE(b.ok() && *b != nullptr);
    EXPECT_EQ((*b)->position(), position);
    for (uint32_t j = 0; j < (*b)->size(); ++j) {
      ASSERT_EQ((*b)->indices()[j], order[position + j]) << "position " << position;
      ASSERT_EQ(testing::FloatSampleIndex(**b, j, 64), order[position + j]);
    }
    LetTheWorkerRunAhead();
  }
  const std::vector<uint64_t> rest = DrainEpoch(*l, 64);
  ASSERT_EQ(rest.size(), kSamples - 24 * 21);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), order.begin() + 24 * 21));
  EXPECT_EQ(l->position(), kSamples);
}

TEST(LoaderWorker, AfterTheEpochsEndNextKeepsSayingSoUntilARestart) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), 100);
  auto l = Open(WorkerOptions(path, 30));
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  EXPECT_EQ(DrainEpoch(*l, 64).size(), 100u);
  for (int k = 0; k < 3; ++k) {
    Result<std::shared_ptr<LoadedBatch>> b = l->Next();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*b, nullptr) << "call " << k << " after the end";
  }
  ASSERT_TRUE(l->StartEpoch(1, 0).ok());
  EXPECT_EQ(DrainEpoch(*l, 64).size(), 100u);
}

TEST(LoaderWorker, AFailedBatchStaysFailedUntilARestartAndTheLoaderClosesWhileItWorks) {
  TempDir dir;
  const std::string path = testing::WritePositionalDataset(dir.File("d.rfd"), kSamples);
  uint64_t after_bad = 0;  // the first sample of chunk 3, in the stored order
  {
    Result<Dataset> d = Dataset::Open(path);
    ASSERT_TRUE(d.ok());
    testing::FlipBit(path, d->chunk(2).entry.offset + 10, 1);
    after_bad = d->chunk(3).first_sample;
  }
  LoaderOptions o = WorkerOptions(path, 32);
  o.pipeline.order.shuffle = ShuffleMode::kNone;
  auto l = Open(o);
  ASSERT_NE(l, nullptr);
  const Status error = testing::FirstErrorOfEpoch(*l);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.ToString().find("chunk 2"), std::string::npos) << error.ToString();
  Result<std::shared_ptr<LoadedBatch>> again = l->Next();
  ASSERT_FALSE(again.ok()) << "the loader went on past a failed chunk";
  // A restart past the bad chunk's samples serves again.
  ASSERT_TRUE(l->StartEpoch(0, after_bad).ok());
  Result<std::shared_ptr<LoadedBatch>> b = l->Next();
  ASSERT_TRUE(b.ok() && *b != nullptr) << b.status().ToString();
  EXPECT_EQ((*b)->indices()[0], after_bad);
  // Destroyed while the worker makes batches ahead: returns (the test would hang otherwise).
  l.reset();
}

}  // namespace
}  // namespace rf
