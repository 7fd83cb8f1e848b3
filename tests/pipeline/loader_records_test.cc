// The loader over records of any size (tokens): batches as values plus offsets, each record the
// one its global index names; the order of the tensor kinds (independent of the codec, the same
// on resume, each rank its own part); and what it refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "pipeline/loader.h"
#include "pipeline/order/window_order.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

using Docs = std::vector<std::vector<uint16_t>>;

struct Taken {
  std::vector<uint64_t> indices;
  size_t batches = 0;
};

// Every batch of epoch `epoch` from `position` on, each record checked against `docs` and its
// label against i % 7; the global indices in order.
Taken TakeEpoch(Loader& l, const Docs& docs, uint64_t epoch, uint64_t position = 0) {
  Taken t;
  EXPECT_TRUE(l.StartEpoch(epoch, position).ok());
  for (;;) {
    Result<std::shared_ptr<LoadedBatch>> r = l.Next();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || *r == nullptr) break;
    const LoadedBatch& b = **r;
    EXPECT_EQ(b.dtype(), DType::kUInt16);
    const int64_t* off = b.offsets();
    EXPECT_NE(off, nullptr);
    if (off == nullptr) break;
    EXPECT_EQ(off[0], 0);
    EXPECT_EQ(b.shape(), std::vector<int64_t>{off[b.size()]});
    const auto* values = static_cast<const uint16_t*>(b.samples());
    for (uint32_t i = 0; i < b.size(); ++i) {
      const uint64_t g = b.indices()[i];
      EXPECT_LT(g, docs.size());
      if (g >= docs.size()) continue;
      const std::vector<uint16_t> got(values + off[i], values + off[i + 1]);
      EXPECT_EQ(got, docs[g]) << "record " << g;
      EXPECT_EQ(b.labels()[i], int64_t(g % 7));
    }
    t.indices.insert(t.indices.end(), b.indices().begin(), b.indices().end());
    ++t.batches;
  }
  return t;
}

class LoaderRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    docs_ = testing::Documents(700, 1500);
    ASSERT_TRUE(testing::WriteDocuments(dir_.File("raw.rfd"), docs_).ok());
    ASSERT_TRUE(
        testing::WriteDocuments(dir_.File("zstd.rfd"), docs_, CodecSpec{Codec::kZstd, 3}).ok());
  }
  testing::TempDir dir_;
  Docs docs_;
};

TEST_F(LoaderRecords, EveryRecordOnceAnEpochInTheSameOrderWhateverTheCodec) {
  auto raw = testing::OpenLoader(testing::HostOptions(dir_.File("raw.rfd"), 32));
  auto zstd = testing::OpenLoader(testing::HostOptions(dir_.File("zstd.rfd"), 32));
  ASSERT_TRUE(raw && zstd);
  EXPECT_EQ(raw->plan().kind, BatchKind::kRecords);
  EXPECT_TRUE(raw->sample_shape().empty());
  for (uint64_t e = 0; e < 2; ++e) {
    const Taken a = TakeEpoch(*raw, docs_, e);
    const Taken b = TakeEpoch(*zstd, docs_, e);
    EXPECT_EQ(a.indices, b.indices);
    std::vector<uint64_t> sorted = a.indices;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), docs_.size());
    for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
    EXPECT_EQ(a.batches, (docs_.size() + 31) / 32);
  }
}

TEST_F(LoaderRecords, AResumedEpochContinuesExactly) {
  auto full = testing::OpenLoader(testing::HostOptions(dir_.File("zstd.rfd"), 24));
  ASSERT_TRUE(full);
  const Taken whole = TakeEpoch(*full, docs_, 1);
  auto resumed = testing::OpenLoader(testing::HostOptions(dir_.File("zstd.rfd"), 24));
  ASSERT_TRUE(resumed);
  const Taken rest = TakeEpoch(*resumed, docs_, 1, 240);
  ASSERT_EQ(rest.indices.size(), whole.indices.size() - 240);
  EXPECT_TRUE(std::equal(rest.indices.begin(), rest.indices.end(), whole.indices.begin() + 240));
}

TEST_F(LoaderRecords, EachRankTakesItsOwnRecords) {
  std::set<uint64_t> all;
  size_t total = 0;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    LoaderOptions o = testing::HostOptions(dir_.File("raw.rfd"), 16);
    o.pipeline.order.rank = rank;
    o.pipeline.order.world_size = 2;
    auto l = testing::OpenLoader(o);
    ASSERT_TRUE(l);
    const Taken t = TakeEpoch(*l, docs_, 0);
    total += t.indices.size();
    all.insert(t.indices.begin(), t.indices.end());
  }
  // Each rank's epoch holds the same count; the ranks' records are distinct (a shared tail
  // may be dealt whole to each, as for tensors: WindowOrder's rule).
  EXPECT_GE(all.size(), docs_.size() - 16);
  EXPECT_LE(total, docs_.size() + 32);
}

TEST_F(LoaderRecords, BatchesLargerThanTheFirstBufferGrowIt) {
  // One huge document among small ones: its batch needs more than the pool's first guess.
  Docs docs = testing::Documents(100, 20);
  docs[37].assign(200000, 7);
  ASSERT_TRUE(testing::WriteDocuments(dir_.File("big.rfd"), docs, {}, 64 << 10).ok());
  auto l = testing::OpenLoader(testing::HostOptions(dir_.File("big.rfd"), 8));
  ASSERT_TRUE(l);
  const Taken t = TakeEpoch(*l, docs, 0);
  EXPECT_EQ(t.indices.size(), docs.size());
}

// A directory of tokens datasets (io/dataset.h) is one: each part's largest record is its own,
// the directory's the largest of them, and every record comes once, in the directory's order,
// whatever part it is in. (Parts of 210, 280 and 210 documents: WriteDocuments labels a part's
// record i with i % 7, which is its global index's too.)
TEST_F(LoaderRecords, ADirectoryOfTokensPartsIsOneDataset) {
  testing::TempDir parts;
  const size_t ends[] = {210, 490, 700};
  size_t begin = 0;
  for (size_t p = 0; p < 3; ++p) {
    const Docs part(docs_.begin() + begin, docs_.begin() + ends[p]);
    ASSERT_TRUE(testing::WriteDocuments(parts.File("part-0000" + std::to_string(p) + ".rfd"), part,
                                        {}, 16 << 10, true, p == 1 ? 2 : 1)
                    .ok());
    begin = ends[p];
  }
  Result<Dataset> d = Dataset::Open(parts.path());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->part_count(), 3u);
  uint64_t largest = 0;
  std::set<uint64_t> part_largest;
  for (size_t p = 0; p < 3; ++p) {
    part_largest.insert(d->part(p).header.Shape().front());
    largest = std::max(largest, d->part(p).header.Shape().front());
  }
  EXPECT_GT(part_largest.size(), 1u);  // the parts' largest records differ
  EXPECT_EQ(d->header().Shape(), std::vector<uint64_t>{largest});
  EXPECT_EQ(d->sample_count(), docs_.size());
  for (ShuffleMode shuffle : {ShuffleMode::kNone, ShuffleMode::kWindow}) {
    LoaderOptions o = testing::HostOptions(parts.path(), 32);
    o.pipeline.order.shuffle = shuffle;
    auto l = testing::OpenLoader(o);
    ASSERT_TRUE(l);
    const Taken t = TakeEpoch(*l, docs_, 1);
    EXPECT_EQ(t.indices, WindowOrder(d->ChunkSampleCounts(), o.pipeline.order).EpochSamples(1));
    std::vector<uint64_t> sorted = t.indices;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), docs_.size());
    for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  }
  // Bytes records, or tokens of another dtype, are other records.
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kTokens;
  spec.sample_dtype = DType::kInt32;
  spec.has_labels = true;
  auto w = DatasetWriter::Create(parts.File("part-00003.rfd"), spec, {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const int32_t ids[3] = {1, 2, 3};
  const uint64_t offsets[2] = {0, 3};
  const uint8_t label = 0;
  ASSERT_TRUE((*w)->AppendRecords(ids, offsets, &label, 1).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  d = Dataset::Open(parts.path());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().ToString().find("sample dtype int32, not uint16"), std::string::npos)
      << d.status().ToString();
}

TEST_F(LoaderRecords, WhatRecordsCannotDoIsRefusedAsUsage) {
  LoaderOptions o = testing::HostOptions(dir_.File("raw.rfd"), 8);
  o.output.augment = "flip";
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_TRUE(l.status().IsUsage());
  EXPECT_NE(l.status().message().find("tokens records are not images"), std::string::npos);
  o = testing::HostOptions(dir_.File("raw.rfd"), 8);
  o.pipeline.mode = PipelineMode::kManaged;
  l = Loader::Open(o);
  ASSERT_FALSE(l.ok());
  // Refused as usage: for records (or, on a machine without a GPU, for the mode itself).
  EXPECT_TRUE(l.status().IsUsage());
  EXPECT_NE(l.status().message().find("managed"), std::string::npos) << l.status().ToString();
}

}  // namespace
}  // namespace rf
