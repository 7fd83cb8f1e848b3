// EpochLoader (pipeline/epoch_loader.h): the epoch protocol a training loop iterates (the epoch
// moving on with its last batch, stale iterations, set_epoch) and its checkpoints: a state
// continued exactly at its world size, shared each sample once at another, a mixture's, and a
// refused state leaving the loader as it was.
#include "pipeline/epoch_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "pipeline/sources/batch_source.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

constexpr uint64_t kSamples = 100;
constexpr uint32_t kBatch = 8;

class EpochLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"a.rfd", "b.rfd"}) {
      testing::WritePositionalDataset(dir_.File(name), kSamples);
      Result<Dataset> d = Dataset::Open(dir_.File(name));
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      datasets_.push_back(std::make_unique<Dataset>(std::move(d).value()));
    }
  }

  std::unique_ptr<EpochLoader> Open(uint32_t rank = 0, uint32_t world = 1, bool mixture = false) {
    LoaderOptions o = testing::HostOptions(dir_.File("a.rfd"), kBatch);
    o.pipeline.order.rank = rank;
    o.pipeline.order.world_size = world;
    o.worker = true;
    std::vector<const Dataset*> d = {datasets_[0].get()};
    if (mixture) {
      d.push_back(datasets_[1].get());
      o.pipeline.weights = {0.5f, 0.5f};
    }
    Result<std::unique_ptr<EpochLoader>> l = EpochLoader::Create(d, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(l).value() : nullptr;
  }

  // The sample indices of up to `batches` batches of one iteration (all: to its end).
  static std::vector<uint64_t> Take(EpochLoader& l, size_t batches = SIZE_MAX) {
    std::vector<uint64_t> seen;
    const EpochLoader::Iteration it = l.Begin();
    for (size_t i = 0; i < batches; ++i) {
      Result<EpochLoader::Taken> t = l.Next(it);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      if (!t.ok() || t->batch == nullptr) break;
      seen.insert(seen.end(), t->batch->indices().begin(), t->batch->indices().end());
    }
    return seen;
  }

  testing::TempDir dir_;
  std::vector<std::unique_ptr<Dataset>> datasets_;
};

TEST_F(EpochLoaderTest, TheEpochMovesOnWithItsLastBatch) {
  std::unique_ptr<EpochLoader> l = Open();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->batches(), (kSamples + kBatch - 1) / kBatch);
  const EpochLoader::Iteration it = l->Begin();
  std::vector<uint64_t> seen;
  for (uint64_t b = 0; b < l->batches(); ++b) {
    EXPECT_EQ(l->epoch(), 0u);
    Result<EpochLoader::Taken> t = l->Next(it);
    ASSERT_TRUE(t.ok() && t->batch) << t.status().ToString();
    seen.insert(seen.end(), t->batch->indices().begin(), t->batch->indices().end());
  }
  // The last batch handed out: the loader is at the next epoch's start, the iteration ends.
  EXPECT_EQ(l->epoch(), 1u);
  EXPECT_EQ(l->position(), 0u);
  Result<EpochLoader::Taken> end = l->Next(it);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->batch, nullptr);
  std::sort(seen.begin(), seen.end());
  std::vector<uint64_t> all(kSamples);
  for (uint64_t i = 0; i < kSamples; ++i) all[i] = i;
  EXPECT_EQ(seen, all);
  EXPECT_EQ(Take(*l).size(), kSamples);  // the next iteration is epoch 1
  EXPECT_EQ(l->epoch(), 2u);
}

TEST_F(EpochLoaderTest, SetEpochMakesEarlierIterationsStale) {
  std::unique_ptr<EpochLoader> l = Open();
  ASSERT_TRUE(l);
  const EpochLoader::Iteration it = l->Begin();
  ASSERT_TRUE(l->Next(it).ok());
  EXPECT_EQ(l->position(), kBatch);
  ASSERT_TRUE(l->SetEpoch(2).ok());
  EXPECT_EQ(l->position(), 0u);
  Result<EpochLoader::Taken> stale = l->Next(it);
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.status().message().find("this iterator is stale"), std::string::npos);
  const std::vector<uint64_t> two = Take(*l);
  std::unique_ptr<EpochLoader> fresh = Open();
  ASSERT_TRUE(fresh->SetEpoch(2).ok());
  EXPECT_EQ(Take(*fresh), two);  // epoch 2 from its start, wherever the loader was
  EXPECT_FALSE(l->SetEpoch(kMaxEpoch + 1).ok());
}

TEST_F(EpochLoaderTest, AStateContinuesWithTheBatchesTheSavedLoaderWouldHaveHandedOut) {
  std::unique_ptr<EpochLoader> saved = Open();
  ASSERT_TRUE(saved);
  Take(*saved, 3);
  const StateJson state = saved->State();
  const std::vector<uint64_t> rest = Take(*saved);
  std::unique_ptr<EpochLoader> resumed = Open();
  ASSERT_TRUE(resumed->Restore(state).ok());
  EXPECT_EQ(resumed->position(), 3 * kBatch);
  EXPECT_EQ(Take(*resumed), rest);
  EXPECT_EQ(resumed->State(), saved->State());
}

TEST_F(EpochLoaderTest, AtAnotherWorldSizeTheRanksShareWhatTheSavedRanksLeft) {
  std::set<uint64_t> taken;
  StateJson state;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    std::unique_ptr<EpochLoader> l = Open(rank, 2);
    ASSERT_TRUE(l);
    for (uint64_t i : Take(*l, 2)) EXPECT_TRUE(taken.insert(i).second);
    if (rank == 0) state = l->State();
  }
  std::vector<uint64_t> rest;
  uint64_t share = 0;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    std::unique_ptr<EpochLoader> l = Open(rank, 3);
    ASSERT_TRUE(l);
    ASSERT_TRUE(l->Restore(state).ok());
    EXPECT_EQ(l->position(), 0u);
    // The resumed epoch's own count, the same on every rank: an equal share of what was left.
    if (rank == 0) share = l->epoch_samples();
    EXPECT_EQ(l->epoch_samples(), share);
    const std::vector<uint64_t> part = Take(*l);
    EXPECT_EQ(part.size(), share);
    rest.insert(rest.end(), part.begin(), part.end());
    EXPECT_EQ(l->epoch(), 1u);
    EXPECT_EQ(l->epoch_samples(), (kSamples + 2) / 3);  // the next epoch: an ordinary one
  }
  // Each sample the saved ranks left, once; the ranks' equal shares pad with fewer than 3.
  std::set<uint64_t> all(taken);
  for (uint64_t i : rest) {
    EXPECT_EQ(taken.count(i), 0u) << i;
    all.insert(i);
  }
  EXPECT_EQ(all.size(), kSamples);
  EXPECT_LT(rest.size(), kSamples - taken.size() + 3);
}

TEST_F(EpochLoaderTest, AMixturesStateContinuesItsStream) {
  std::unique_ptr<EpochLoader> saved = Open(0, 1, /*mixture=*/true);
  ASSERT_TRUE(saved);
  Take(*saved, 5);
  const StateJson state = saved->State();
  EXPECT_EQ(state["kind"], "mixture");
  const std::vector<uint64_t> rest = Take(*saved, 10);
  std::unique_ptr<EpochLoader> resumed = Open(0, 1, true);
  ASSERT_TRUE(resumed->Restore(state).ok());
  EXPECT_EQ(Take(*resumed, 10), rest);
}

TEST_F(EpochLoaderTest, ARefusedStateLeavesTheLoaderAsItWas) {
  std::unique_ptr<EpochLoader> l = Open();
  ASSERT_TRUE(l);
  Take(*l, 2);
  StateJson other = l->State();
  other["seed"] = 12;
  other["position"] = 0;
  const Status s = l->Restore(other);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "load_state_dict: the state is of other batches: seed: the state has 12, this "
            "loader 11");
  StateJson past = l->State();
  past["position"] = 1000;
  EXPECT_EQ(l->Restore(past).message(),
            "load_state_dict: position 1000 is no batch boundary of this loader's epoch 0 "
            "(multiples of batch_size 8 below 100)");
  EXPECT_EQ(l->position(), 2 * kBatch);
  std::unique_ptr<EpochLoader> twin = Open();
  Take(*twin, 2);
  EXPECT_EQ(Take(*l), Take(*twin));
}

// Packed sequences through the same loader: an iteration runs to one dataset's epoch end, the
// state continues the stream exactly, set_epoch starts an epoch afresh.
TEST_F(EpochLoaderTest, PackedSequencesKeepTheirPlaceInTheirOwnState) {
  ASSERT_TRUE(testing::WriteDocuments(dir_.File("tokens.rfd"), testing::Documents(60, 40)).ok());
  Result<Dataset> d = Dataset::Open(dir_.File("tokens.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  LoaderOptions o = testing::HostOptions(dir_.File("tokens.rfd"), 4);
  o.sequence.length = 16;
  o.output.dtype = DType::kInt64;
  const auto open = [&] {
    Result<std::unique_ptr<EpochLoader>> l = EpochLoader::Create({&*d}, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(l).value() : nullptr;
  };
  // A batch's tokens, as one list.
  const auto tokens = [](EpochLoader& l, size_t batches) {
    std::vector<int64_t> out;
    const EpochLoader::Iteration it = l.Begin();
    for (size_t i = 0; i < batches; ++i) {
      Result<EpochLoader::Taken> t = l.Next(it);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      if (!t.ok() || !t->batch) break;
      const LoadedBatch::View& v = t->batch->views().at(0);
      const int64_t* p = static_cast<const int64_t*>(v.data);
      out.insert(out.end(), p, p + v.shape[0] * v.shape[1]);
    }
    return out;
  };
  std::unique_ptr<EpochLoader> saved = open();
  ASSERT_TRUE(saved);
  const uint64_t batches = saved->batches();
  ASSERT_GT(batches, 3u);
  tokens(*saved, 2);
  EXPECT_EQ(saved->epoch(), 0u);
  EXPECT_EQ(saved->position(), 8u);  // rows
  const StateJson state = saved->State();
  EXPECT_EQ(state["kind"], "sequences");
  const std::vector<int64_t> rest = tokens(*saved, batches);  // to the epoch's end
  EXPECT_EQ(saved->epoch(), 1u);
  std::unique_ptr<EpochLoader> resumed = open();
  ASSERT_TRUE(resumed->Restore(state).ok());
  EXPECT_EQ(tokens(*resumed, batches), rest);
  // set_epoch: epoch 1 from its start, whatever the loader was at.
  std::unique_ptr<EpochLoader> fresh = open();
  tokens(*fresh, batches + 1);  // epoch 0 and its end
  const std::vector<int64_t> one = tokens(*fresh, 2);
  ASSERT_TRUE(resumed->SetEpoch(1).ok());
  EXPECT_EQ(resumed->position(), 0u);
  EXPECT_EQ(tokens(*resumed, 2), one);
  StateJson other = state;
  other["sequence_length"] = 32;
  EXPECT_NE(resumed->Restore(other).message().find("sequence_length: the state has 32"),
            std::string::npos);
}

}  // namespace
}  // namespace rf
