// Element types of stored samples and labels, and the float conversions the converter and the CPU
// paths need (the GPU decodes with its own kernels).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
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
};

size_t DTypeSize(DType t);
std::string_view DTypeName(DType t);
std::optional<DType> ParseDType(std::string_view name);  // "uint8", "float16", "bf16", ...
bool IsSampleDType(DType t);                             // uint8, float16, bfloat16, float32
bool IsLabelDType(DType t);                              // uint8, uint16, int32

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

// Reads label i of an array of label dtype t (uint8, uint16 or int32).
int64_t LoadLabel(DType t, const void* base, size_t i);
// Reads element i of an array of type t as float.
float LoadAsFloat(DType t, const void* base, size_t i);
// Converts n floats to type t. Integer targets are rounded to nearest and clamped to their range.
void StoreFromFloat(DType t, const float* in, void* out, size_t n);

}  // namespace rf
