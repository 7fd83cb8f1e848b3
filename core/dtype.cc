#include "core/dtype.h"

#include <algorithm>
#include <cmath>

namespace rf {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kUInt8:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kUInt16:
      return 2;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
  }
  return 0;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kUInt8:
      return "uint8";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat32:
      return "float32";
    case DType::kUInt16:
      return "uint16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "unknown";
}

namespace {

constexpr DTypeSpelling kSpellings[] = {
    {"uint8", DType::kUInt8},     {"float16", DType::kFloat16}, {"bfloat16", DType::kBFloat16},
    {"float32", DType::kFloat32}, {"uint16", DType::kUInt16},   {"int32", DType::kInt32},
    {"int64", DType::kInt64},     {"u8", DType::kUInt8},        {"fp16", DType::kFloat16},
    {"f16", DType::kFloat16},     {"half", DType::kFloat16},    {"bf16", DType::kBFloat16},
    {"fp32", DType::kFloat32},    {"f32", DType::kFloat32},     {"float", DType::kFloat32},
    {"u16", DType::kUInt16},      {"i32", DType::kInt32},       {"i64", DType::kInt64},
};

}  // namespace

std::span<const DTypeSpelling> DTypeSpellings() { return kSpellings; }

std::optional<DType> ParseDType(std::string_view n) {
  for (const DTypeSpelling& s : kSpellings) {
    if (s.name == n) return s.dtype;
  }
  return std::nullopt;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      u = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(u);
}

uint16_t FloatToHalf(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // overflows to inf after rounding
  if (abs < 0x33000001u) return sign;             // rounds to zero
  int exp = static_cast<int>(abs >> 23) - 127 + 15;
  uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  int shift = exp > 0 ? 13 : 14 - exp;  // subnormals shift further
  uint32_t half_mant = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
  if (exp > 0)
    return sign | static_cast<uint16_t>((static_cast<uint32_t>(exp) << 10) + half_mant - 0x400u);
  return sign | static_cast<uint16_t>(half_mant);
}

int64_t LoadLabel(DType t, const void* base, size_t i) {
  const char* p = static_cast<const char*>(base);
  switch (t) {
    case DType::kUInt8:
      return static_cast<uint8_t>(p[i]);
    case DType::kUInt16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case DType::kInt64: {
      int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    default: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
  }
}

float LoadAsFloat(DType t, const void* base, size_t i) {
  switch (t) {
    case DType::kUInt8:
      return static_cast<const uint8_t*>(base)[i];
    case DType::kUInt16: {
      uint16_t v;
      std::memcpy(&v, static_cast<const char*>(base) + 2 * i, 2);
      return v;
    }
    case DType::kInt32: {
      int32_t v;
      std::memcpy(&v, static_cast<const char*>(base) + 4 * i, 4);
      return static_cast<float>(v);
    }
    case DType::kInt64: {
      int64_t v;
      std::memcpy(&v, static_cast<const char*>(base) + 8 * i, 8);
      return static_cast<float>(v);
    }
    case DType::kFloat16:
    case DType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, static_cast<const char*>(base) + 2 * i, 2);
      return t == DType::kFloat16 ? HalfToFloat(v) : BFloat16ToFloat(v);
    }
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, static_cast<const char*>(base) + 4 * i, 4);
      return v;
    }
  }
  return 0.f;
}

void StoreFromFloat(DType t, const float* in, void* out, size_t n) {
  switch (t) {
    case DType::kUInt8: {
      auto* o = static_cast<uint8_t*>(out);
      for (size_t i = 0; i < n; ++i)
        o[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(in[i]), 0.f, 255.f));
      return;
    }
    case DType::kUInt16: {
      auto* o = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < n; ++i)
        o[i] = static_cast<uint16_t>(std::clamp(std::nearbyint(in[i]), 0.f, 65535.f));
      return;
    }
    case DType::kInt32: {
      auto* o = static_cast<int32_t*>(out);
      for (size_t i = 0; i < n; ++i)
        o[i] =
            static_cast<int32_t>(std::clamp<double>(std::nearbyint(in[i]), INT32_MIN, INT32_MAX));
      return;
    }
    case DType::kInt64: {
      // 2^63 is exact as a float; anything at or beyond it (and NaN) has no int64 to round to.
      auto* o = static_cast<int64_t*>(out);
      for (size_t i = 0; i < n; ++i) {
        const float r = std::nearbyint(in[i]);
        o[i] = std::isnan(r)  ? 0
               : r >= 0x1p63f ? INT64_MAX
               : r < -0x1p63f ? INT64_MIN
                              : static_cast<int64_t>(r);
      }
      return;
    }
    case DType::kFloat16: {
      auto* o = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < n; ++i) o[i] = FloatToHalf(in[i]);
      return;
    }
    case DType::kBFloat16: {
      auto* o = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < n; ++i) o[i] = FloatToBFloat16(in[i]);
      return;
    }
    case DType::kFloat32:
      std::memcpy(out, in, n * sizeof(float));
      return;
  }
}

}  // namespace rf
