// DecodeSpec::Validate (pipeline/output/batch_decode.h): what it accepts, and each refusal with the
// option it names; OutputSampleBytes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "decode/dtypes.h"
#include "pipeline/output/batch_decode.h"
#include "tests/pipeline/decode_testing.h"

namespace rf {
namespace {

DecodeSpec Spec(DType stored, DType output, bool normalize) {
  DecodeSpec s;
  s.stored = stored;
  s.output = output;
  s.normalize = normalize;
  s.channels = 3;
  s.height = s.width = 32;
  s.mean = {125.3f, 123.0f, 113.9f};
  s.stddev = {63.0f, 62.1f, 66.7f};
  return s;
}

TEST(DecodeSpec, AcceptsEveryFloatOutputOfEveryStoredDTypeInBothLayouts) {
  for (DType stored : testing::StoredDTypes()) {
    for (DType output : testing::DTypesOf(decode::FloatDTypes{})) {
      for (SampleLayout layout : {SampleLayout::kNCHW, SampleLayout::kNHWC}) {
        for (bool normalize : {false, true}) {
          DecodeSpec s = Spec(stored, output, normalize);
          s.layout = layout;
          EXPECT_TRUE(s.Validate().ok()) << testing::Describe(s) << ": " << s.Validate().ToString();
        }
      }
    }
  }
}

TEST(DecodeSpec, AcceptsEachIntegerDTypePassedThroughWithoutNormalize) {
  for (DType d : testing::DTypesOf(decode::IntegerDTypes{})) {
    EXPECT_TRUE(Spec(d, d, false).Validate().ok()) << DTypeName(d);
  }
}

TEST(DecodeSpec, RefusesAnIntegerDTypeOtherThanTheStoredOne) {
  const Status st = Spec(DType::kUInt8, DType::kUInt16, false).Validate();
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "dtype uint16 cannot be decoded from uint8 samples: choose float32, bfloat16 or "
            "float16, or uint8 (as stored)");
}

TEST(DecodeSpec, RefusesAnIntegerDTypeForFloatSamples) {
  const Status st = Spec(DType::kFloat32, DType::kUInt8, false).Validate();
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "dtype uint8 cannot be decoded from float32 samples: choose float32, bfloat16 or "
            "float16, or float32 (as stored)");
}

TEST(DecodeSpec, RefusesNormalizeIntoAnIntegerDType) {
  const Status st = Spec(DType::kUInt8, DType::kUInt8, true).Validate();
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "normalize needs a float dtype (float32, bfloat16 or float16), not uint8: turn "
            "normalize off or choose a float dtype");
}

TEST(DecodeSpec, RefusesNormalizeWithoutOneMeanAndStddevPerChannel) {
  DecodeSpec s = Spec(DType::kUInt8, DType::kFloat32, true);
  s.mean.pop_back();
  Status st = s.Validate();
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "normalize needs one mean and one stddev per channel: 2 means and 3 stddevs for 3 "
            "channels");
  s = Spec(DType::kUInt8, DType::kFloat32, true);
  s.stddev.clear();
  st = s.Validate();
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "normalize needs one mean and one stddev per channel: 3 means and 0 stddevs for 3 "
            "channels");
}

TEST(DecodeSpec, IgnoresTheStatisticsWithoutNormalize) {
  DecodeSpec s = Spec(DType::kUInt8, DType::kFloat32, false);
  s.mean.clear();
  s.stddev = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_TRUE(s.Validate().ok()) << s.Validate().ToString();
}

TEST(DecodeSpec, RefusesStatisticsThatAreNotFinite) {
  DecodeSpec s = Spec(DType::kUInt8, DType::kFloat32, true);
  s.mean[1] = std::numeric_limits<float>::quiet_NaN();
  Status st = s.Validate();
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "normalize needs a finite mean and stddev for every channel; channel 1 has mean nan "
            "and stddev 62.1");
  s = Spec(DType::kUInt8, DType::kFloat32, true);
  s.stddev[2] = -std::numeric_limits<float>::infinity();
  st = s.Validate();
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "normalize needs a finite mean and stddev for every channel; channel 2 has mean 113.9 "
            "and stddev -inf");
}

TEST(DecodeSpec, AcceptsAZeroStddev) {  // taken as 1: the channel is centred only
  DecodeSpec s = Spec(DType::kUInt8, DType::kFloat32, true);
  s.stddev[0] = 0.f;
  EXPECT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.divisor(0), 1.f);
  EXPECT_EQ(s.divisor(1), 62.1f);
}

TEST(DecodeSpec, RefusesALayoutThatIsNeither) {
  DecodeSpec s = Spec(DType::kUInt8, DType::kFloat32, true);
  s.layout = static_cast<SampleLayout>(7);
  const Status st = s.Validate();
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(), "layout must be NCHW or NHWC (got value 7)");
}

TEST(DecodeSpec, RefusesAStoredDTypeItDoesNotKnow) {
  const Status st = Spec(static_cast<DType>(99), DType::kFloat32, false).Validate();
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "cannot decode stored samples of dtype 99");
}

TEST(DecodeSpec, RefusesASampleWithoutElements) {
  DecodeSpec s = Spec(DType::kUInt8, DType::kFloat32, false);
  s.height = 0;
  const Status st = s.Validate();
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "cannot decode samples of shape 3x0x32");
}

TEST(DecodeSpec, OutputSampleBytesAreTheOutputDTypes) {
  EXPECT_EQ(Spec(DType::kUInt8, DType::kFloat32, true).OutputSampleBytes(), 3u * 32 * 32 * 4);
  EXPECT_EQ(Spec(DType::kUInt8, DType::kBFloat16, true).OutputSampleBytes(), 3u * 32 * 32 * 2);
  EXPECT_EQ(Spec(DType::kUInt8, DType::kUInt8, false).OutputSampleBytes(), 3u * 32 * 32);
  EXPECT_EQ(Spec(DType::kInt32, DType::kInt32, false).OutputSampleBytes(), 3u * 32 * 32 * 4);
}

}  // namespace
}  // namespace rf
