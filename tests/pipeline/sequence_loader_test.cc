// SequenceLoader (pipeline/sequences/sequence_loader.h) on the host, through its packing worker:
// every token of an epoch handed out once, in the stream's order; a state restored mid-epoch, at
// the same and at another world size, continues with exactly the rest; errors of a restore leave
// the loader as it was. The threaded suites run it under ThreadSanitizer (the worker and the
// consumer).
#include "pipeline/sequences/sequence_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "io/dataset.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sources/batch_source.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

constexpr uint32_t kLength = 31;

LoaderOptions Options(uint32_t world, uint32_t rank, bool shuffle) {
  LoaderOptions o;
  o.pipeline.device = DeviceKind::kCpu;
  o.pipeline.order.batch_size = 4;
  o.pipeline.order.world_size = world;
  o.pipeline.order.rank = rank;
  o.pipeline.order.shuffle = shuffle ? ShuffleMode::kWindow : ShuffleMode::kNone;
  o.pipeline.order.shuffle_window = 3;
  o.output.dtype = DType::kInt64;
  o.sequence.length = kLength;
  o.sequence.eod_token = 0;
  o.sequence.pad_token = -1;
  return o;
}

// The valid tokens of the rows of up to `batches` batches (the epoch's rest where fewer).
std::vector<int64_t> Take(SequenceLoader& l, size_t batches = ~size_t{0}) {
  std::vector<int64_t> out;
  for (size_t b = 0; b < batches; ++b) {
    Result<std::shared_ptr<LoadedBatch>> r = l.Next();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || !*r) break;
    const auto& v = (*r)->views();
    EXPECT_EQ(v.size(), 4u);
    const auto* tokens = static_cast<const int64_t*>(v[0].data);
    const auto* lengths = static_cast<const int64_t*>(v[1].data);
    for (int64_t i = 0; i < v[0].shape[0]; ++i)
      out.insert(out.end(), tokens + i * (kLength + 1), tokens + i * (kLength + 1) + lengths[i]);
  }
  return out;
}

class SequenceLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    docs_ = testing::Documents(400, 150, 9);
    for (auto& d : docs_)
      for (auto& t : d) t = static_cast<uint16_t>(t % 1000 + 1);  // 0 is the end of a document
    ASSERT_TRUE(testing::WriteDocuments(dir_.File("c.rfd"), docs_, {}, 8 << 10, false).ok());
    auto d = Dataset::Open(dir_.File("c.rfd"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dataset_ = std::make_unique<Dataset>(std::move(*d));
    for (const auto& doc : docs_) {
      stream_.insert(stream_.end(), doc.begin(), doc.end());
      stream_.push_back(0);
    }
  }
  std::unique_ptr<SequenceLoader> Open(uint32_t world, uint32_t rank, bool shuffle) {
    auto l =
        SequenceLoader::Create({dataset_.get()}, SequenceSpecFor(Options(world, rank, shuffle)));
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(*l) : nullptr;
  }
  testing::TempDir dir_;
  std::vector<std::vector<uint16_t>> docs_;
  std::vector<int64_t> stream_;
  std::unique_ptr<Dataset> dataset_;
};

TEST_F(SequenceLoaderTest, OneRankHandsOutTheStreamInOrderThenTheNextEpoch) {
  auto l = Open(1, 0, false);
  ASSERT_TRUE(l);
  EXPECT_EQ(Take(*l), stream_);
  EXPECT_EQ(l->state().sources[0].epoch, 1u);
  EXPECT_EQ(Take(*l), stream_);  // epoch 1, unshuffled: the same stream
}

TEST_F(SequenceLoaderTest, ResumesAtAnotherWorldSizeHandOutEveryTokenOnce) {
  std::vector<int64_t> got;
  SequenceState state;
  {
    std::vector<std::unique_ptr<SequenceLoader>> two;
    for (uint32_t r = 0; r < 2; ++r) {
      two.push_back(Open(2, r, true));
      ASSERT_TRUE(two.back());
      const std::vector<int64_t> part = Take(*two.back(), 5);
      got.insert(got.end(), part.begin(), part.end());
    }
    state = two[0]->state();
    EXPECT_EQ(state, two[1]->state());  // ranks at one place hold one state
  }
  for (uint32_t r = 0; r < 3; ++r) {
    auto l = Open(3, r, true);
    ASSERT_TRUE(l);
    ASSERT_TRUE(l->Restore(state).ok());
    const std::vector<int64_t> part = Take(*l);
    got.insert(got.end(), part.begin(), part.end());
  }
  std::vector<int64_t> want = stream_;
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

TEST_F(SequenceLoaderTest, ARestoreContinuesExactlyAndARefusedOneChangesNothing) {
  auto a = Open(1, 0, true);
  ASSERT_TRUE(a);
  Take(*a, 3);
  const SequenceState at = a->state();
  const std::vector<int64_t> rest = Take(*a);
  auto b = Open(1, 0, true);
  ASSERT_TRUE(b);
  Take(*b, 1);
  const SequenceState before = b->state();
  SequenceState bad = at;
  bad.sources[0].position = 1u << 30;
  const Status st = b->Restore(bad);
  EXPECT_TRUE(st.IsUsage()) << st.ToString();
  EXPECT_EQ(b->state(), before);
  ASSERT_TRUE(b->Restore(at).ok());
  EXPECT_EQ(Take(*b), rest);
}

// Issue 40, W2: with int32 tokens an end-of-document or pad token past int32 came out cut to
// another id (2^40 + 7 as 7, a real token); it is refused as int64 ids are.
TEST_F(SequenceLoaderTest, ATokenTheInt32OutputCannotHoldIsRefused) {
  const auto refusal = [&](int64_t eod, int64_t pad) {
    LoaderOptions o = Options(1, 0, false);
    o.output.dtype = DType::kInt32;
    o.sequence.eod_token = eod;
    o.sequence.pad_token = pad;
    auto l = SequenceLoader::Create({dataset_.get()}, SequenceSpecFor(o));
    if (l.ok()) return std::string();
    EXPECT_TRUE(l.status().IsUsage()) << l.status().ToString();
    return l.status().message();
  };
  const std::string range =
      " does not fit the output dtype int32 (-2147483648 to 2147483647); "
      "use dtype int64";
  EXPECT_EQ(refusal((int64_t{1} << 40) + 7, -1), "eod_token 1099511627783" + range);
  EXPECT_EQ(refusal(int64_t{1} << 31, -1), "eod_token 2147483648" + range);
  EXPECT_EQ(refusal(0, (int64_t{1} << 32) + 3), "pad_token 4294967299" + range);
  EXPECT_EQ(refusal(0, -(int64_t{1} << 31) - 1), "pad_token -2147483649" + range);
  EXPECT_EQ(refusal((int64_t{1} << 31) - 1, -(int64_t{1} << 31)), "");
}

// Issue 40, W4: an epoch past the last one a loader hands out is refused when the packing
// reaches it, naming the bound, and the state at the bound stays where it is.
TEST_F(SequenceLoaderTest, AnEpochPastTheLastOneIsRefusedWhereThePackingReachesIt) {
  auto l = Open(1, 0, false);
  ASSERT_TRUE(l);
  SequenceState s = l->state();
  s.sources[0].epoch = kMaxEpoch - 1;
  ASSERT_TRUE(l->Restore(s).ok());
  EXPECT_EQ(Take(*l), stream_);
  EXPECT_EQ(l->state().sources[0].epoch, kMaxEpoch);  // what a state holds
  Result<std::shared_ptr<LoadedBatch>> past = l->Next();
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(past.status().IsUsage()) << past.status().ToString();
  EXPECT_EQ(past.status().message().find("epoch 4294967295 is past the last epoch a loader hands "
                                         "out, 4294967294"),
            0u)
      << past.status().ToString();
  EXPECT_EQ(l->state().sources[0].epoch, kMaxEpoch);
  s.sources[0].epoch = kMaxEpoch + 1;
  const Status st = l->Restore(s);
  EXPECT_EQ(st.message(),
            "the state's dataset 0 is at epoch 4294967296, past the most an epoch "
            "counts to, 4294967295");
}

// Issue 40, A2: a packed state whose counters disagree was taken (drawn [2^63, 0] then gave none
// of the weight-0.7 dataset's rows); a state no loader reaches is refused naming what is wrong,
// and the loader goes on as it was.
TEST_F(SequenceLoaderTest, AStateWhoseCountersNoLoaderReachesIsRefused) {
  auto other = testing::Documents(100, 80, 3);
  ASSERT_TRUE(testing::WriteDocuments(dir_.File("b.rfd"), other, {}, 8 << 10, false).ok());
  auto b = Dataset::Open(dir_.File("b.rfd"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  LoaderOptions o = Options(1, 0, true);
  o.pipeline.weights = {0.7f, 0.3f};
  auto made = SequenceLoader::Create({dataset_.get(), &*b}, SequenceSpecFor(o));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  SequenceLoader& l = **made;
  Take(l, 3);
  const SequenceState at = l.state();
  ASSERT_EQ(at.rows, 12u);
  const auto refusal = [&](const SequenceState& s) {
    const Status st = l.Restore(s);
    EXPECT_TRUE(st.IsUsage()) << st.ToString();
    return st.message();
  };
  SequenceState s = at;
  s.drawn = {uint64_t{1} << 63, 0};
  EXPECT_EQ(refusal(s), "the state's draws sum to 9223372036854775808, not its 12 rows");
  s.rows = uint64_t{1} << 63;
  EXPECT_EQ(refusal(s).find("the state's dataset 0 drew 9223372036854775808 of its "
                            "9223372036854775808 rows, which no mixture of these weights draws"),
            0u);
  s = at;
  s.rows = ~uint64_t{0};
  EXPECT_EQ(refusal(s), "the state's draws sum to 12, not its 18446744073709551615 rows");
  s = at;
  s.sources[1].position = l.state().sources[1].position + 10000;
  EXPECT_EQ(refusal(s).find("the state's dataset 1 is at row "), 0u);
  // A mixture's dataset at its epoch's end has moved on already.
  s = at;
  s.sources[1] = {0, 0, 1, {{0, 1}}};
  s.sources[1].position = 1;
  EXPECT_EQ(refusal(s),
            "the state's dataset 1 is at row 1 of an epoch of 1 rows a rank (a "
            "mixture's dataset goes on into its next epoch at the row that ends one)");
  EXPECT_EQ(l.state(), at);
  ASSERT_TRUE(l.Restore(at).ok());

  // One dataset: its draws are its rows, and it stops at batch boundaries.
  auto one = Open(1, 0, true);
  ASSERT_TRUE(one);
  s = one->state();
  s.rows = 5;
  EXPECT_EQ(one->Restore(s).message(), "the state's draws sum to 0, not its 5 rows");
  s = one->state();
  s.sources[0].position = 6;
  EXPECT_EQ(one->Restore(s).message().find("the state's dataset 0 is at row 6, no batch boundary "
                                           "(a multiple of batch_size 4, or its epoch's end, row "),
            0u);
  // Rows at the most a state counts: the next batch is refused, not wrapped to 0.
  s = one->state();
  s.rows = s.drawn[0] = ~uint64_t{0};
  ASSERT_TRUE(one->Restore(s).ok());
  Result<std::shared_ptr<LoadedBatch>> wrapped = one->Next();
  ASSERT_FALSE(wrapped.ok());
  EXPECT_EQ(wrapped.status().message(),
            "the loader has handed out 18446744073709551615 rows, and 4 more would pass the most "
            "its state counts, 2^64 - 1");
}

}  // namespace
}  // namespace rf
