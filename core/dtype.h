// Element types of stored samples and labels, and their float conversions on the host (the
// converter's, the writer's; decode/element.h converts with them on the host and spells the same
// conversions out on the GPU).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rf {

// Values are part of the on-disk format: never renumber.
enum class DType : uint32_t {
  kUInt8 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kFloat32 = 4,
  kUInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
};

size_t DTypeSize(DType t);
std::string_view DTypeName(DType t);
std::optional<DType> ParseDType(std::string_view name);  // "uint8", "float16", "bf16", ...
// Every spelling ParseDType takes, each with its dtype: each dtype's own name (DTypeName) first,
// in the enum's order, then the other spellings ("u8", "bf16", "half", ...).
struct DTypeSpelling {
  std::string_view name;
  DType dtype;
};
std::span<const DTypeSpelling> DTypeSpellings();
// constexpr, so that decode/dtypes.h's compile-time lists of dtypes can ask them too.
constexpr bool IsIntegerDType(DType t) {  // uint8, uint16, int32, int64
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kInt32 || t == DType::kInt64;
}
// The sample dtypes whose values are intensities: uint8, float16, bfloat16, float32. These are
// what the model reads, what --scale applies to and what the writer computes per-channel mean and
// std of. The other sample dtypes (uint16, int32, int64) hold ids, such as a language model's
// token ids: stored exactly as given, never scaled or normalized.
constexpr bool IsImageDType(DType t) {
  return t == DType::kUInt8 || t == DType::kFloat16 || t == DType::kBFloat16 ||
         t == DType::kFloat32;
}
// uint8, uint16, int32, int64, float16, bfloat16, float32.
constexpr bool IsSampleDType(DType t) { return IsIntegerDType(t) || IsImageDType(t); }
// uint8, uint16, int32 (int64 labels would need the model's label decoders to read them; every
// label is below num_classes, a uint32, anyway).
constexpr bool IsLabelDType(DType t) {
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kInt32;
}

inline float BFloat16ToFloat(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }
// Round to nearest even; NaN stays NaN.
inline uint16_t FloatToBFloat16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);  // round to nearest even, saturating to inf

// Reads element i of an array of integer dtype t (a label dtype, or int64).
int64_t LoadLabel(DType t, const void* base, size_t i);
// Reads element i of an array of type t as float.
float LoadAsFloat(DType t, const void* base, size_t i);
// Converts n floats to type t. Integer targets are rounded to nearest and clamped to their range.
void StoreFromFloat(DType t, const float* in, void* out, size_t n);

}  // namespace rf
