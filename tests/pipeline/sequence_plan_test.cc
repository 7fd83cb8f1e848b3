// The packed sequences' rank split and resume (pipeline/sequences/sequence_plan.h) and the
// mixture's rule (pipeline/sequences/sequence_loader.h), as functions: every sequence of an epoch
// reaches exactly one rank once through any chain of resumes at other world sizes, every rank hands
// out the same rows, and a mixture's draws stay within the stated bound of the weights at every
// prefix.
#include "pipeline/sequences/sequence_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "io/dataset.h"
#include "pipeline/sequences/sequence_loader.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

TEST(SequenceSplit, RanksTakeContiguousNearEqualSharesAndStepTogether) {
  const SequenceList list = {{0, 10}, {20, 23}};  // 13 sequences
  std::vector<uint64_t> seen;
  for (uint32_t r = 0; r < 4; ++r) {
    const RankSequences s = SliceSequences(list, 4, r);
    EXPECT_EQ(s.rows, 4u);  // ceil(13 / 4)
    EXPECT_TRUE(s.count == 3 || s.count == 4);
    for (const SequenceRange& g : s.ranges)
      for (uint64_t j = g.begin; j < g.end; ++j) seen.push_back(j);
  }
  std::vector<uint64_t> want;
  for (const SequenceRange& g : list)
    for (uint64_t j = g.begin; j < g.end; ++j) want.push_back(j);
  EXPECT_EQ(seen, want);  // in stream order: rank r's slice follows rank r - 1's
}

// Random chains of interrupted runs at random world sizes: the sequences handed out are the
// epoch's, each once, and the list stays a few ranges.
TEST(SequenceSplit, ChainsOfResumesHandOutEverySequenceOnce) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const uint64_t total = rng() % 5000 + 1;
    SequenceList list = {{0, total}};
    std::vector<int> count(total, 0);
    size_t worlds = 0;  // each run's remainder adds at most one range a rank
    for (int run = 0; run < 6 && SequenceCount(list) > 0; ++run) {
      const auto world = static_cast<uint32_t>(rng() % 9 + 1);
      const uint64_t rows_each = (SequenceCount(list) + world - 1) / world;
      const bool last = run == 5 || rng() % 4 == 0;
      const uint64_t rows = last ? rows_each : rng() % (rows_each + 1);
      for (uint32_t r = 0; r < world; ++r) {
        const RankSequences s = SliceSequences(list, world, r);
        ASSERT_EQ(s.rows, rows_each);
        uint64_t taken = 0;
        for (const SequenceRange& g : s.ranges)
          for (uint64_t j = g.begin; j < g.end && taken < rows; ++j, ++taken) ++count[j];
      }
      list = RemainingSequences(list, world, rows);
      worlds += world;
      EXPECT_LE(list.size(), worlds);
      if (last) break;
    }
    for (const SequenceRange& g : list)
      for (uint64_t j = g.begin; j < g.end; ++j) ++count[j];  // what a last run would take
    for (uint64_t j = 0; j < total; ++j) ASSERT_EQ(count[j], 1) << "sequence " << j;
  }
}

TEST(Mixture, DrawsStayWithinTheBoundOfTheWeightsAtEveryPrefix) {
  std::mt19937_64 rng(5);
  double worst = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = rng() % 5 + 1;
    std::vector<float> given(n);
    for (float& w : given)
      w = static_cast<float>(std::ldexp(double(rng() % 1000 + 1), -int(rng() % 20)));
    if (trial % 7 == 0) given[0] = 0;
    if (trial % 7 == 0 && n == 1) given[0] = 1;
    Result<std::vector<double>> w = NormalizeWeights(given, n);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    std::vector<uint64_t> drawn(n, 0);
    for (uint64_t k = 0; k < 4000; ++k) {
      const size_t i = MixtureSource(*w, trial, k, drawn);
      ASSERT_GT((*w)[i], 0) << "a source of weight 0 drawn";
      ++drawn[i];
      for (size_t j = 0; j < n; ++j) {
        const double dev = std::abs(static_cast<double>(drawn[j]) - (*w)[j] * double(k + 1));
        worst = std::max(worst, dev);
        ASSERT_LT(dev, std::max<double>(1, double(n) - 1)) << "source " << j << " at " << k;
      }
    }
  }
  std::printf("largest |drawn - w k| over the trials: %.4f\n", worst);
}

TEST(Mixture, WeightsNoMixtureCanHaveAreRefused) {
  EXPECT_FALSE(NormalizeWeights({0.5f, -0.1f}, 2).ok());
  EXPECT_FALSE(NormalizeWeights({NAN, 1}, 2).ok());
  EXPECT_FALSE(NormalizeWeights({INFINITY, 1}, 2).ok());
  EXPECT_FALSE(NormalizeWeights({0, 0}, 2).ok());
  EXPECT_EQ(NormalizeWeights({1, 1}, 3).status().ToString(),
            "weights: one weight a dataset: 3 datasets, 2 weights");
  auto w = NormalizeWeights({3, 1}, 2);
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ((*w)[0], 0.75);
}

// Issue 40: a directory whose part of format version 2 (no tokens in its chunk index) is read
// with sequence_length named the directory's newest version, 3, for that part: the part's own.
TEST(SequencePlan, APartWithoutTokenCountsIsNamedWithItsOwnVersion) {
  testing::TempDir dir;
  const auto docs = testing::Documents(50, 40, 2);
  ASSERT_TRUE(testing::WriteDocuments(dir.File("a.rfd"), docs, {}, 16 << 10, false).ok());  // v3
  ASSERT_TRUE(testing::WriteDocuments(dir.File("b.rfd"), docs, {}, 16 << 10, false, 1, 2).ok());
  auto d = Dataset::Open(dir.path());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->header().version, 3u);
  OrderSettings order;
  auto plan = SequencePlan::Make(*d, order, 31, true, false, false);
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(plan.status().IsUsage());
  EXPECT_EQ(plan.status().message(),
            "sequence_length: " + dir.File("b.rfd") +
                ": chunk 0: the chunk index does not say how many tokens the chunk holds (format "
                "version 2); rewrite the part with `ringfeed-convert recompress` (version 3)");
}

}  // namespace
}  // namespace rf
