// Packed sequences under the node partition (pipeline/sequences/sequence_plan.h): each machine of
// node_ranks consecutive ranks packs the same part of the corpus every epoch, shuffled within
// it, and the rules of the global partition hold: every token of an epoch handed out once over
// the ranks, every rank the same rows, a resume at another world size of the same machines
// continuing with exactly the rest, each machine's ranks still on its part; an epoch begun on
// other machines is refused naming them, and the refusal changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sequences/sequence_loader.h"
#include "tests/pipeline/sequence_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

constexpr uint32_t kLength = 31;
constexpr int32_t kDocSpan = 200;  // document i's ids: i * kDocSpan + 1 .. (unique, never 0)

LoaderOptions Options(uint32_t world, uint32_t rank, uint32_t node_ranks, bool pad = false) {
  LoaderOptions o;
  o.pipeline.device = DeviceKind::kCpu;
  o.pipeline.order.batch_size = 4;
  o.pipeline.order.world_size = world;
  o.pipeline.order.rank = rank;
  o.pipeline.order.node_ranks = node_ranks;
  o.pipeline.order.shuffle = ShuffleMode::kWindow;
  o.pipeline.order.shuffle_window = 3;
  o.pipeline.order.seed = 5;
  o.output.dtype = DType::kInt64;
  o.sequence.length = kLength;
  o.sequence.eod_token = 0;
  o.sequence.pad_token = -1;
  o.sequence.pad = pad;
  return o;
}

// What a rank handed out of one epoch (or of `batches` batches of it): the valid ids of its
// rows but the end-of-document tokens, in order, each row's first id, and its batches.
struct Taken {
  std::vector<int64_t> ids;
  std::vector<int64_t> row_starts;
  size_t batches = 0;
};

Taken Take(SequenceLoader& l, size_t batches = ~size_t{0}) {
  Taken out;
  for (size_t b = 0; b < batches; ++b) {
    Result<std::shared_ptr<LoadedBatch>> r = l.Next();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || !*r) break;
    ++out.batches;
    const auto& v = (*r)->views();
    const auto* tokens = static_cast<const int64_t*>(v[0].data);
    const auto* lengths = static_cast<const int64_t*>(v[1].data);
    for (int64_t i = 0; i < v[0].shape[0]; ++i) {
      const int64_t* row = tokens + i * (kLength + 1);
      if (lengths[i] > 0) out.row_starts.push_back(row[0]);
      for (int64_t k = 0; k < lengths[i]; ++k) {
        if (row[k] != 0) out.ids.push_back(row[k]);
      }
    }
  }
  return out;
}

std::set<int64_t> DocsOf(const std::vector<int64_t>& ids) {
  std::set<int64_t> out;
  for (int64_t id : ids) out.insert((id - 1) / kDocSpan);
  return out;
}

class SequencePartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(3);
    std::vector<std::vector<int32_t>> docs(700);
    for (size_t i = 0; i < docs.size(); ++i) {
      docs[i].resize(1 + rng() % 150);
      for (size_t j = 0; j < docs[i].size(); ++j)
        docs[i][j] = static_cast<int32_t>(i * kDocSpan + 1 + j);
      all_.insert(all_.end(), docs[i].begin(), docs[i].end());
    }
    std::sort(all_.begin(), all_.end());
    const Status st = testing::WriteInt32Documents(dir_.File("c.rfd"), docs, 4 << 10);
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto d = Dataset::Open(dir_.File("c.rfd"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dataset_ = std::make_unique<Dataset>(std::move(*d));
    ASSERT_GE(dataset_->chunk_count(), 40u);
  }
  std::unique_ptr<SequenceLoader> Open(const LoaderOptions& o) {
    auto l = SequenceLoader::Create({dataset_.get()}, SequenceSpecFor(o));
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(*l) : nullptr;
  }
  // Machine k's documents of 2 machines (a world of 2 ranks, one a machine: each rank's epoch).
  std::set<int64_t> PartOfTwo(uint32_t k) {
    auto l = Open(Options(2, k, 1));
    return l ? DocsOf(Take(*l).ids) : std::set<int64_t>{};
  }
  testing::TempDir dir_;
  std::vector<int64_t> all_;  // every id, sorted
  std::unique_ptr<Dataset> dataset_;
};

TEST_F(SequencePartitionTest, EachMachinePacksTheSamePartEveryEpochAndEveryTokenComesOnce) {
  // 4 ranks, 2 a machine; two epochs each.
  std::vector<std::vector<Taken>> got(4);
  for (uint32_t r = 0; r < 4; ++r) {
    auto l = Open(Options(4, r, 2));
    ASSERT_TRUE(l);
    for (int e = 0; e < 2; ++e) got[r].push_back(Take(*l));
  }
  for (int e = 0; e < 2; ++e) {
    std::vector<int64_t> ids;
    for (uint32_t r = 0; r < 4; ++r) {
      ids.insert(ids.end(), got[r][e].ids.begin(), got[r][e].ids.end());
      EXPECT_EQ(got[r][e].batches, got[0][e].batches) << "rank " << r << " epoch " << e;
    }
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, all_) << "epoch " << e;
  }
  std::set<int64_t> machine[2][2];  // [machine][epoch]
  std::vector<int64_t> order[2];    // machine 0's ids per epoch, in order
  for (uint32_t r = 0; r < 4; ++r) {
    for (int e = 0; e < 2; ++e) {
      const std::set<int64_t> docs = DocsOf(got[r][e].ids);
      machine[r / 2][e].insert(docs.begin(), docs.end());
      if (r == 0) order[e] = got[r][e].ids;
    }
  }
  for (int k = 0; k < 2; ++k) {
    EXPECT_FALSE(machine[k][0].empty());
    EXPECT_EQ(machine[k][0], machine[k][1]) << "machine " << k << "'s part moved between epochs";
  }
  std::vector<int64_t> both;
  std::set_intersection(machine[0][0].begin(), machine[0][0].end(), machine[1][0].begin(),
                        machine[1][0].end(), std::back_inserter(both));
  // A document is split between machines only where it is in no part: none.
  EXPECT_TRUE(both.empty()) << both.size() << " documents on both machines";
  EXPECT_NE(order[0], order[1]) << "machine 0's epochs in the same order: not shuffled";
  // The parts are those of any world of 2 machines (they depend on the machines, not the ranks).
  EXPECT_EQ(machine[0][0], PartOfTwo(0));
  EXPECT_EQ(machine[1][0], PartOfTwo(1));
}

TEST_F(SequencePartitionTest, PackingPadHandsOutEveryDocumentOnceOnItsMachine) {
  std::set<int64_t> seen;
  size_t rows = 0;
  for (uint32_t r = 0; r < 6; ++r) {  // 3 machines of 2
    auto l = Open(Options(6, r, 2, true));
    ASSERT_TRUE(l);
    const Taken t = Take(*l);
    for (int64_t first : t.row_starts) {
      EXPECT_EQ((first - 1) % kDocSpan, 0) << "a row not at its document's start";
      EXPECT_TRUE(seen.insert((first - 1) / kDocSpan).second) << "a document twice";
    }
    rows += t.row_starts.size();
  }
  EXPECT_EQ(rows, 700u);
  EXPECT_EQ(seen.size(), 700u);
}

TEST_F(SequencePartitionTest, ResumesAtAnotherWorldSizeOfTheSameMachinesWithExactlyTheRest) {
  std::vector<int64_t> ids;
  SequenceState state;
  {
    std::vector<std::unique_ptr<SequenceLoader>> four;
    for (uint32_t r = 0; r < 4; ++r) {
      four.push_back(Open(Options(4, r, 2)));
      ASSERT_TRUE(four.back());
      const Taken t = Take(*four.back(), 3);
      ASSERT_EQ(t.batches, 3u);
      ids.insert(ids.end(), t.ids.begin(), t.ids.end());
    }
    state = four[0]->state();
    for (uint32_t r = 1; r < 4; ++r) EXPECT_EQ(state, four[r]->state());
    EXPECT_EQ(state.node_ranks, 2u);
  }
  const std::set<int64_t> part[2] = {PartOfTwo(0), PartOfTwo(1)};
  for (uint32_t r = 0; r < 6; ++r) {  // 2 machines of 3
    auto l = Open(Options(6, r, 3));
    ASSERT_TRUE(l);
    const Status st = l->Restore(state);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const Taken t = Take(*l);
    for (int64_t doc : DocsOf(t.ids))
      EXPECT_TRUE(part[r / 3].count(doc))
          << "rank " << r << " packs document " << doc << " of the other machine's part";
    ids.insert(ids.end(), t.ids.begin(), t.ids.end());
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, all_);
}

TEST_F(SequencePartitionTest, AnEpochBegunOnOtherMachinesIsRefusedAndChangesNothing) {
  SequenceState begun, start;
  {
    auto l = Open(Options(4, 0, 2));
    ASSERT_TRUE(l);
    start = l->state();
    ASSERT_EQ(Take(*l, 2).batches, 2u);
    begun = l->state();
  }
  const Taken fresh = [&] {
    auto l = Open(Options(6, 1, 2));
    return l ? Take(*l, 2) : Taken{};
  }();
  auto l = Open(Options(6, 1, 2));  // 3 machines
  ASSERT_TRUE(l);
  const Status st = l->Restore(begun);
  EXPECT_TRUE(st.IsUsage()) << st.ToString();
  EXPECT_NE(st.message().find("begun on 2 machine(s) (world_size 4, node_ranks 2)"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(Take(*l, 2).ids, fresh.ids);  // as if never asked
  auto m = Open(Options(6, 1, 2));
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->Restore(start).ok());  // nothing of the epoch taken: any machines
  EXPECT_EQ(Take(*m, 2).ids, fresh.ids);
}

TEST_F(SequencePartitionTest, MoreMachinesThanChunksIsRefused) {
  const uint32_t machines = static_cast<uint32_t>(dataset_->chunk_count()) + 1;
  auto l = SequenceLoader::Create({dataset_.get()}, SequenceSpecFor(Options(machines, 0, 1)));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("fewer than the " + std::to_string(machines) + " machines"),
            std::string::npos)
      << l.status().message();
}

}  // namespace
}  // namespace rf
