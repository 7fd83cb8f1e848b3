// The one decode on the host (decode/host_decode.h over decode/element.h), against values worked
// out by hand: a tiny batch whose every element encodes its position, in every stored dtype, into
// every output dtype and layout (a padded NHWC among them), with and without normalization; each
// augmentation transform on a 3 x 4 image; the layouts' two directions; labels.
#include "decode/host_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/augment.h"
#include "core/dtype.h"
#include "decode/dtypes.h"
#include "decode/element.h"
#include "decode/plan.h"

namespace rf::decode {
namespace {

// --- The tiny batch ----------------------------------------------------------------------------
// 2 samples of 2 channels of 2 x 3 pixels; element (sample i, channel c, pixel p) holds
// 100 i + 10 c + p, exact in every sample dtype. Stored channels first: kNchw below.
constexpr uint32_t kN = 2, kC = 2, kH = 2, kW = 3, kPlane = kH * kW, kCount = kN * kC * kPlane;

// The batch in each output layout, by hand. kPad: a padded channel's element (0 in the output).
constexpr float kPad = -1000.f;
const std::vector<float> kNchw = {0,   1,   2,   3,   4,   5,   10,  11,  12,  13,  14,  15,
                                  100, 101, 102, 103, 104, 105, 110, 111, 112, 113, 114, 115};
const std::vector<float> kNhwc = {0,   10,  1,   11,  2,   12,  3,   13,  4,   14,  5,   15,
                                  100, 110, 101, 111, 102, 112, 103, 113, 104, 114, 105, 115};
const std::vector<float> kCnhw = {0,  1,  2,  3,  4,  5,  100, 101, 102, 103, 104, 105,
                                  10, 11, 12, 13, 14, 15, 110, 111, 112, 113, 114, 115};
const std::vector<float> kNhwcPadded = {
    0,   10,  kPad, 1,   11,  kPad, 2,   12,  kPad, 3,   13,  kPad, 4,   14,  kPad, 5,   15,  kPad,
    100, 110, kPad, 101, 111, kPad, 102, 112, kPad, 103, 113, kPad, 104, 114, kPad, 105, 115, kPad};

// (v - mean[c]) / stddev[c] by hand, NCHW order, mean {1, 2} and stddev {2, 0} (the 0 taken as 1);
// exact in bfloat16 and float16 too.
const float kMean[kC] = {1.f, 2.f}, kStddev[kC] = {2.f, 0.f};
const std::vector<float> kNormalizedNchw = {-0.5f, 0.f,   0.5f,  1.f,   1.5f,  2.f,   // (0..5-1)/2
                                            8.f,   9.f,   10.f,  11.f,  12.f,  13.f,  // 10..15-2
                                            49.5f, 50.f,  50.5f, 51.f,  51.5f, 52.f,  // 100..105
                                            108.f, 109.f, 110.f, 111.f, 112.f, 113.f};

// A layout's table with each stored value replaced by its normalized one (the stored values are
// all different: value v is element (v / 100, v / 10 % 10, v % 10) of the NCHW table).
std::vector<float> Normalized(const std::vector<float>& table) {
  std::vector<float> out;
  for (float v : table) {
    if (v == kPad) {
      out.push_back(kPad);
      continue;
    }
    const auto u = static_cast<uint32_t>(v);
    out.push_back(kNormalizedNchw[((u / 100) * kC + u / 10 % 10) * kPlane + u % 10]);
  }
  return out;
}

struct LayoutCase {
  Layout layout;
  uint32_t out_channels;
  const std::vector<float>* table;
  const char* name;
};

const LayoutCase kLayouts[] = {{Layout::kNCHW, kC, &kNchw, "NCHW"},
                               {Layout::kNHWC, kC, &kNhwc, "NHWC"},
                               {Layout::kCNHW, kC, &kCnhw, "CNHW"},
                               {Layout::kNHWC, kC + 1, &kNhwcPadded, "NHWC padded to 3"}};

std::vector<uint8_t> StoreAs(DType dtype, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * DTypeSize(dtype));
  StoreFromFloat(dtype, values.data(), bytes.data(), values.size());
  return bytes;
}

std::vector<float> AsFloats(DType dtype, const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / DTypeSize(dtype));
  for (size_t i = 0; i < v.size(); ++i) v[i] = LoadAsFloat(dtype, bytes.data(), i);
  return v;
}

Plan TinyPlan(DType stored, DType output, bool normalize, const LayoutCase& l) {
  Plan p;
  p.stored = stored;
  p.output = output;
  p.normalize = normalize;
  p.layout = l.layout;
  p.channels = kC;
  p.out_channels = l.out_channels;
  p.height = kH;
  p.width = kW;
  p.stats = {kMean, kStddev};
  return p;
}

// Decodes into a buffer with guard bytes after the batch, which must stay untouched.
std::vector<uint8_t> Decode(const Plan& p, const std::vector<uint8_t>& in, uint32_t n,
                            const AugmentBatch& a = AugmentBatch{}) {
  constexpr size_t kGuard = 32;
  const size_t bytes = size_t{n} * p.out_channels * p.height * p.width * DTypeSize(p.output);
  std::vector<uint8_t> out(bytes + kGuard, 0xa5);
  EXPECT_TRUE(DecodeOnHost(p, in.data(), n, out.data(), a));
  for (size_t i = bytes; i < out.size(); ++i) {
    EXPECT_EQ(out[i], 0xa5) << "written " << i - bytes << " bytes past the batch";
  }
  out.resize(bytes);
  return out;
}

// kPad in a table (a padded channel) is the output's 0.
std::vector<float> WithZeros(std::vector<float> v) {
  for (float& x : v) x = x == kPad ? 0.f : x;
  return v;
}

TEST(HostDecode, EveryStoredDTypeIntoEveryOutputAndLayoutHoldsTheHandWorkedValues) {
  const std::vector<DType> stored_dtypes = {DType::kUInt8,  DType::kUInt16,  DType::kInt32,
                                            DType::kInt64,  DType::kFloat16, DType::kBFloat16,
                                            DType::kFloat32};
  int checked = 0;
  for (DType stored : stored_dtypes) {
    const std::vector<uint8_t> in = StoreAs(stored, kNchw);
    for (DType output : {DType::kFloat32, DType::kBFloat16, DType::kFloat16, stored}) {
      for (const LayoutCase& l : kLayouts) {
        for (bool normalize : {false, true}) {
          if (normalize && output == stored && IsIntegerDType(stored)) continue;  // no such decode
          SCOPED_TRACE(std::string(DTypeName(stored)) + " -> " + std::string(DTypeName(output)) +
                       " " + l.name + (normalize ? " normalized" : ""));
          const std::vector<float> want = WithZeros(normalize ? Normalized(*l.table) : *l.table);
          EXPECT_EQ(AsFloats(output, Decode(TinyPlan(stored, output, normalize, l), in, kN)), want);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 7 * 4 * 4 * 2 - 4 * 4);  // all but normalize into an integer stored dtype
}

TEST(HostDecode, NoDecodeIsMadeFromAnIntegerOutputThatIsNotTheStoredDType) {
  const std::vector<uint8_t> in = StoreAs(DType::kUInt8, kNchw);
  std::vector<uint8_t> out(kCount * 8, 0x5a);
  const std::vector<uint8_t> untouched = out;
  // Normalize into the integer stored dtype, another integer dtype, an unknown dtype.
  Plan p = TinyPlan(DType::kUInt8, DType::kUInt8, true, kLayouts[0]);
  EXPECT_FALSE(DecodeOnHost(p, in.data(), kN, out.data()));
  p = TinyPlan(DType::kUInt8, DType::kInt32, false, kLayouts[0]);
  EXPECT_FALSE(DecodeOnHost(p, in.data(), kN, out.data()));
  p = TinyPlan(static_cast<DType>(99), DType::kFloat32, false, kLayouts[0]);
  EXPECT_FALSE(DecodeOnHost(p, in.data(), kN, out.data()));
  EXPECT_EQ(out, untouched);
}

TEST(HostDecode, TheStoredDTypeKeepsItsBitsInEveryLayout) {
  // float16 NaNs (signalling, negative with a payload), a subnormal, -0, -inf and 1, as 1 sample
  // of 2 channels of 1 x 3 pixels: moved, never converted; a padded channel all zero bits.
  const std::vector<uint16_t> values = {0x7c01, 0xfe3f, 0x0001, 0x8000, 0xfc00, 0x3c00};
  std::vector<uint8_t> in(values.size() * 2);
  std::memcpy(in.data(), values.data(), in.size());
  Plan p = TinyPlan(DType::kFloat16, DType::kFloat16, false, kLayouts[0]);
  p.height = 1;
  const auto bits = [&](Layout layout, uint32_t out_channels) {
    p.layout = layout;
    p.out_channels = out_channels;
    const std::vector<uint8_t> out = Decode(p, in, 1);
    std::vector<uint16_t> v(out.size() / 2);
    std::memcpy(v.data(), out.data(), out.size());
    return v;
  };
  EXPECT_EQ(bits(Layout::kNCHW, 2), values);
  EXPECT_EQ(bits(Layout::kCNHW, 2), values);
  EXPECT_EQ(bits(Layout::kNHWC, 2),
            (std::vector<uint16_t>{0x7c01, 0x8000, 0xfe3f, 0xfc00, 0x0001, 0x3c00}));
  EXPECT_EQ(bits(Layout::kNHWC, 3),
            (std::vector<uint16_t>{0x7c01, 0x8000, 0, 0xfe3f, 0xfc00, 0, 0x0001, 0x3c00, 0}));
}

// --- The values --------------------------------------------------------------------------------

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(DecodeElement, NormalizeIsATrueDivisionOfTheCentredValue) {
  // 5 / 3 is 0x3fd55555; 5 * (1 / 3.f) would be 0x3fd55556.
  EXPECT_EQ(Bits(Normalize(5.f, 0.f, 3.f)), 0x3fd55555u);
  EXPECT_EQ(Bits(Normalize(7.f, 2.f, 3.f)), 0x3fd55555u);
  // A NaN stays the NaN it was, quieted (the host's arithmetic).
  EXPECT_EQ(Bits(Normalize(FromBits(0xff812345u), 1.f, 2.f)), 0xffc12345u);
}

TEST(DecodeElement, AZeroStddevDividesByOne) {
  EXPECT_EQ(Divisor(0.f), 1.f);
  EXPECT_EQ(Divisor(-0.f), 1.f);
  EXPECT_EQ(Divisor(0.25f), 0.25f);
  EXPECT_EQ(Statistics({kMean, kStddev}).Of(1).divisor, 1.f);
  EXPECT_EQ(Statistics({kMean, kStddev}).Of(0).divisor, 2.f);
  EXPECT_EQ(Statistics({kMean, kStddev}).Of(1).mean, 2.f);
}

TEST(DecodeElement, LoadsAndStoresRoundAsWorkedOutByHand) {
  EXPECT_EQ(LoadFloat<UInt8>(255), 255.f);
  EXPECT_EQ(LoadFloat<Int32>(-7), -7.f);
  EXPECT_EQ(LoadFloat<Int32>(16777217), 16777216.f);  // 2^24 + 1: to nearest even
  EXPECT_EQ(LoadFloat<Int64>(int64_t{1} << 40), 0x1p40f);
  EXPECT_EQ(LoadFloat<Float16>(0x3c00), 1.f);
  EXPECT_EQ(LoadFloat<Float16>(0x0001), 0x1p-24f);           // the smallest subnormal
  EXPECT_EQ(Bits(LoadFloat<Float16>(0xfe3f)), 0xffc7e000u);  // a NaN's sign and payload kept
  EXPECT_EQ(LoadFloat<BFloat16>(0x3fc0), 1.5f);
  EXPECT_EQ(StoreFloat<BFloat16>(FromBits(0x3f808000u)), 0x3f80);  // a tie: to even
  EXPECT_EQ(StoreFloat<BFloat16>(FromBits(0x3f818000u)), 0x3f82);
  EXPECT_EQ(StoreFloat<Float16>(FromBits(0x3f801000u)), 0x3c00);  // a tie: to even
  EXPECT_EQ(StoreFloat<Float16>(65520.f), 0x7c00);                // rounds up to inf
  EXPECT_EQ(StoreFloat<Float16>(FromBits(0xffc12345u)), 0xfe00);  // a NaN, quieted
}

TEST(DecodeElement, ConversionsMakeZeroAndConvertAsTheirDTypesSay) {
  using Bf16Normalized = ToFloat<UInt8, BFloat16, true, NanBits::kHost>;
  EXPECT_EQ(Bf16Normalized::Convert(5, {2.f, 4.f}), 0x3f40);  // (5 - 2) / 4 = 0.75
  EXPECT_EQ(Bf16Normalized::Zero(), 0);
  using F32Plain = ToFloat<Float16, Float32, false, NanBits::kHost>;
  EXPECT_EQ(F32Plain::Convert(0x4200, {100.f, 7.f}), 3.f);  // not normalized: the stored value
  EXPECT_EQ(AsStoredOf<Float32>::Convert(0x7fc00001u, {}), 0x7fc00001u);
  EXPECT_EQ(AsStoredOf<Int64>::Zero(), 0u);
}

TEST(DecodeElement, LabelsAreTheirIntegersWidened) {
  EXPECT_EQ(LabelValue<UInt8>(255), 255);
  EXPECT_EQ(LabelValue<UInt16>(65535), 65535);
  EXPECT_EQ(LabelValue<Int32>(-1), -1);
  EXPECT_EQ(LabelValue<Int64>(std::numeric_limits<int64_t>::min()),
            std::numeric_limits<int64_t>::min());
}

TEST(HostDecode, ForEachLabelReadsUnalignedLabelsInOrderAndRefusesAFloatDType) {
  const uint16_t labels[] = {7, 65535, 0};
  std::vector<uint8_t> bytes(1 + sizeof labels);
  std::memcpy(bytes.data() + 1, labels, sizeof labels);
  std::vector<int64_t> seen;
  EXPECT_TRUE(ForEachLabel(DType::kUInt16, bytes.data() + 1, 3, [&](uint32_t i, int64_t label) {
    EXPECT_EQ(i, seen.size());
    seen.push_back(label);
  }));
  EXPECT_EQ(seen, (std::vector<int64_t>{7, 65535, 0}));
  EXPECT_FALSE(ForEachLabel(DType::kFloat32, bytes.data(), 3, [&](uint32_t, int64_t) {
    ADD_FAILURE() << "called for a float dtype";
  }));
}

// --- The layouts -------------------------------------------------------------------------------

TEST(DecodeLayout, AtAndStartAgreeForEveryElement) {
  const BatchShape b{3, 2, 5, 4, 3};  // out_channels 5 > channels: padded
  const size_t plane = size_t{b.height} * b.width, total = size_t{b.n} * b.out_channels * plane;
  const auto check = [&](auto layout) {
    using L = decltype(layout);
    std::vector<int> hits(total, 0);
    for (size_t s = 0; s < b.n; ++s) {
      for (uint32_t c = 0; c < b.out_channels; ++c) {
        for (uint32_t p = 0; p < plane; ++p) {
          const size_t o = L::Start(s, c, b, plane) + p * L::PixelStep(b);
          ASSERT_LT(o, total);
          ++hits[o];
          const Element<uint32_t> e32 = L::At(static_cast<uint32_t>(o), b, uint32_t{12});
          const Element<size_t> e64 = L::At(o, b, plane);
          EXPECT_EQ(e32.sample, s);
          EXPECT_EQ(e32.channel, c);
          EXPECT_EQ(e32.pixel, p);
          EXPECT_EQ(e64.sample, s);
          EXPECT_EQ(e64.channel, c);
          EXPECT_EQ(e64.pixel, p);
        }
      }
    }
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), static_cast<long>(total));  // a bijection
  };
  check(Nchw{});
  check(Nhwc{});
  check(Cnhw{});
}

TEST(DecodeLayout, ElementsSitWhereWorkedOutByHand) {
  const BatchShape b{2, 2, 3, 2, 3};  // plane 6, out_channels 3
  // NHWC: o 7 = pixel 2 of sample 0 (7 / 3), channel 1 (7 % 3).
  Element<uint32_t> e = Nhwc::At(7u, b, 6u);
  EXPECT_EQ(e.sample, 0u);
  EXPECT_EQ(e.pixel, 2u);
  EXPECT_EQ(e.channel, 1u);
  // NCHW: o 26 = row 4 (sample 1, channel 1), pixel 2.
  e = Nchw::At(26u, b, 6u);
  EXPECT_EQ(e.sample, 1u);
  EXPECT_EQ(e.channel, 1u);
  EXPECT_EQ(e.pixel, 2u);
  // CNHW: o 20 = row 3 (channel 1, sample 1), pixel 2.
  e = Cnhw::At(20u, b, 6u);
  EXPECT_EQ(e.channel, 1u);
  EXPECT_EQ(e.sample, 1u);
  EXPECT_EQ(e.pixel, 2u);
  EXPECT_EQ(Nhwc::Start(1, 2, b, 6), 20u);
  EXPECT_EQ(Cnhw::Start(1, 2, b, 6), 30u);
  EXPECT_EQ(Nchw::Start(1, 2, b, 6), 30u);
}

// --- The transforms ----------------------------------------------------------------------------
// One sample of 2 channels of 3 x 4 pixels: channel c pixel (y, x) holds 1 + 4 y + x + 100 c
// (nothing is 0, so every 0 is the transform's), decoded as float32 NCHW through a transform
// given by hand.

std::vector<float> TransformedImage(const SampleTransform& t, bool normalize = false) {
  std::vector<float> values;
  for (uint32_t c = 0; c < 2; ++c) {
    for (uint32_t p = 0; p < 12; ++p) values.push_back(1.f + p + 100.f * c);
  }
  Plan plan;
  plan.stored = DType::kUInt8;
  plan.output = DType::kFloat32;
  plan.normalize = normalize;
  plan.channels = plan.out_channels = 2;
  plan.height = 3;
  plan.width = 4;
  const float mean[2] = {1.f, 101.f}, stddev[2] = {2.f, 2.f};
  plan.stats = {mean, stddev};
  AugmentBatch a;
  a.params.flip = 1;  // on; the transform itself comes from `transforms`
  a.transforms = &t;
  return AsFloats(DType::kFloat32, Decode(plan, StoreAs(DType::kUInt8, values), 1, a));
}

// Channel 0's expected plane by hand, then channel 1's: the same places, +100 where not 0.
std::vector<float> BothChannels(const std::vector<float>& plane) {
  std::vector<float> v = plane;
  for (float x : plane) v.push_back(x == 0 ? 0 : x + 100);
  return v;
}

TEST(HostDecodeTransform, CropShiftsTheImageAndFillsZeros) {
  SampleTransform t;
  t.dy = 1;
  t.dx = -1;                                                  // output (y, x) reads (y + 1, x - 1)
  EXPECT_EQ(TransformedImage(t), BothChannels({0, 5, 6, 7,    //
                                               0, 9, 10, 11,  //
                                               0, 0, 0, 0}));
}

TEST(HostDecodeTransform, FlipMirrorsEveryRow) {
  SampleTransform t;
  t.flip = true;
  EXPECT_EQ(TransformedImage(t), BothChannels({4, 3, 2, 1,  //
                                               8, 7, 6, 5,  //
                                               12, 11, 10, 9}));
}

TEST(HostDecodeTransform, FlipComesBeforeTheShift) {
  SampleTransform t;
  t.flip = true;
  t.dx = 1;                                                 // output (y, x) reads (y, 3 - x + 1)
  EXPECT_EQ(TransformedImage(t), BothChannels({0, 4, 3, 2,  //
                                               0, 8, 7, 6,  //
                                               0, 12, 11, 10}));
}

TEST(HostDecodeTransform, EraseZeroesItsRectangle) {
  SampleTransform t;
  t.erase_y = 1;
  t.erase_x = 1;
  t.erase_h = 2;
  t.erase_w = 2;
  EXPECT_EQ(TransformedImage(t), BothChannels({1, 2, 3, 4,  //
                                               5, 0, 0, 8,  //
                                               9, 0, 0, 12}));
}

TEST(HostDecodeTransform, AllThreeTogether) {
  SampleTransform t;
  t.dy = -1;
  t.flip = true;
  t.erase_y = 2;
  t.erase_x = 3;
  t.erase_h = t.erase_w = 1;  // output (y, x) reads (y - 1, 3 - x), (2, 3) erased
  EXPECT_EQ(TransformedImage(t), BothChannels({0, 0, 0, 0,  //
                                               4, 3, 2, 1,  //
                                               8, 7, 6, 0}));
}

TEST(HostDecodeTransform, ZerosAreZeroAfterNormalization) {
  SampleTransform t;
  t.dy = 1;
  t.dx = -1;
  // Channel 0: (v - 1) / 2; channel 1: (v - 101) / 2; 0 where the crop reads nothing.
  EXPECT_EQ(TransformedImage(t, true), (std::vector<float>{0, 2, 2.5f, 3,  //
                                                           0, 4, 4.5f, 5,  //
                                                           0, 0, 0,    0,  //
                                                           0, 2, 2.5f, 3,  //
                                                           0, 4, 4.5f, 5,  //
                                                           0, 0, 0,    0}));
}

TEST(HostDecodeTransform, WithoutDrawnTransformsEachSampleDrawsItsOwnFromItsIndex) {
  // Two samples, 8 x 8, crop:3,flip,erase:0.5: decoding with the indices alone equals decoding
  // with the transforms DrawTransform gives for (seed, epoch, index).
  AugmentBatch a;
  a.params.crop_pad = 3;
  a.params.flip = 1;
  a.params.erase_threshold = uint64_t{1} << 31;
  a.seed = 17;
  a.epoch = 4;
  const uint64_t indices[2] = {12345, uint64_t{1} << 33};
  a.indices = indices;
  std::vector<float> values(2 * 64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(1 + i % 200);
  Plan plan;
  plan.output = DType::kFloat32;
  plan.height = plan.width = 8;
  const std::vector<uint8_t> in = StoreAs(DType::kUInt8, values);
  const std::vector<uint8_t> drawn_here = Decode(plan, in, 2, a);
  const SampleTransform drawn[2] = {DrawTransform(a.params, 17, 4, indices[0], 8, 8),
                                    DrawTransform(a.params, 17, 4, indices[1], 8, 8)};
  a.transforms = drawn;
  EXPECT_EQ(drawn_here, Decode(plan, in, 2, a));
  EXPECT_NE(drawn_here, Decode(plan, in, 2)) << "the transforms changed nothing";
}

}  // namespace
}  // namespace rf::decode
