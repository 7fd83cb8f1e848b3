// `ringfeed train --data a,b --weights 0.7,0.3` as a user runs it: a mixture trains, its
// checkpoint records the mixture (its datasets, weights and stream), a resumed run ends
// bit-identical to a straight one and visits the same samples (--dump-order), and what cannot be
// a mixture is a usage error (exit 2) naming why.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class TrainMixture : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = MakeDataset(t_, 200, {}, "a.rfd");
    b_ = MakeDataset(t_, 120, {}, "b.rfd");
    data_ = a_ + "," + b_;
  }
  TempDir t_;
  std::string a_, b_, data_;
};

TEST_F(TrainMixture, ResumedRunEndsBitIdenticalToAStraightOneAndRecordsTheMixture) {
  std::string out;
  // An epoch of the mixture: 320 samples, 10 steps of 32; 25 steps cross two epochs, the break
  // at step 13 falls mid-epoch.
  const std::string flags = "--weights 0.7,0.3 --epochs 3 --max-steps 25 ";
  ASSERT_EQ(RunCommand(Train(data_, flags + "--checkpoint " + t_.File("straight") +
                                        " --dump-order " + t_.File("straight.order") + " --test " +
                                        b_),  // a test split of one dataset
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("test accuracy"), std::string::npos) << out;
  EXPECT_NE(out.find(data_ + ": 320 samples"), std::string::npos) << out;
  EXPECT_NE(out.find("mixture of 2 datasets by weight (0.7, 0.3)"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(Train(data_, "--weights 0.7,0.3 --epochs 3 --max-steps 13 --checkpoint " +
                                        t_.File("half") + " --dump-order " + t_.File("order")),
                       &out),
            0)
      << out;
  ASSERT_EQ(RunCommand(Train(data_, flags + "--resume " + t_.File("half") + " --checkpoint " +
                                        t_.File("resumed") + " --dump-order " + t_.File("order")),
                       &out),
            0)
      << out;

  Result<Checkpoint> half = ReadCheckpoint(t_.File("half"));
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  ASSERT_EQ(half->datasets.size(), 2u);
  EXPECT_EQ(half->datasets[0].dataset_samples, 200u);
  EXPECT_EQ(half->datasets[1].dataset_samples, 120u);
  EXPECT_NEAR(half->datasets[0].weight, 0.7, 1e-6);
  EXPECT_EQ(half->mixture.steps, 13u * 32u);
  EXPECT_EQ(half->mixture.drawn[0] + half->mixture.drawn[1], 13u * 32u);
  EXPECT_EQ(half->epoch, 1u);
  EXPECT_EQ(half->next_sample, 3u * 32u);
  EXPECT_EQ(half->dataset_samples, 320u);

  Result<Checkpoint> straight = ReadCheckpoint(t_.File("straight"));
  Result<Checkpoint> resumed = ReadCheckpoint(t_.File("resumed"));
  ASSERT_TRUE(straight.ok() && resumed.ok());
  EXPECT_TRUE(testing::BitIdentical(resumed->params, straight->params));
  EXPECT_TRUE(testing::BitIdentical(resumed->momentum, straight->momentum));
  EXPECT_EQ(resumed->mixture, straight->mixture);
  EXPECT_EQ(resumed->step, 25u);

  // The same samples in the same order: the resumed run's after its marker and the line of the
  // epoch it resumes in (which the interrupted run began); each index is the mixture's (a's
  // samples, then b's), about 30% of them b's.
  const std::vector<std::string> interrupted = Lines(t_.File("order"));
  std::vector<std::string> got;
  for (size_t i = 0; i < interrupted.size(); ++i) {
    if (interrupted[i].rfind("# resumed from", 0) == 0) {
      ++i;  // and the epoch line after it
      continue;
    }
    got.push_back(interrupted[i]);
  }
  const std::vector<std::string> want = Lines(t_.File("straight.order"));
  EXPECT_EQ(got, want);
  size_t from_b = 0, samples = 0;
  for (const std::string& l : want) {
    if (l.empty() || l[0] == '#') continue;
    const uint64_t i = std::stoull(l);
    EXPECT_LT(i, 320u);
    from_b += i >= 200;
    ++samples;
  }
  EXPECT_EQ(samples, 25u * 32u);
  EXPECT_NEAR(double(from_b) / double(samples), 0.3, 1.0 / double(samples));
}

TEST_F(TrainMixture, WhatIsNoMixtureIsAUsageErrorNamingWhy) {
  std::string out;
  EXPECT_EQ(RunCommand(Train(a_, "--weights 0.7,0.3"), &out), 2);
  EXPECT_EQ(out, "ringfeed: --weights mixes several datasets, and --data names one (" + a_ +
                     "): give --data a comma list of datasets, one a weight\n");
  EXPECT_EQ(RunCommand(Train(data_, "--weights 0.2,0.3,0.5"), &out), 2);
  EXPECT_EQ(out,
            "ringfeed: --data names 2 datasets and --weights gives 3 weights: one "
            "weight a dataset\n");
  EXPECT_EQ(RunCommand(Train(data_, ""), &out), 2);
  EXPECT_EQ(out, "ringfeed: --data names 2 datasets (" + data_ +
                     "): a mixture of them needs --weights, one weight a dataset\n");
  EXPECT_EQ(RunCommand(Train(data_, "--weights -1,2"), &out), 2);
  EXPECT_NE(out.find("--weights must be"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Train(data_, "--weights nan,1"), &out), 2);
  EXPECT_NE(out.find("--weights"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Train(data_, "--weights 0,0"), &out), 2);
  EXPECT_EQ(out, "ringfeed: --weights: at least one must be above 0\n");
  // Another shape: named, with both values.
  TempDir other;
  testing::MakeDataset(other, 50, {}, "c.rfd");
  DatasetSpec spec;
  spec.height = spec.width = 10;
  spec.num_classes = 4;
  WriterOptions o;
  o.chunk_bytes = 8192;
  auto w = DatasetWriter::Create(other.File("small.rfd"), spec, o);
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> s(100, 7);
  const uint8_t label = 1;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*w)->Append(s.data(), &label, 1).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ(RunCommand(Train(a_ + "," + other.File("small.rfd"), "--weights 1,1"), &out), 2);
  EXPECT_NE(out.find("sample shape 1x10x10, not 1x12x12"), std::string::npos) << out;
  EXPECT_NE(out.find(other.File("small.rfd")), std::string::npos) << out;
}

TEST_F(TrainMixture, AResumeOfAnotherMixtureIsRefusedNamingWhatDiffers) {
  std::string out;
  ASSERT_EQ(
      RunCommand(Train(data_, "--weights 0.7,0.3 --max-steps 3 --checkpoint " + t_.File("ck")),
                 &out),
      0)
      << out;
  EXPECT_EQ(RunCommand(Train(data_, "--weights 0.5,0.5 --resume " + t_.File("ck")), &out), 2);
  EXPECT_NE(out.find("--weights: --resume " + t_.File("ck") +
                     " mixes its datasets by weights 0.7,0.3 (normalized), this run by 0.5,0.5"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCommand(Train(a_, "--resume " + t_.File("ck")), &out), 2);
  EXPECT_NE(out.find("is of a mixture of 2 datasets"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Train(b_ + "," + a_, "--weights 0.7,0.3 --resume " + t_.File("ck")), &out),
            1);
  EXPECT_NE(out.find("checkpoint's dataset 1 of the mixture is another than " + b_),
            std::string::npos)
      << out;
  // A checkpoint of one dataset, resumed as a mixture.
  ASSERT_EQ(RunCommand(Train(a_, "--max-steps 2 --checkpoint " + t_.File("one")), &out), 0) << out;
  EXPECT_EQ(RunCommand(Train(data_, "--weights 0.7,0.3 --resume " + t_.File("one")), &out), 2);
  EXPECT_NE(out.find("is of one dataset; this run mixes 2"), std::string::npos) << out;
}

}  // namespace
}  // namespace rf
