#include "tools/convert/elem_type.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace rf::convert {
namespace {

template <typename T>
T Load(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

float LoadAsFloat(Elem e, const void* base, size_t i) {
  switch (e) {
    case Elem::kU8:
      return Load<uint8_t>(base, i);
    case Elem::kI8:
      return Load<int8_t>(base, i);
    case Elem::kU16:
      return Load<uint16_t>(base, i);
    case Elem::kI16:
      return Load<int16_t>(base, i);
    case Elem::kU32:
      return static_cast<float>(Load<uint32_t>(base, i));
    case Elem::kI32:
      return static_cast<float>(Load<int32_t>(base, i));
    case Elem::kU64:
      return static_cast<float>(Load<uint64_t>(base, i));
    case Elem::kI64:
      return static_cast<float>(Load<int64_t>(base, i));
    case Elem::kF16:
      return HalfToFloat(Load<uint16_t>(base, i));
    case Elem::kBF16:
      return BFloat16ToFloat(Load<uint16_t>(base, i));
    case Elem::kF32:
      return Load<float>(base, i);
    case Elem::kF64:
      return static_cast<float>(Load<double>(base, i));
  }
  return 0.f;
}

}  // namespace

size_t ElemSize(Elem e) {
  switch (e) {
    case Elem::kU8:
    case Elem::kI8:
      return 1;
    case Elem::kU16:
    case Elem::kI16:
    case Elem::kF16:
    case Elem::kBF16:
      return 2;
    case Elem::kU32:
    case Elem::kI32:
    case Elem::kF32:
      return 4;
    case Elem::kU64:
    case Elem::kI64:
    case Elem::kF64:
      return 8;
  }
  return 0;
}

std::string_view ElemName(Elem e) {
  switch (e) {
    case Elem::kU8:
      return "uint8";
    case Elem::kI8:
      return "int8";
    case Elem::kU16:
      return "uint16";
    case Elem::kI16:
      return "int16";
    case Elem::kU32:
      return "uint32";
    case Elem::kI32:
      return "int32";
    case Elem::kU64:
      return "uint64";
    case Elem::kI64:
      return "int64";
    case Elem::kF16:
      return "float16";
    case Elem::kBF16:
      return "bfloat16";
    case Elem::kF32:
      return "float32";
    case Elem::kF64:
      return "float64";
  }
  return "unknown";
}

bool ElemIsFloat(Elem e) {
  return e == Elem::kF16 || e == Elem::kBF16 || e == Elem::kF32 || e == Elem::kF64;
}
bool ElemIsInteger(Elem e) { return !ElemIsFloat(e); }

std::optional<DType> ElemAsDType(Elem e) {
  switch (e) {
    case Elem::kU8:
      return DType::kUInt8;
    case Elem::kU16:
      return DType::kUInt16;
    case Elem::kI32:
      return DType::kInt32;
    case Elem::kI64:
      return DType::kInt64;
    case Elem::kF16:
      return DType::kFloat16;
    case Elem::kBF16:
      return DType::kBFloat16;
    case Elem::kF32:
      return DType::kFloat32;
    default:
      return std::nullopt;
  }
}

Elem ElemOf(DType t) {
  switch (t) {
    case DType::kUInt8:
      return Elem::kU8;
    case DType::kFloat16:
      return Elem::kF16;
    case DType::kBFloat16:
      return Elem::kBF16;
    case DType::kFloat32:
      return Elem::kF32;
    case DType::kUInt16:
      return Elem::kU16;
    case DType::kInt32:
      return Elem::kI32;
    case DType::kInt64:
      return Elem::kI64;
  }
  return Elem::kU8;
}

DType DefaultSampleDType(Elem e) {
  std::optional<DType> t = ElemAsDType(e);
  if (t && IsSampleDType(*t)) return *t;
  if (e == Elem::kU32 || e == Elem::kU64) return DType::kInt64;
  return DType::kFloat32;
}

float DefaultScale(Elem in, DType out) {
  return ElemIsFloat(in) && out == DType::kUInt8 ? 255.f : 1.f;
}

int64_t LoadInteger(Elem e, const void* base, size_t i) {
  switch (e) {
    case Elem::kU8:
      return Load<uint8_t>(base, i);
    case Elem::kI8:
      return Load<int8_t>(base, i);
    case Elem::kU16:
      return Load<uint16_t>(base, i);
    case Elem::kI16:
      return Load<int16_t>(base, i);
    case Elem::kU32:
      return Load<uint32_t>(base, i);
    case Elem::kI32:
      return Load<int32_t>(base, i);
    case Elem::kU64:
      return static_cast<int64_t>(
          std::min<uint64_t>(Load<uint64_t>(base, i), std::numeric_limits<int64_t>::max()));
    case Elem::kI64:
      return Load<int64_t>(base, i);
    default:
      return static_cast<int64_t>(LoadAsFloat(e, base, i));
  }
}

void StoreInteger(Elem e, int64_t v, void* base, size_t i) {
  char* p = static_cast<char*>(base) + i * ElemSize(e);
  switch (e) {
    case Elem::kU8:
    case Elem::kI8: {
      const auto b = static_cast<uint8_t>(v);
      std::memcpy(p, &b, 1);
      return;
    }
    case Elem::kU16:
    case Elem::kI16: {
      const auto h = static_cast<uint16_t>(v);
      std::memcpy(p, &h, 2);
      return;
    }
    case Elem::kU32:
    case Elem::kI32: {
      const auto w = static_cast<uint32_t>(v);
      std::memcpy(p, &w, 4);
      return;
    }
    case Elem::kU64:
    case Elem::kI64:
      std::memcpy(p, &v, 8);
      return;
    default: {
      const float f = static_cast<float>(v);
      ConvertElems(Elem::kF32, &f, *ElemAsDType(e), 1.f, p, 1);
      return;
    }
  }
}

void ConvertElems(Elem in, const void* src, DType out, float scale, void* dst, size_t n) {
  if (ElemAsDType(in) == out && scale == 1.f) {
    std::memcpy(dst, src, n * DTypeSize(out));
    return;
  }
  if (in == Elem::kU8 && out == DType::kFloat32) {  // the common widening, kept simple to vectorize
    const auto* s = static_cast<const uint8_t*>(src);
    auto* d = static_cast<float*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]) * scale;
    return;
  }
  if (in == Elem::kF32 && out == DType::kUInt8) {  // float images stored as uint8
    // StoreFromFloat's uint8 rule (round to nearest even, clamp to 0..255), in a form that
    // vectorizes: clamping first gives the same byte (a value rounds into the range it is clamped
    // to), and adding 2^23 to a value in [0, 255] leaves no fraction bits, so the addition rounds
    // it to an integer exactly as nearbyint does in the same rounding mode.
    const auto* s = static_cast<const float*>(src);
    auto* d = static_cast<uint8_t*>(dst);
    for (size_t i = 0; i < n; ++i) {
      float v = s[i] * scale;
      v = v > 0.f ? v : 0.f;  // NaN too (the converter refuses it before)
      v = v < 255.f ? v : 255.f;
      d[i] = static_cast<uint8_t>((v + 0x1p23f) - 0x1p23f);
    }
    return;
  }
  // Everything else goes through float in batches small enough to stay in L1.
  constexpr size_t kBatch = 1024;
  float tmp[kBatch];
  const size_t out_size = DTypeSize(out);
  for (size_t base = 0; base < n; base += kBatch) {
    const size_t m = std::min(kBatch, n - base);
    for (size_t i = 0; i < m; ++i) tmp[i] = LoadAsFloat(in, src, base + i) * scale;
    StoreFromFloat(out, tmp, static_cast<char*>(dst) + base * out_size, m);
  }
}

size_t FirstNonFinite(Elem e, const void* src, size_t n) {
  if (!ElemIsFloat(e)) return n;
  if (e == Elem::kF32) {
    // A float is NaN or infinite when its exponent bits are all ones: tested a batch at a time
    // without branches (it vectorizes), and only a batch that holds one is searched.
    constexpr size_t kBatch = 1024;
    for (size_t base = 0; base < n; base += kBatch) {
      const size_t m = std::min(kBatch, n - base);
      uint32_t any = 0;
      for (size_t i = 0; i < m; ++i) {
        const uint32_t bits = Load<uint32_t>(src, base + i);
        any |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
      }
      if (any == 0) continue;
      for (size_t i = 0; i < m; ++i) {
        if (!std::isfinite(Load<float>(src, base + i))) return base + i;
      }
    }
    return n;
  }
  for (size_t i = 0; i < n; ++i) {
    // float64 is checked as itself: a finite value beyond float's range is the output check's.
    const double v = e == Elem::kF64 ? Load<double>(src, i) : LoadAsFloat(e, src, i);
    if (!std::isfinite(v)) return i;
  }
  return n;
}

size_t ConvertIntegers(Elem in, const void* src, DType out, void* dst, size_t n) {
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  switch (out) {
    case DType::kUInt8:
      lo = 0, hi = 255;
      break;
    case DType::kUInt16:
      lo = 0, hi = 65535;
      break;
    case DType::kInt32:
      lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
      break;
    default:
      break;
  }
  const Elem to = ElemOf(out);
  for (size_t i = 0; i < n; ++i) {
    // LoadInteger saturates uint64 at INT64_MAX, which would pass for a fitting value.
    if (in == Elem::kU64 && Load<uint64_t>(src, i) > uint64_t{INT64_MAX}) return i;
    const int64_t v = LoadInteger(in, src, i);
    if (v < lo || v > hi) return i;
    StoreInteger(to, v, dst, i);
  }
  return n;
}

std::string IntegerText(Elem e, const void* base, size_t i) {
  if (e == Elem::kU64) return std::to_string(Load<uint64_t>(base, i));
  return std::to_string(LoadInteger(e, base, i));
}

}  // namespace rf::convert
