// Element types of converter inputs (wider than the stored dtypes of core/dtype.h: an .npy or IDX
// file may hold int16, uint32 or float64), and the rules that turn them into stored values.
//
// Intensities (stored as uint8, float16, bfloat16, float32):
//
//   stored = input * scale, where scale defaults to 255 when a float input is stored as uint8
//   (inputs in [0, 1] become 0..255) and to 1 otherwise (uint8 stored as float keeps 0..255).
//   Storing as uint8 rounds to nearest (ties to even) and clamps to 0..255; float16 and
//   bfloat16 round to nearest even.
//
// Ids (stored as uint16, int32, int64, such as token ids): integer input only, copied exactly,
// never scaled; a value the stored type cannot hold is an error (ConvertIntegers), not clamped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace rf::convert {

enum class Elem { kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64, kF16, kBF16, kF32, kF64 };

size_t ElemSize(Elem e);
std::string_view ElemName(Elem e);  // "uint8", "int16", "float64", ...
bool ElemIsFloat(Elem e);
bool ElemIsInteger(Elem e);
// The stored dtype with the same bytes, if there is one.
std::optional<DType> ElemAsDType(Elem e);
Elem ElemOf(DType t);

// The stored dtype an input of this type gets when --dtype is not given: itself where it is a
// sample dtype (uint8, uint16, int32, int64, float16, bfloat16, float32); int64 for uint32 and
// uint64, which float32 would not hold exactly (token ids); float32 for the rest (int8, int16,
// float64).
DType DefaultSampleDType(Elem e);
// The scale the rule above uses when --scale is not given.
float DefaultScale(Elem in, DType out);

// Element i of an integer array as int64 (uint64 values above INT64_MAX saturate).
int64_t LoadInteger(Elem e, const void* base, size_t i);

// Stores v as element i of an integer array (truncating to the type's width).
void StoreInteger(Elem e, int64_t v, void* base, size_t i);

// Converts n input elements to the stored dtype `out` by the intensity rule above. src and dst
// must not overlap.
void ConvertElems(Elem in, const void* src, DType out, float scale, void* dst, size_t n);

// Converts n elements of the integer type `in` to the integer dtype `out` exactly. Returns the
// index of the first element `out` cannot hold (dst is written below it only), or n when every
// one fits. src and dst must not overlap.
size_t ConvertIntegers(Elem in, const void* src, DType out, void* dst, size_t n);
// The index of the first of n elements that is NaN or infinite, or n when all are finite (and
// for integer types).
size_t FirstNonFinite(Elem e, const void* src, size_t n);
// Element i of an integer array as decimal text (uint64 values above INT64_MAX too).
std::string IntegerText(Elem e, const void* base, size_t i);

}  // namespace rf::convert
