// The host batch decode (pipeline/output/batch_decode.h): a tiny image whose every value encodes
// its position, decoded into every output dtype and layout with and without normalize against
// hand-computed values; rounding and division checked bit by bit; every decode the spec allows
// equal to the formula on random bits; labels of every integer dtype widened to int64.
#include "pipeline/output/batch_decode.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "decode/dtypes.h"
#include "tests/pipeline/decode_testing.h"
#include "tests/testing/test_rng.h"

namespace rf {
namespace {

using testing::Describe;
using testing::EverySpec;
using testing::RandomBytes;
using testing::SameBytes;
using testing::TestRng;

// The tiny batch: 2 samples of 3 channels of 2 x 2 pixels; element (sample i, channel c, pixel p)
// holds 100 i + 10 c + p, exact in every sample dtype.
constexpr uint32_t kN = 2, kC = 3, kH = 2, kW = 2, kPlane = kH * kW, kCount = kN * kC * kPlane;

std::vector<float> TinyValues() {
  std::vector<float> v;
  for (uint32_t i = 0; i < kN; ++i) {
    for (uint32_t c = 0; c < kC; ++c) {
      for (uint32_t p = 0; p < kPlane; ++p) v.push_back(100.f * i + 10.f * c + p);
    }
  }
  return v;
}

// The tiny batch in NHWC order, by hand: each pixel's three channels together.
constexpr float kTinyNhwc[kCount] = {0,   10,  20,  1,   11,  21,  2,   12,  22,  3,   13,  23,
                                     100, 110, 120, 101, 111, 121, 102, 112, 122, 103, 113, 123};

// (v - mean[c]) / stddev[c] by hand, NCHW order, with mean {1, 2, 3} and stddev {2, 4, 0}: the
// last channel's 0 is taken as 1. Each value is exact in bfloat16 and float16 too.
constexpr float kTinyNormalized[kCount] = {
    -0.5f, 0.f,    0.5f,  1.f,     // sample 0: (0..3 - 1) / 2
    2.f,   2.25f,  2.5f,  2.75f,   //           (10..13 - 2) / 4
    17.f,  18.f,   19.f,  20.f,    //           (20..23 - 3) / 1
    49.5f, 50.f,   50.5f, 51.f,    // sample 1: (100..103 - 1) / 2
    27.f,  27.25f, 27.5f, 27.75f,  //           (110..113 - 2) / 4
    117.f, 118.f,  119.f, 120.f};  //           (120..123 - 3) / 1

// Element (i, c, p) of an NCHW batch is element (i, p, c) of the NHWC one.
std::vector<float> ToNhwc(const float* nchw) {
  std::vector<float> nhwc(kCount);
  for (uint32_t i = 0; i < kN; ++i) {
    for (uint32_t c = 0; c < kC; ++c) {
      for (uint32_t p = 0; p < kPlane; ++p) {
        nhwc[(i * kPlane + p) * kC + c] = nchw[(i * kC + c) * kPlane + p];
      }
    }
  }
  return nhwc;
}

DecodeSpec TinySpec(DType stored, DType output, SampleLayout layout, bool normalize) {
  DecodeSpec s;
  s.stored = stored;
  s.output = output;
  s.layout = layout;
  s.normalize = normalize;
  s.channels = kC;
  s.height = kH;
  s.width = kW;
  s.mean = {1.f, 2.f, 3.f};
  s.stddev = {2.f, 4.f, 0.f};
  return s;
}

std::vector<uint8_t> Store(DType dtype, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * DTypeSize(dtype));
  StoreFromFloat(dtype, values.data(), bytes.data(), values.size());
  return bytes;
}

// Decodes n samples into a buffer with guard bytes after the batch, which must stay untouched.
std::vector<uint8_t> Decode(const DecodeSpec& s, const std::vector<uint8_t>& stored, uint32_t n) {
  constexpr size_t kGuard = 64;
  const size_t bytes = n * s.OutputSampleBytes();
  std::vector<uint8_t> out(bytes + kGuard, 0xa5);
  DecodeSamplesOnHost(s, stored.data(), n, out.data());
  for (size_t i = bytes; i < out.size(); ++i) {
    EXPECT_EQ(out[i], 0xa5) << "written " << i - bytes << " bytes past the batch";
  }
  out.resize(bytes);
  return out;
}

std::vector<float> AsFloats(DType dtype, const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / DTypeSize(dtype));
  for (size_t i = 0; i < v.size(); ++i) v[i] = LoadAsFloat(dtype, bytes.data(), i);
  return v;
}

TEST(BatchDecode, TinyImageHoldsItsValuesInEveryOutputLayoutAndNormalization) {
  const std::vector<float> nchw = TinyValues();
  for (DType stored : {DType::kUInt8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const std::vector<uint8_t> input = Store(stored, nchw);
    std::vector<DType> outputs = {DType::kFloat32, DType::kBFloat16, DType::kFloat16};
    if (stored == DType::kUInt8) outputs.push_back(stored);
    for (DType output : outputs) {
      for (SampleLayout layout : {SampleLayout::kNCHW, SampleLayout::kNHWC}) {
        for (bool normalize : {false, true}) {
          const DecodeSpec s = TinySpec(stored, output, layout, normalize);
          SCOPED_TRACE(Describe(s));
          if (output == DType::kUInt8 && normalize) {
            EXPECT_TRUE(s.Validate().IsUsage());
            continue;
          }
          ASSERT_TRUE(s.Validate().ok()) << s.Validate().ToString();
          std::vector<float> expected;
          if (layout == SampleLayout::kNCHW) {
            expected =
                normalize ? std::vector<float>(kTinyNormalized, kTinyNormalized + kCount) : nchw;
          } else {
            expected = normalize ? ToNhwc(kTinyNormalized)
                                 : std::vector<float>(kTinyNhwc, kTinyNhwc + kCount);
          }
          EXPECT_EQ(AsFloats(output, Decode(s, input, kN)), expected);
        }
      }
    }
  }
}

TEST(BatchDecode, ChannelsLastPutsEachPixelsChannelsTogether) {
  const DecodeSpec s = TinySpec(DType::kUInt8, DType::kFloat32, SampleLayout::kNHWC, false);
  const std::vector<float> out = AsFloats(s.output, Decode(s, Store(s.stored, TinyValues()), kN));
  ASSERT_EQ(out.size(), kCount);
  // Output index ((i * H + y) * W + x) * C + c holds sample i, channel c, pixel (y, x).
  EXPECT_EQ(out[0], 0.f);     // sample 0, pixel (0, 0), channel 0
  EXPECT_EQ(out[1], 10.f);    // sample 0, pixel (0, 0), channel 1
  EXPECT_EQ(out[5], 21.f);    // sample 0, pixel (0, 1), channel 2
  EXPECT_EQ(out[9], 3.f);     // sample 0, pixel (1, 1), channel 0
  EXPECT_EQ(out[12], 100.f);  // sample 1, pixel (0, 0), channel 0
  EXPECT_EQ(out[23], 123.f);  // sample 1, pixel (1, 1), channel 2
}

TEST(BatchDecode, Uint8WithoutNormalizeIsTheValueAsFloat) {
  DecodeSpec s = TinySpec(DType::kUInt8, DType::kFloat32, SampleLayout::kNCHW, false);
  s.channels = s.height = 1;
  s.width = 4;
  const std::vector<uint8_t> stored = {0, 1, 128, 255};
  EXPECT_EQ(AsFloats(s.output, Decode(s, stored, 1)), (std::vector<float>{0.f, 1.f, 128.f, 255.f}));
}

std::vector<uint8_t> Bits32(const std::vector<uint32_t>& words) {
  std::vector<uint8_t> b(words.size() * 4);
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}
std::vector<uint16_t> Bits16(const std::vector<uint8_t>& bytes) {
  std::vector<uint16_t> v(bytes.size() / 2);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}
std::vector<uint32_t> Words(const std::vector<uint8_t>& bytes) {
  std::vector<uint32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST(BatchDecode, RoundsToNearestEvenIntoBFloat16AndFloat16) {
  // float32 values around the rounding points, with the results worked out by hand.
  const std::vector<uint32_t> values = {
      0x3f808000,  // 1 + 2^-8: bf16 tie -> even 0x3f80; fp16 exact 0x3c04
      0x3f818000,  // 1 + 3 * 2^-8: bf16 tie -> even 0x3f82; fp16 exact 0x3c0c
      0x3f808001,  // just above 1 + 2^-8: bf16 up 0x3f81; fp16 down 0x3c04
      0x3f801000,  // 1 + 2^-11: bf16 down 0x3f80; fp16 tie -> even 0x3c00
      0x3f803000,  // 1 + 3 * 2^-11: bf16 down 0x3f80; fp16 tie -> even 0x3c02
      0x477fef00,  // 65519: bf16 up 0x4780; fp16 down to its largest, 65504 = 0x7bff
      0x477ff000,  // 65520: bf16 up 0x4780; fp16 tie -> even: inf 0x7c00
      0x33000000,  // 2^-25: bf16 exact 0x3300; fp16 tie between 0 and 2^-24 -> 0
      0x33c00000,  // 3 * 2^-25: bf16 exact 0x33c0; fp16 tie -> even subnormal 2 * 2^-24
  };
  DecodeSpec s = TinySpec(DType::kFloat32, DType::kBFloat16, SampleLayout::kNCHW, false);
  s.channels = s.height = 1;
  s.width = static_cast<uint32_t>(values.size());
  EXPECT_EQ(Bits16(Decode(s, Bits32(values), 1)),
            (std::vector<uint16_t>{0x3f80, 0x3f82, 0x3f81, 0x3f80, 0x3f80, 0x4780, 0x4780, 0x3300,
                                   0x33c0}));
  s.output = DType::kFloat16;
  EXPECT_EQ(Bits16(Decode(s, Bits32(values), 1)),
            (std::vector<uint16_t>{0x3c04, 0x3c0c, 0x3c04, 0x3c00, 0x3c02, 0x7bff, 0x7c00, 0x0000,
                                   0x0002}));
}

TEST(BatchDecode, NormalizesWithATrueDivisionNotAReciprocal) {
  // 5 / 3 is 0x3fd55555; 5 * (1 / 3.f) would be 0x3fd55556. 1 / 3 is 0x3eaaaaab.
  DecodeSpec s = TinySpec(DType::kUInt8, DType::kFloat32, SampleLayout::kNCHW, true);
  s.channels = s.height = 1;
  s.width = 2;
  s.mean = {0.f};
  s.stddev = {3.f};
  const std::vector<uint8_t> stored = {5, 1};
  EXPECT_EQ(Words(Decode(s, stored, 1)), (std::vector<uint32_t>{0x3fd55555, 0x3eaaaaab}));
  s.output = DType::kBFloat16;  // 0x3fd5|5555 down, 0x3eaa|aaab up
  EXPECT_EQ(Bits16(Decode(s, stored, 1)), (std::vector<uint16_t>{0x3fd5, 0x3eab}));
  s.output = DType::kFloat16;  // 1 + 0x2aa.aa/1024 up; 2^-2 * (1 + 0x155.55/1024) down
  EXPECT_EQ(Bits16(Decode(s, stored, 1)), (std::vector<uint16_t>{0x3eab, 0x3555}));
}

TEST(BatchDecode, TheStoredDTypeWithoutNormalizeKeepsEveryBit) {
  // float16 NaNs (signalling, negative with a payload), a subnormal, -0 and -inf: copied
  // (NCHW) or moved (NHWC), never converted.
  const std::vector<uint16_t> values = {0x7c01, 0xfe3f, 0x0001, 0x8000, 0xfc00, 0x3c00};
  std::vector<uint8_t> stored(values.size() * 2);
  std::memcpy(stored.data(), values.data(), stored.size());
  DecodeSpec s = TinySpec(DType::kFloat16, DType::kFloat16, SampleLayout::kNCHW, false);
  s.channels = 2;
  s.height = 1;
  s.width = 3;
  EXPECT_EQ(Bits16(Decode(s, stored, 1)), values);
  s.layout = SampleLayout::kNHWC;
  EXPECT_EQ(Bits16(Decode(s, stored, 1)),
            (std::vector<uint16_t>{0x7c01, 0x8000, 0xfe3f, 0xfc00, 0x0001, 0x3c00}));
}

// Each output element on its own, from core/dtype.h's conversions and CpuBackend::LoadBatch's
// expression: the decode's definition, written as plainly as possible.
std::vector<uint8_t> Reference(const DecodeSpec& s, const std::vector<uint8_t>& stored,
                               uint32_t n) {
  const size_t channels = s.channels, plane = size_t{s.height} * s.width;
  const size_t size = DTypeSize(s.output);
  std::vector<uint8_t> out(n * s.OutputSampleBytes());
  for (size_t i = 0; i < n; ++i) {
    for (size_t c = 0; c < channels; ++c) {
      for (size_t p = 0; p < plane; ++p) {
        const size_t from = (i * channels + c) * plane + p;
        const size_t to = s.layout == SampleLayout::kNCHW ? from : (i * plane + p) * channels + c;
        if (s.output == s.stored && !s.normalize) {
          std::memcpy(out.data() + to * size, stored.data() + from * size, size);
          continue;
        }
        float x = LoadAsFloat(s.stored, stored.data(), from);
        if (s.normalize) x = (x - s.mean[c]) / (s.stddev[c] == 0.f ? 1.f : s.stddev[c]);
        StoreFromFloat(s.output, &x, out.data() + to * size, 1);
      }
    }
  }
  return out;
}

TEST(BatchDecode, EveryDecodeEqualsTheFormulaOnRandomBits) {
  TestRng rng(11);
  const std::vector<DecodeSpec> specs = EverySpec(3, 5, 7);
  ASSERT_GE(specs.size(), 60u);
  for (const DecodeSpec& s : specs) {
    for (uint32_t n : {1u, 4u}) {
      const std::vector<uint8_t> stored =
          RandomBytes(rng, size_t{n} * s.channels * s.height * s.width * DTypeSize(s.stored));
      EXPECT_TRUE(SameBytes(Decode(s, stored, n), Reference(s, stored, n), DTypeSize(s.output)))
          << Describe(s) << ", n " << n;
    }
  }
}

TEST(BatchDecode, ZeroSamplesWriteNothing) {
  const DecodeSpec s = TinySpec(DType::kUInt8, DType::kFloat32, SampleLayout::kNHWC, true);
  EXPECT_TRUE(Decode(s, {}, 0).empty());
}

// Labels of integer dtype E, the extremes of its range among them, read from an odd address.
template <typename E>
void CheckLabels() {
  using T = typename E::Type;
  SCOPED_TRACE(std::string(DTypeName(E::kDType)));
  std::vector<T> values = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
                           static_cast<T>(-1)};
  for (int i = 0; i < 20; ++i) values.push_back(static_cast<T>(3 * i + 1));
  const uint32_t n = static_cast<uint32_t>(values.size());
  std::vector<uint8_t> bytes(1 + n * sizeof(T));
  std::memcpy(bytes.data() + 1, values.data(), n * sizeof(T));
  std::vector<int64_t> out(n + 1, -7777);
  DecodeLabelsOnHost(E::kDType, bytes.data() + 1, n, out.data());
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(out[i], static_cast<int64_t>(values[i])) << "label " << i;
    EXPECT_EQ(out[i], LoadLabel(E::kDType, bytes.data() + 1, i)) << "label " << i;
  }
  // All ones is -1 in a signed dtype and its largest value in an unsigned one.
  EXPECT_EQ(out[2], std::is_signed_v<T> ? -1 : static_cast<int64_t>(std::numeric_limits<T>::max()));
  EXPECT_EQ(out[n], -7777) << "written past the labels";
}
template <typename... Entries>
void CheckEveryLabelDType(decode::DTypeList<Entries...> /*list*/) {
  (CheckLabels<Entries>(), ...);
}

TEST(BatchDecode, LabelsOfEveryIntegerDTypeWidenToInt64) {
  CheckEveryLabelDType(decode::IntegerDTypes{});
  // By hand.
  const uint8_t u8[] = {0, 9, 255};
  const uint16_t u16[] = {0, 9, 65535};
  const int32_t i32[] = {-2147483647 - 1, 9, 2147483647};
  int64_t out[3];
  DecodeLabelsOnHost(DType::kUInt8, u8, 3, out);
  EXPECT_EQ(std::vector<int64_t>(out, out + 3), (std::vector<int64_t>{0, 9, 255}));
  DecodeLabelsOnHost(DType::kUInt16, u16, 3, out);
  EXPECT_EQ(std::vector<int64_t>(out, out + 3), (std::vector<int64_t>{0, 9, 65535}));
  DecodeLabelsOnHost(DType::kInt32, i32, 3, out);
  EXPECT_EQ(std::vector<int64_t>(out, out + 3),
            (std::vector<int64_t>{-2147483648LL, 9, 2147483647LL}));
  const int64_t i64[] = {std::numeric_limits<int64_t>::min(), 9, 1LL << 40};
  DecodeLabelsOnHost(DType::kInt64, i64, 3, out);
  EXPECT_EQ(std::vector<int64_t>(out, out + 3), std::vector<int64_t>(i64, i64 + 3));
}

TEST(BatchDecode, LabelsOfAFloatDTypeAreLeftUnwritten) {
  const float labels[] = {1.f, 2.f};
  int64_t out[2] = {-1, -1};
  DecodeLabelsOnHost(DType::kFloat32, labels, 2, out);
  EXPECT_EQ(out[0], -1);
  EXPECT_EQ(out[1], -1);
}

}  // namespace
}  // namespace rf
