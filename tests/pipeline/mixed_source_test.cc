// A sample mixture (pipeline/sources/mixed_source.h) through the library's loader on the host, at
// its raw level (the batches `ringfeed train` trains from), over positional datasets whose samples
// encode their index in the mixture's index space (dataset i's sample j: first_i + j): the
// datasets' shares stay within the bound of the weights at every prefix; each dataset's samples
// come once per its own epoch, on one rank and over ranks; a state continues exactly at the same
// world size, and through 2 -> 3 -> 2 ranks every sample of each dataset's interrupted epoch comes
// once (plus the padding repeats a resumed epoch may hold); what cannot be mixed is refused, naming
// it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "pipeline/loader.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/mixture.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

constexpr uint32_t kBatch = 8;

// One sample as the raw batches give it: its mixture index (from its bytes, checked against the
// index the batch says), its dataset's epoch (from its augmentation key) and its label.
struct Taken {
  uint64_t index;
  uint64_t epoch;
};

class MixedSourceTest : public ::testing::Test {
 protected:
  // Datasets of `sizes` samples, 1x8x8 uint8, small chunks: dataset i's samples encode
  // first_i + j.
  void Write(const std::vector<uint64_t>& sizes) {
    uint64_t first = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      testing::PositionalDatasetOptions o;
      o.chunk_bytes = 1024;
      o.first_sample = first;
      std::string name = "d";  // appended apart: GCC 12's -Wrestrict misfires on "d" + string
      name += std::to_string(i);
      name += ".rfd";
      const std::string path = dir_.File(name);
      testing::WritePositionalDataset(path, sizes[i], o);
      auto d = Dataset::Open(path);
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      datasets_.push_back(std::make_unique<Dataset>(std::move(*d)));
      first_.push_back(first);
      first += sizes[i];
    }
    total_ = first;
  }
  std::vector<const Dataset*> Datasets() const {
    std::vector<const Dataset*> out;
    for (const auto& d : datasets_) out.push_back(d.get());
    return out;
  }
  LoaderOptions Options(const std::vector<float>& weights, uint32_t world, uint32_t rank) const {
    LoaderOptions o;
    o.pipeline.data = datasets_[0]->path();
    o.pipeline.device = DeviceKind::kCpu;
    o.pipeline.order.batch_size = kBatch;
    o.pipeline.order.shuffle_window = 3;
    o.pipeline.order.seed = 7;
    o.pipeline.order.world_size = world;
    o.pipeline.order.rank = rank;
    o.pipeline.streaming.ring_slots = 4;
    o.pipeline.streaming.io = IoMode::kBuffered;
    o.pipeline.weights = weights;
    o.output_buffers = 0;  // the raw level: stored samples, and their augmentation keys
    return o;
  }
  std::unique_ptr<Loader> Open(const LoaderOptions& o) {
    auto l = Loader::Create(Datasets(), o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(*l) : nullptr;
  }
  // The dataset a mixture index is of.
  size_t SourceOf(uint64_t index) const {
    return static_cast<size_t>(std::upper_bound(first_.begin(), first_.end(), index) -
                               first_.begin() - 1);
  }
  // Up to `batches` batches of the loader's current epoch (StartEpoch called by the caller; with
  // `across`, on into the next mixture epochs), each sample's bytes and label checked against the
  // index the batch says.
  std::vector<Taken> Take(Loader& l, size_t batches, bool across = false) {
    std::vector<Taken> out;
    for (size_t b = 0; b < batches; ++b) {
      Result<Batch> r = l.source().Next();
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (r.ok() && r->n == 0 && across) {
        EXPECT_TRUE(l.StartEpoch(l.epoch() + 1, 0).ok());
        r = l.source().Next();
        EXPECT_TRUE(r.ok()) << r.status().ToString();
      }
      if (!r.ok() || r->n == 0) break;
      const std::vector<uint64_t>& indices = l.source().batch_samples();
      EXPECT_EQ(indices.size(), r->n);
      for (uint32_t j = 0; j < r->n; ++j) {
        const auto* s = static_cast<const uint8_t*>(r->samples) + j * 64;
        const uint64_t i = indices[j];
        EXPECT_EQ(testing::SampleIndex(s), i) << "sample " << j;
        EXPECT_EQ(static_cast<const uint8_t*>(r->labels)[j], testing::PositionalLabel(i));
        // The key: the dataset's epoch times all the samples, plus the index.
        const uint64_t key = r->sample_indices[j];
        EXPECT_EQ(key % total_, i);
        out.push_back({i, key / total_});
      }
    }
    return out;
  }

  testing::TempDir dir_;
  std::vector<std::unique_ptr<Dataset>> datasets_;
  std::vector<uint64_t> first_;
  uint64_t total_ = 0;
};

TEST_F(MixedSourceTest, SharesStayWithinTheBoundOfTheWeightsAtEveryPrefix) {
  Write({120, 90, 60});
  const std::vector<std::vector<float>> cases = {
      {0.7f, 0.3f, 0}, {0.5f, 0.3f, 0.2f}, {1e-6f, 1, 0}, {1, 0, 0}, {0.2f, 0.2f, 0.6f}};
  for (const std::vector<float>& given : cases) {
    SCOPED_TRACE(::testing::PrintToString(given));
    const size_t n = given.size();
    Result<std::vector<double>> w = NormalizeWeights(given, n);
    ASSERT_TRUE(w.ok());
    auto l = Open(Options(given, 1, 0));
    ASSERT_NE(l, nullptr);
    std::vector<size_t> order;  // each step's dataset
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      ASSERT_TRUE(l->StartEpoch(epoch, 0).ok());
      EXPECT_EQ(l->epoch_samples(), MixtureSamples({120, 90, 60}, *w));
      for (const Taken& t : Take(*l, ~size_t{0})) order.push_back(SourceOf(t.index));
    }
    std::vector<uint64_t> drawn(n, 0);
    for (uint64_t k = 0; k < order.size(); ++k) {
      // The rule itself, computed apart: a pure function of (weights, seed, k).
      ASSERT_EQ(order[k], MixtureSource(*w, 7, k, drawn)) << "step " << k;
      ASSERT_GT(given[order[k]], 0) << "a dataset of weight 0 drawn at step " << k;
      ++drawn[order[k]];
      for (size_t i = 0; i < n; ++i) {
        const double dev = std::abs(double(drawn[i]) - (*w)[i] * double(k + 1));
        ASSERT_LT(dev, std::max<double>(1, double(n) - 1)) << "dataset " << i << " at " << k;
      }
    }
    // The state holds the same draws.
    ASSERT_NE(l->mixture_state(), nullptr);
    EXPECT_EQ(l->mixture_state()->drawn, drawn);
    EXPECT_EQ(l->mixture_state()->steps, order.size());
  }
}

// Each dataset's draws, in order, are its epochs one after another: each epoch every sample once.
TEST_F(MixedSourceTest, EachDatasetsSamplesComeOncePerItsOwnEpoch) {
  Write({96, 60});
  auto l = Open(Options({0.55f, 0.45f}, 1, 0));
  ASSERT_NE(l, nullptr);
  std::vector<std::vector<Taken>> per(2);
  for (uint64_t epoch = 0; epoch < 4; ++epoch) {
    ASSERT_TRUE(l->StartEpoch(epoch, 0).ok());
    for (const Taken& t : Take(*l, ~size_t{0})) per[SourceOf(t.index)].push_back(t);
  }
  for (size_t i = 0; i < 2; ++i) {
    const uint64_t size = datasets_[i]->sample_count();
    ASSERT_GT(per[i].size(), 2 * size) << "dataset " << i << " had two epochs";
    for (size_t k = 0; k + size <= per[i].size(); k += size) {
      std::vector<uint64_t> seen;
      for (size_t j = k; j < k + size; ++j) {
        EXPECT_EQ(per[i][j].epoch, k / size) << "dataset " << i << " draw " << j;
        seen.push_back(per[i][j].index - first_[i]);
      }
      std::sort(seen.begin(), seen.end());
      for (uint64_t j = 0; j < size; ++j) ASSERT_EQ(seen[j], j) << "dataset " << i;
    }
  }
}

// Over ranks: every rank draws the same dataset at every step (their states are the same), takes
// its own part of that dataset's epoch, and the ranks' parts of each epoch are the dataset's
// samples, each once (the sizes leave no padding).
TEST_F(MixedSourceTest, RanksDrawTheSameDatasetsAndSplitEachEpoch) {
  Write({96, 60});
  const uint32_t world = 2;
  std::vector<std::unique_ptr<Loader>> ranks;
  std::vector<std::vector<Taken>> taken(world);
  for (uint32_t r = 0; r < world; ++r) {
    ranks.push_back(Open(Options({0.6f, 0.4f}, world, r)));
    ASSERT_NE(ranks.back(), nullptr);
    ASSERT_TRUE(ranks[r]->StartEpoch(0, 0).ok());
    EXPECT_EQ(ranks[r]->epoch_samples(), (96u + 60u) / world);
    taken[r] = Take(*ranks[r], 30, /*across=*/true);  // past each dataset's first epoch
  }
  EXPECT_EQ(*ranks[0]->mixture_state(), *ranks[1]->mixture_state());
  ASSERT_EQ(taken[0].size(), taken[1].size());
  for (size_t k = 0; k < taken[0].size(); ++k) {
    EXPECT_EQ(SourceOf(taken[0][k].index), SourceOf(taken[1][k].index)) << "step " << k;
  }
  for (size_t i = 0; i < 2; ++i) {
    std::map<uint64_t, int> count;
    for (uint32_t r = 0; r < world; ++r) {
      for (const Taken& t : taken[r]) {
        if (SourceOf(t.index) == i && t.epoch == 0) ++count[t.index];
      }
    }
    ASSERT_EQ(count.size(), datasets_[i]->sample_count()) << "dataset " << i;
    for (const auto& [index, n] : count) EXPECT_EQ(n, 1) << "sample " << index;
  }
}

// A state taken after some batches continues exactly: a loader created at it (`ringfeed train
// --resume`'s way) and one restored to it (load_state_dict's) hand out the batches the first
// would have next.
TEST_F(MixedSourceTest, AStateContinuesExactlyAtTheSameWorldSize) {
  Write({96, 60});
  const LoaderOptions o = Options({0.7f, 0.3f}, 2, 1);
  auto first = Open(o);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->StartEpoch(0, 0).ok());
  (void)Take(*first, 5);
  const MixtureState saved = *first->mixture_state();
  const uint64_t position = first->position();
  std::vector<Taken> want = Take(*first, 100);  // into the next epochs
  for (uint64_t e = 1; e < 3; ++e) {
    ASSERT_TRUE(first->StartEpoch(e, 0).ok());
    for (const Taken& t : Take(*first, 100)) want.push_back(t);
  }

  LoaderOptions at = o;
  at.pipeline.mixture = ContinueMixture(saved, 2, 2);
  EXPECT_EQ(at.pipeline.mixture, saved);
  auto created = Open(at);
  auto restored = Open(o);
  ASSERT_NE(created, nullptr);
  ASSERT_NE(restored, nullptr);
  ASSERT_TRUE(restored->StartEpoch(0, 0).ok());
  (void)Take(*restored, 2);  // somewhere else first
  ASSERT_TRUE(restored->RestoreMixture(saved, {}).ok());
  for (Loader* l : {created.get(), restored.get()}) {
    ASSERT_TRUE(l->StartEpoch(0, position).ok());
    std::vector<Taken> got = Take(*l, 100);
    for (uint64_t e = 1; e < 3; ++e) {
      ASSERT_TRUE(l->StartEpoch(e, 0).ok());
      for (const Taken& t : Take(*l, 100)) got.push_back(t);
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got[k].index, want[k].index) << "sample " << k;
      ASSERT_EQ(got[k].epoch, want[k].epoch) << "sample " << k;
    }
  }
}

// 2 ranks, then 3, then 2 again, each continuing the last's state (rank 0's): every sample of each
// dataset's interrupted epoch comes once over all of them, plus fewer repeats than the ranks of
// the resumed splits (a resumed epoch's padding); the mixture epoch goes on from where it was.
TEST_F(MixedSourceTest, TwoThenThreeThenTwoRanksTakeEverySampleOfEachEpochOnce) {
  Write({150, 110});
  const std::vector<float> weights = {0.6f, 0.4f};
  std::vector<Taken> all;
  uint32_t world = 2;
  MixtureState state;
  uint64_t epoch = 0, position = 0;
  ResumedEpoch resumed;  // the mixture epoch's
  uint32_t stage = 0;
  for (uint32_t next_world : {3u, 2u, 0u}) {
    SCOPED_TRACE("stage " + std::to_string(stage) + " at " + std::to_string(world) + " ranks");
    std::vector<std::unique_ptr<Loader>> ranks;
    for (uint32_t r = 0; r < world; ++r) {
      LoaderOptions o = Options(weights, world, r);
      o.pipeline.order.resumed = resumed;
      if (stage == 1) o.pipeline.mixture = state;  // created at the state: --resume's way
      ranks.push_back(Open(o));
      ASSERT_NE(ranks.back(), nullptr);
      if (stage == 2) {  // restored to it: load_state_dict's way
        ASSERT_TRUE(ranks[r]->RestoreMixture(state, resumed).ok());
      }
      ASSERT_TRUE(ranks[r]->StartEpoch(epoch, position).ok());
    }
    if (next_world != 0) {
      for (uint32_t r = 0; r < world; ++r) {
        for (const Taken& t : Take(*ranks[r], stage == 0 ? 7 : 5)) all.push_back(t);
      }
    } else {
      // To the end of every dataset's interrupted epoch.
      for (int guard = 0; guard < 200; ++guard) {
        const MixtureState& s = *ranks[0]->mixture_state();
        if (s.sources[0].epoch > 0 && s.sources[1].epoch > 0) break;
        for (uint32_t r = 0; r < world; ++r) {
          for (const Taken& t : Take(*ranks[r], 1, /*across=*/true)) all.push_back(t);
        }
      }
    }
    for (uint32_t r = 1; r < world; ++r) {
      ASSERT_EQ(*ranks[r]->mixture_state(), *ranks[0]->mixture_state()) << "rank " << r;
    }
    if (next_world == 0) break;
    // Rank 0's state, continued at the next world size.
    const ResumePoint at =
        ResumeAt(ranks[0]->epoch(), resumed.stretches, world, ranks[0]->position(), next_world);
    state = ContinueMixture(*ranks[0]->mixture_state(), world, next_world);
    resumed = at.resumed;
    epoch = ranks[0]->epoch();
    position = at.position;
    world = next_world;
    ++stage;
  }
  for (size_t i = 0; i < 2; ++i) {
    std::map<uint64_t, int> count;
    int taken = 0;
    for (const Taken& t : all) {
      if (SourceOf(t.index) == i && t.epoch == 0) {
        ++count[t.index];
        ++taken;
      }
    }
    EXPECT_EQ(count.size(), datasets_[i]->sample_count()) << "dataset " << i;
    std::printf("dataset %zu: %zu samples, %d taken in its interrupted epoch\n", i, count.size(),
                taken);
    // Each resume at another world size may pad its split with fewer repeats than its ranks.
    EXPECT_LT(taken - static_cast<int>(count.size()), 3 + 2) << "dataset " << i;
  }
}

TEST_F(MixedSourceTest, WhatCannotBeMixedIsRefusedNamingIt) {
  Write({40, 40});
  testing::PositionalDatasetOptions wide;
  wide.width = 4;
  const std::string other = dir_.File("wide.rfd");
  testing::WritePositionalDataset(other, 40, wide);
  auto d = Dataset::Open(other);
  ASSERT_TRUE(d.ok());
  std::vector<const Dataset*> mixed = {datasets_[0].get(), &*d};
  Result<std::unique_ptr<Loader>> l = Loader::Create(mixed, Options({1, 1}, 1, 0));
  ASSERT_FALSE(l.ok());
  EXPECT_TRUE(l.status().IsUsage());
  EXPECT_NE(l.status().ToString().find("sample shape 1x8x4, not 1x8x8"), std::string::npos)
      << l.status().ToString();
  EXPECT_NE(l.status().ToString().find(other), std::string::npos) << l.status().ToString();

  for (const std::vector<float>& bad :
       std::vector<std::vector<float>>{{-1, 1}, {NAN, 1}, {0, 0}, {1, 1, 1}}) {
    Result<std::unique_ptr<Loader>> r = Loader::Create(Datasets(), Options(bad, 1, 0));
    ASSERT_FALSE(r.ok()) << ::testing::PrintToString(bad);
    EXPECT_TRUE(r.status().IsUsage()) << r.status().ToString();
  }
  LoaderOptions managed = Options({1, 1}, 1, 0);
  managed.pipeline.mode = PipelineMode::kManaged;
  managed.pipeline.device = DeviceKind::kCuda;
  Result<std::unique_ptr<Loader>> m = Loader::Create(Datasets(), managed);
  EXPECT_FALSE(m.ok());

  // A state of another mixture is refused, and the loader goes on as it was.
  auto loader = Open(Options({1, 1}, 1, 0));
  ASSERT_NE(loader, nullptr);
  ASSERT_TRUE(loader->StartEpoch(0, 0).ok());
  const std::vector<Taken> before = Take(*loader, 2);
  MixtureState three;
  three.drawn = {0, 0, 0};
  three.sources.resize(3);
  EXPECT_TRUE(loader->RestoreMixture(three, {}).IsUsage());
  MixtureState past = *loader->mixture_state();
  past.sources[1].position = 999;
  const Status refused = loader->RestoreMixture(past, {});
  EXPECT_TRUE(refused.IsUsage());
  EXPECT_NE(refused.ToString().find("position 999 is past"), std::string::npos)
      << refused.ToString();
  MixtureState wrong_sum = *loader->mixture_state();
  ++wrong_sum.steps;
  EXPECT_TRUE(loader->RestoreMixture(wrong_sum, {}).IsUsage());
  EXPECT_EQ(Take(*loader, 1).size(), kBatch);
  EXPECT_EQ(loader->mixture_state()->steps, 3 * kBatch);
}

// Issue 40, A2: draws that sum to the steps but that the rule cannot have made (all of them from
// one dataset of weight 0.5, or from a dataset of weight 0) are refused, and the loader goes on
// as it was; every place the rule reaches is taken back.
TEST_F(MixedSourceTest, DrawsTheRuleCannotHaveMadeAreRefused) {
  Write({40, 40, 40});
  auto loader = Open(Options({1, 1, 0}, 1, 0));
  ASSERT_NE(loader, nullptr);
  ASSERT_TRUE(loader->StartEpoch(0, 0).ok());
  Take(*loader, 2);
  const MixtureState at = *loader->mixture_state();
  ASSERT_EQ(at.steps, 2 * kBatch);
  const auto refusal = [&](const MixtureState& s) {
    const Status st = loader->RestoreMixture(s, {});
    EXPECT_TRUE(st.IsUsage()) << st.ToString();
    return st.message();
  };
  MixtureState one_sided = at;
  one_sided.drawn = {2 * kBatch, 0, 0};
  EXPECT_EQ(refusal(one_sided),
            "the state's dataset 0 drew 16 of its 16 steps, which no mixture of these weights "
            "draws: the rule draws within 2 of 8 (weight 0.5)");
  MixtureState zero = at;
  zero.drawn = {kBatch, kBatch - 1, 1};
  EXPECT_EQ(refusal(zero),
            "the state's dataset 2 drew 1 of its 16 steps, but its weight is 0: it "
            "never draws");
  MixtureState wrapped = at;
  wrapped.drawn = {~uint64_t{0}, 17, 0};
  EXPECT_EQ(refusal(wrapped), "the state's draws sum to more than 2^64 - 1, not its 16 steps");
  // Every prefix of the rule's own draws passes.
  for (uint64_t k = 0; k < 200; ++k) {
    std::vector<uint64_t> drawn(3, 0);
    for (uint64_t j = 0; j < k; ++j) ++drawn[MixtureSource({0.5, 0.5, 0}, 7, j, drawn)];
    EXPECT_TRUE(CheckMixtureDraws({0.5, 0.5, 0}, k, drawn, "steps").ok()) << k;
  }
  EXPECT_EQ(loader->mixture_state()->steps, at.steps);
  EXPECT_EQ(Take(*loader, 1).size(), kBatch);
}

}  // namespace
}  // namespace rf
