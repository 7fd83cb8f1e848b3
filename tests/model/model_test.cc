// ModelConfig::Validate: the model's size computed with overflow checks, whatever its fields came
// from (ringfeed train's --hidden and --conv, a dataset's shape and classes, a checkpoint).
#include "model/model.h"

#include <gtest/gtest.h>

#include <string>

namespace rf {
namespace {

std::string Refusal(const ModelConfig& m) {
  const Status st = m.Validate();
  if (st.ok()) return "accepted";
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  return st.ToString();
}

TEST(Model, TheDefaultModelIsAccepted) { EXPECT_EQ(Refusal(ModelConfig{}), "accepted"); }

// Issue 15, defect 2: train --hidden 4000000000 aborted with bad_alloc.
TEST(Model, AHiddenLayerBeyondTheLimitIsRefusedNamingTheTensor) {
  ModelConfig m;
  m.hidden = 4000000000u;
  EXPECT_EQ(Refusal(m),
            "the model is too large: fc1.weight (4000000000 x 2048) makes it more "
            "than 2147483647 parameters; use a smaller --hidden or --conv");
  m.hidden = 1000000;  // 2.06e9 parameters in all: large, but countable
  EXPECT_EQ(Refusal(m), "accepted");
}

// Issue 15, defect 2: train --conv 65536,65536 aborted with bad_alloc.
TEST(Model, ConvBlocksBeyondTheLimitAreRefused) {
  ModelConfig m;
  m.conv = {65536, 65536};
  EXPECT_EQ(Refusal(m),
            "the model is too large: conv1.weight (65536 x 65536 x 9) makes it more "
            "than 2147483647 parameters; use a smaller --hidden or --conv");
}

TEST(Model, ALastConvOutputThatWouldWrapIsRefused) {
  ModelConfig m;
  m.channels = 1;
  m.height = m.width = 65536;
  m.conv = {65536};
  EXPECT_EQ(Refusal(m),
            "the last conv block's output (65536 x 32768 x 32768, the hidden layer's "
            "inputs) makes the model more than 2147483647 parameters; use a smaller "
            "--conv");
  // 2^16 x 2^31 x 2^31 wraps 64 bits to 0: refused all the same.
  m.height = m.width = 0xffffffffu;
  EXPECT_NE(Refusal(m), "accepted");
}

TEST(Model, ClassesTimesHiddenBeyondTheLimitAreRefused) {
  ModelConfig m;
  m.classes = 0xffffffffu;
  EXPECT_EQ(Refusal(m),
            "the model is too large: fc2.weight (4294967295 x 256) makes it more "
            "than 2147483647 parameters; use a smaller --hidden or --conv");
}

}  // namespace
}  // namespace rf
