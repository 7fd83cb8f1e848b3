// What the batch decode's tests share (batch_decode_test.cc on the host, cuda_batch_decode_test.cc
// on the GPU): every decode the spec allows, random stored bits (every bit pattern, NaNs and
// subnormals included, since host and GPU must agree on all of them), and a byte comparison that
// names the first element that differs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "decode/dtypes.h"
#include "pipeline/output/batch_decode.h"
#include "tests/testing/test_rng.h"

namespace rf::testing {

template <typename... Entries>
std::vector<DType> DTypesOf(decode::DTypeList<Entries...> /*list*/) {
  return {Entries::kDType...};
}

// Every stored sample dtype the decode reads: the integers, then the floats.
inline std::vector<DType> StoredDTypes() {
  std::vector<DType> d = DTypesOf(decode::IntegerDTypes{});
  for (DType f : DTypesOf(decode::FloatDTypes{})) d.push_back(f);
  return d;
}

inline std::string Describe(const DecodeSpec& s) {
  return std::string(DTypeName(s.stored)) + " -> " + std::string(DTypeName(s.output)) +
         (s.layout == SampleLayout::kNCHW ? " NCHW" : " NHWC") +
         (s.normalize ? " normalized" : "") + ", " + std::to_string(s.channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width);
}

// Per-channel statistics with fractions, negative means and a zero stddev (channel 1, taken as 1).
inline void SetStatistics(DecodeSpec* s) {
  s->mean.clear();
  s->stddev.clear();
  for (uint32_t c = 0; c < s->channels; ++c) {
    s->mean.push_back(c % 2 == 0 ? 17.375f * (c + 1) : -3.1f * c);
    s->stddev.push_back(c == 1 ? 0.f : 0.37f + 11.3f * c);
  }
}

// Every spec Validate accepts for samples of channels x height x width: each stored dtype into
// float32, bfloat16, float16 and itself, in both layouts, with and without normalize.
inline std::vector<DecodeSpec> EverySpec(uint32_t channels, uint32_t height, uint32_t width) {
  std::vector<DecodeSpec> specs;
  for (DType stored : StoredDTypes()) {
    std::vector<DType> outputs = DTypesOf(decode::FloatDTypes{});
    if (!decode::VisitDType(decode::FloatDTypes{}, stored, [](auto) {})) outputs.push_back(stored);
    for (DType output : outputs) {
      for (SampleLayout layout : {SampleLayout::kNCHW, SampleLayout::kNHWC}) {
        for (bool normalize : {false, true}) {
          DecodeSpec s;
          s.stored = stored;
          s.output = output;
          s.layout = layout;
          s.normalize = normalize;
          s.channels = channels;
          s.height = height;
          s.width = width;
          SetStatistics(&s);
          if (s.Validate().ok()) specs.push_back(s);
        }
      }
    }
  }
  return specs;
}

// `bytes` random bytes.
inline std::vector<uint8_t> RandomBytes(TestRng& rng, size_t bytes) {
  std::vector<uint8_t> b(bytes);
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t v = rng.Next();
    std::memcpy(b.data() + i, &v, std::min<size_t>(8, bytes - i));
  }
  return b;
}

// Success where a and b hold the same bytes; otherwise the first element (of `element_bytes`)
// that differs, both ways in hex.
inline ::testing::AssertionResult SameBytes(const std::vector<uint8_t>& a,
                                            const std::vector<uint8_t>& b, size_t element_bytes) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure() << a.size() << " bytes against " << b.size();
  }
  for (size_t i = 0; i < a.size(); i += element_bytes) {
    if (std::memcmp(a.data() + i, b.data() + i, element_bytes) != 0) {
      auto hex = [&](const std::vector<uint8_t>& v) {
        std::string s = "0x";
        for (size_t k = element_bytes; k-- > 0;) {  // little-endian: most significant first
          static const char kDigits[] = "0123456789abcdef";
          s += kDigits[v[i + k] >> 4];
          s += kDigits[v[i + k] & 15];
        }
        return s;
      };
      return ::testing::AssertionFailure()
             << "element " << i / element_bytes << " differs: " << hex(a) << " against " << hex(b);
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rf::testing
