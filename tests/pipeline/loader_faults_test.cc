// The loader under RINGFEED_FAULTS (io/fault_plan.h), as a program using the library would run it:
// reordered completions, short reads, a slow read and a transient EIO give batches identical to
// an unfaulted run's (the same samples in the same order, the same decoded bytes, the same
// labels); a persistent EIO fails the batch naming file, chunk, byte offset and attempts, and
// never hands out a batch of wrong data.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "pipeline/loader.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/scoped_faults.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

struct EpochBatches {
  std::vector<std::vector<uint64_t>> indices;
  std::vector<std::vector<uint8_t>> samples;  // float32 bytes, then int64 labels
  Status status;
};

// Every batch of epoch 1 of a host loader of batches of 20 (the positional samples are 1x8x8).
EpochBatches Load(const std::string& path, const std::string& faults) {
  testing::ScopedFaults env(faults);
  LoaderOptions o;
  o.pipeline.data = path;
  o.pipeline.device = DeviceKind::kCpu;
  o.pipeline.order.batch_size = 20;
  o.pipeline.order.shuffle_window = 3;
  o.pipeline.order.seed = 5;
  o.pipeline.streaming.ring_slots = 3;
  o.pipeline.streaming.io = IoMode::kBuffered;  // temp directories may be on tmpfs
  o.output.normalize = false;
  o.output_buffers = 2;
  EpochBatches out;
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  if (!l.ok()) {
    out.status = l.status();
    return out;
  }
  out.status = (*l)->StartEpoch(1, 0);
  while (out.status.ok()) {
    Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
    if (!b.ok()) {
      out.status = b.status();
      break;
    }
    if (*b == nullptr) break;
    const LoadedBatch& batch = **b;
    const size_t sample_bytes = batch.size() * 64 * sizeof(float);
    std::vector<uint8_t> bytes(sample_bytes + batch.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), batch.samples(), sample_bytes);
    std::memcpy(bytes.data() + sample_bytes, batch.labels(), batch.size() * sizeof(int64_t));
    out.indices.push_back(batch.indices());
    out.samples.push_back(std::move(bytes));
  }
  return out;
}

class LoaderFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::WritePositionalDataset(dir_.File("d.rfd"), 700);
    auto d = Dataset::Open(path_);
    ASSERT_TRUE(d.ok());
    ASSERT_GE(d->chunk_count(), 6u);
    chunk3_offset_ = d->chunk(3).entry.offset;
    clean_ = Load(path_, "");
    ASSERT_TRUE(clean_.status.ok()) << clean_.status.ToString();
    ASSERT_EQ(clean_.indices.size(), 35u);
  }

  void ExpectSameBatches(const std::string& faults) {
    SCOPED_TRACE(faults);
    const EpochBatches got = Load(path_, faults);
    ASSERT_TRUE(got.status.ok()) << got.status.ToString();
    EXPECT_EQ(got.indices, clean_.indices);
    EXPECT_TRUE(got.samples == clean_.samples);
  }

  TempDir dir_;
  std::string path_;
  uint64_t chunk3_offset_ = 0;
  EpochBatches clean_;
};

TEST_F(LoaderFaults, ReorderedCompletionsGiveTheSameBatches) { ExpectSameBatches("read:reorder"); }

TEST_F(LoaderFaults, ShortReadsAndRetriedErrorsGiveTheSameBatches) {
  ExpectSameBatches("read:short=100@chunk=2;read:eagain@chunk=4,times=2;read:eintr@chunk=0");
}

TEST_F(LoaderFaults, ATransientEioGivesTheSameBatches) {
  ExpectSameBatches("read:eio@chunk=3,times=2;read:eio@chunk=5,times=3");
}

// The slow chunk stalls the batches that need it; the reader then catches up and nothing is lost,
// repeated or changed. (No time is asserted: only that the delay ends and the batches match.)
TEST_F(LoaderFaults, ASlowReadStallsThenTheReaderCatchesUp) {
  ExpectSameBatches("read:delay=150ms@chunk=1;read:delay=100ms@chunk=4;read:reorder");
}

TEST_F(LoaderFaults, APersistentEioFailsTheBatchNamingFileChunkAndOffset) {
  const EpochBatches got = Load(path_, "read:eio@chunk=3,times=always");
  ASSERT_FALSE(got.status.ok());
  EXPECT_TRUE(got.status.IsIOError());
  EXPECT_EQ(got.status.ToString(), path_ + ": chunk 3 at byte " + std::to_string(chunk3_offset_) +
                                       ": read failed after 4 attempts: Input/output error "
                                       "(errno 5)");
  // Every batch handed out before the error is one of the clean run's, in its place.
  ASSERT_LT(got.indices.size(), clean_.indices.size());
  for (size_t i = 0; i < got.indices.size(); ++i) {
    EXPECT_EQ(got.indices[i], clean_.indices[i]);
    EXPECT_TRUE(got.samples[i] == clean_.samples[i]) << "batch " << i;
  }
}

}  // namespace
}  // namespace rf
